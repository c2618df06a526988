"""PyTorch datasets over tilewise slides (needs ``torch``; not a dependency of tilewise itself).

- :class:`PatchDataset`, map-style: one patch per item from any number of slides, opened lazily in each
  process that reads (picklable; safe with ``fork`` and ``spawn`` workers). Batch it with a ``DataLoader``.
- :class:`BatchDataset`, iterable: whole batches from tilewise's batch loader (``Slide.read_regions``), its
  locations sharded over DDP ranks (as ``DistributedSampler`` shards them) and then over the ``DataLoader``'s
  workers; use ``DataLoader(dataset, batch_size=None)``. Batches
  become tensors without a copy (``torch.from_numpy``; ``torch.from_dlpack`` for ``device="cuda"``).

Images are uint8, (C, H, W) by default (``channels_first=False`` keeps tilewise's (H, W, C)); the permutation
is a view, not a copy.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from . import _gpu
from .slide import Slide

__all__ = ["PatchDataset", "BatchDataset"]


def _reader_threads(workers: int) -> int:
    """Reading threads for one of ``workers`` DataLoader worker processes: the CPUs shared among them."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def _as_tensor(pixels, channels_first: bool) -> torch.Tensor:
    """A tensor over the pixels' memory (numpy: from_numpy; device arrays: DLPack), channels first as a view."""
    tensor = torch.from_dlpack(pixels) if isinstance(pixels, _gpu.DeviceArray) else torch.from_numpy(pixels)
    if channels_first:
        tensor = tensor.movedim(-1, -3)
    return tensor


class _SlidesPerProcess:
    """Slides opened on first use in the process that reads them, never pickled: a dataset sent to a DataLoader
    worker (forked or spawned) reopens its slides there."""

    def __init__(self):
        self._pid, self._open = os.getpid(), {}

    def get(self, path: str) -> Slide:
        if self._pid != os.getpid():  # inherited through fork: the parent's handles stay the parent's
            self._pid, self._open = os.getpid(), {}
        slide = self._open.get(path)
        if slide is None:
            slide = self._open[path] = Slide(path)
        return slide

    def __getstate__(self):
        return {"opened": "in each process"}  # truthy: pickle calls __setstate__ only for a true state

    def __setstate__(self, _state):
        self.__init__()


class PatchDataset(Dataset):
    """Patches of ``size`` (width, height) at ``level``, one per sample.

    ``samples``: a sequence of ``(path, x, y)`` or ``(path, x, y, target)``, (x, y) in level-0 pixels as
    everywhere in tilewise. An item is the image tensor, or ``(image, target)`` when samples carry targets;
    ``transform`` (if given) is applied to the image tensor.
    """

    def __init__(self, samples: Sequence[tuple], size: Sequence[int], level: int = 0, *,
                 transform: Optional[Callable] = None, channels_first: bool = True,
                 fill: Optional[Sequence[int]] = None):
        rows = [tuple(s) for s in samples]
        if any(len(r) not in (3, 4) for r in rows):
            raise ValueError("each sample is (path, x, y) or (path, x, y, target)")
        if rows and len({len(r) for r in rows}) != 1:
            raise ValueError("either every sample has a target or none has")
        self._paths: List[str] = [os.fspath(r[0]) for r in rows]
        self._xy = np.array([(int(r[1]), int(r[2])) for r in rows], dtype=np.int64).reshape(-1, 2)
        self._targets = [r[3] for r in rows] if rows and len(rows[0]) == 4 else None
        self.size = (int(size[0]), int(size[1]))
        self.level, self.transform, self.channels_first, self.fill = int(level), transform, channels_first, fill
        self._slides = _SlidesPerProcess()

    def __len__(self) -> int:
        return len(self._paths)

    def __getitem__(self, index: int):
        x, y = (int(v) for v in self._xy[index])
        pixels = self._slides.get(self._paths[index]).read_region((x, y), self.size, level=self.level, fill=self.fill, c="rgb")
        return self._item(index, pixels)

    def __getitems__(self, indices: Sequence[int]) -> list:
        """A whole DataLoader batch at once (torch >= 2.1 calls this when it exists): each slide's patches are
        read as one batch by the batch loader, with the CPUs shared among the DataLoader's workers."""
        indices = [int(i) for i in indices]
        info = get_worker_info()
        threads = _reader_threads(info.num_workers) if info else 0
        by_path = {}
        for position, index in enumerate(indices):
            by_path.setdefault(self._paths[index], []).append(position)
        items = [None] * len(indices)
        for path, positions in by_path.items():
            chosen = [indices[p] for p in positions]
            batches = self._slides.get(path).read_regions(self._xy[chosen], self.size, level=self.level,
                                                          batch_size=len(chosen), num_workers=threads, fill=self.fill)
            with batches:
                pixels = next(batches)
            for k, p in enumerate(positions):
                items[p] = self._item(chosen[k], pixels[k])
        return items

    def _item(self, index: int, pixels: np.ndarray):
        image = _as_tensor(pixels, self.channels_first)
        if self.transform is not None:
            image = self.transform(image)
        return image if self._targets is None else (image, self._targets[index])


class BatchDataset(IterableDataset):
    """Batches of patches of one slide from tilewise's batch loader, for ``DataLoader(ds, batch_size=None)``.

    The locations ((N, 2) level-0 (x, y)) are cut into batches in order, and the batches are dealt to the
    DataLoader's workers in turn (batch i to worker i mod W); DataLoader takes one batch from each worker in
    turn, so the batches arrive in the locations' order, with or without workers. Each worker runs its own
    loader with ``threads`` reading threads (default: the CPUs divided among the workers). With ``shuffle``,
    the order is a permutation drawn from ``seed`` and the epoch (``set_epoch``), the same in every worker,
    before the batches are cut; ``drop_last`` drops the one short batch. A batch is a uint8 tensor (B, C, H,
    W) (or (B, H, W, C)); ``return_indices`` adds the locations' indices, ``targets`` adds their targets.
    ``device="cuda"`` gives CUDA tensors (read in the main process: DataLoader workers cannot share a GPU
    context; keep ``num_workers=0`` then); under DDP, "cuda" is the rank's current device
    (``torch.cuda.set_device``).

    Distributed training: each rank reads its share of the locations, as ``DistributedSampler`` deals them
    (after the shuffle, location k of the order goes to rank k mod ``world_size``; the order is padded with
    its beginning to a multiple of ``world_size``, or with ``drop_last`` cut to one, so every rank takes the
    same number of batches). ``rank`` and ``world_size`` default to ``torch.distributed``'s when a process
    group is initialised when the dataset is iterated, else to one process.
    """

    def __init__(self, path, locations, size: Sequence[int], level: int = 0, *, batch_size: int = 64,
                 threads: int = 0, prefetch: int = 2, shuffle: bool = False, seed: int = 0, drop_last: bool = False,
                 device: str = "cpu", channels_first: bool = True, targets: Optional[Sequence] = None,
                 return_indices: bool = False, fill: Optional[Sequence[int]] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None):
        self.path = os.fspath(path)
        self.locations = np.asarray(locations, dtype=np.int64).reshape(-1, 2)
        if targets is not None and len(targets) != len(self.locations):
            raise ValueError(f"{len(targets)} targets for {len(self.locations)} locations")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.size, self.level, self.batch_size = (int(size[0]), int(size[1])), int(level), int(batch_size)
        self.threads, self.prefetch, self.shuffle, self.seed = int(threads), int(prefetch), bool(shuffle), int(seed)
        self.drop_last, self.device, self.channels_first = bool(drop_last), str(device), bool(channels_first)
        self.targets, self.return_indices, self.fill = targets, bool(return_indices), fill
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither (torch.distributed's then)")
        if world_size is not None and not 0 <= int(rank) < int(world_size):
            raise ValueError(f"rank {rank} is not in [0, {world_size})")
        self.rank, self.world_size = (None, None) if rank is None else (int(rank), int(world_size))
        self.epoch = 0
        self._slides = _SlidesPerProcess()

    def _replica(self) -> Tuple[int, int]:
        """(rank, world size): the dataset's own, else the initialised process group's, else (0, 1)."""
        if self.world_size is not None:
            return self.rank, self.world_size
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def set_epoch(self, epoch: int) -> None:
        """Draws the next shuffle (as DistributedSampler.set_epoch does); call before each epoch's iteration."""
        self.epoch = int(epoch)

    def _shards(self, workers: int) -> List[np.ndarray]:
        """Each worker's location indices within this rank's share: its batches (i, i + workers, ...) one
        after the other, all whole but the last batch of all, so that its loader cuts the same batches again."""
        order = np.arange(len(self.locations))
        if self.shuffle:
            order = np.random.default_rng((self.seed, self.epoch)).permutation(len(self.locations))
        rank, replicas = self._replica()
        if replicas > 1:
            if self.drop_last:
                order = order[:len(order) // replicas * replicas]
            elif len(order) % replicas:
                pad = replicas - len(order) % replicas
                order = np.concatenate([order, np.resize(order, pad)]) if len(order) else order
            order = order[rank::replicas]
        batches = [order[at:at + self.batch_size] for at in range(0, len(order), self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        return [np.concatenate(batches[w::workers]) if batches[w::workers] else np.empty(0, np.int64)
                for w in range(workers)]

    def __len__(self) -> int:
        """Batches per epoch, over every shard (DataLoader's num_workers unknown here: counted for one shard
        when no worker split is in effect)."""
        info = get_worker_info()
        shards = self._shards(info.num_workers if info else 1)
        per = (lambda n: n // self.batch_size) if self.drop_last else (lambda n: -(-n // self.batch_size))
        return sum(per(len(s)) for s in shards)

    def __iter__(self) -> Iterator:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        shard = self._shards(workers)[worker]
        if len(shard) == 0:
            return
        threads = self.threads or _reader_threads(workers)
        slide = self._slides.get(self.path)
        batches = slide.read_regions(self.locations[shard], self.size, level=self.level, batch_size=self.batch_size,
                                     num_workers=threads, prefetch=self.prefetch, drop_last=self.drop_last,
                                     device=self.device, fill=self.fill)
        with batches:
            for pixels in batches:
                yield self._item(pixels, shard[np.asarray(batches.last_indices, dtype=np.int64)])

    def _item(self, pixels, indices: np.ndarray):
        batch = _as_tensor(pixels, self.channels_first)
        out: Tuple = (batch,)
        if self.return_indices:
            out += (torch.from_numpy(indices),)
        if self.targets is not None:
            picked = [self.targets[i] for i in indices]
            out += (torch.as_tensor(picked) if all(isinstance(t, (int, float, bool)) for t in picked) else picked,)
        return out[0] if len(out) == 1 else out
