"""tilewise.torch with the real torch.utils.data.DataLoader: in-process and with worker processes (fork and
spawn, persistent workers), every patch equal to a direct read, every location exactly once."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (requirements-torch.txt) is not installed")

import slidegen  # noqa: E402
import tilewise  # noqa: E402
from tilewise.torch import BatchDataset, PatchDataset  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

SIZE = (48, 40)


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    d = tmp_path_factory.mktemp("torch")
    paths = []
    for i, (w, h) in enumerate(((700, 500), (520, 610))):
        p = d / f"slide{i}.tif"
        slidegen.write_vips_pyramid(p, slidegen.tissue_image(w, h, seed=40 + i), tile=128)
        paths.append(str(p))
    return paths


def locations(n, seed, w=700, h=500):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(-20, w - 20, n), rng.integers(-20, h - 20, n)], axis=1)


def direct(path, xy, level=0):
    return tilewise.open(path).read_region(tuple(int(v) for v in xy), SIZE, level=level)


@pytest.mark.parametrize("workers,context", [(0, None), (2, "fork"), (2, "spawn")])
def test_patch_dataset_in_a_dataloader(slides, workers, context):
    samples = [(slides[i % 2], int(x), int(y), i) for i, (x, y) in enumerate(locations(24, 1, 500, 480))]
    dataset = PatchDataset(samples, SIZE, level=0)
    loader = DataLoader(dataset, batch_size=5, num_workers=workers, multiprocessing_context=context,
                        persistent_workers=workers > 0)
    for _epoch in range(2):  # persistent workers serve the second epoch with the slides they opened
        seen = []
        for images, targets in loader:
            assert images.dtype == torch.uint8 and images.shape[1:] == (3, SIZE[1], SIZE[0])
            for image, target in zip(images, targets.tolist()):
                path, x, y, _ = samples[target]
                assert np.array_equal(image.permute(1, 2, 0).numpy(), direct(path, (x, y)))
                seen.append(target)
        assert seen == list(range(len(samples)))


def test_patch_dataset_reads_a_batch_at_once_in_order(slides):
    """__getitems__ (what the DataLoader calls for a batch) reads each slide's patches as one loader batch and
    returns them in the asked order, equal to __getitem__ one by one."""
    samples = [(slides[i % 3 % 2], int(x), int(y), i) for i, (x, y) in enumerate(locations(11, 6, 500, 480))]
    dataset = PatchDataset(samples, SIZE, level=1)
    order = [7, 0, 3, 10, 3, 5]
    batch = dataset.__getitems__(order)
    assert [target for _, target in batch] == order
    for (image, _), index in zip(batch, order):
        single, _ = dataset[index]
        assert np.array_equal(image.numpy(), single.numpy())


def test_patch_dataset_options_and_pickling(slides):
    dataset = PatchDataset([(slides[0], 10, 20)], SIZE, level=1, channels_first=False,
                           transform=lambda t: t.float() / 255)
    image = dataset[0]
    assert image.dtype == torch.float32 and image.shape == (SIZE[1], SIZE[0], 3)
    assert np.allclose(image.numpy() * 255, direct(slides[0], (10, 20), level=1), atol=1e-3)
    plain = PatchDataset([(slides[1], 5, 5, "a")], SIZE)
    plain[0]  # opens the slide in this process
    clone = pickle.loads(pickle.dumps(plain))  # open slides are not pickled; the clone reopens its own
    image, target = clone[0]
    assert target == "a" and np.array_equal(image.permute(1, 2, 0).numpy(), direct(slides[1], (5, 5)))
    with pytest.raises(ValueError, match="target"):
        PatchDataset([(slides[0], 1, 2), (slides[0], 1, 2, 0)], SIZE)


@pytest.mark.parametrize("workers,context", [(0, None), (2, "fork"), (2, "spawn")])
def test_batch_dataset_shards_every_location_once(slides, workers, context):
    locs = locations(150, 2)
    dataset = BatchDataset(slides[0], locs, SIZE, batch_size=16, threads=2, return_indices=True,
                           targets=list(range(1000, 1150)))
    loader = DataLoader(dataset, batch_size=None, num_workers=workers, multiprocessing_context=context,
                        persistent_workers=workers > 0)
    for _epoch in range(2):
        seen = []
        for batch, indices, targets in loader:
            assert batch.shape[1:] == (3, SIZE[1], SIZE[0]) and len(batch) <= 16
            assert targets.tolist() == [1000 + i for i in indices.tolist()]
            for image, i in zip(batch, indices.tolist()):
                assert np.array_equal(image.permute(1, 2, 0).numpy(), direct(slides[0], locs[i]))
            seen += indices.tolist()
        # The locations' order, with or without workers (batches are dealt to the workers in turn).
        assert seen == list(range(150)) and len(dataset) == 10


def test_batch_dataset_shuffle_epochs_and_drop_last(slides):
    locs = locations(100, 3)

    def order(epoch, workers=2, **kw):
        ds = BatchDataset(slides[0], locs, SIZE, batch_size=8, shuffle=True, seed=7, return_indices=True, **kw)
        ds.set_epoch(epoch)
        loader = DataLoader(ds, batch_size=None, num_workers=workers, multiprocessing_context="fork" if workers else None)
        return [i for _, indices in loader for i in indices.tolist()]

    first = order(0)
    assert sorted(first) == list(range(100)) and first != list(range(100))
    assert order(0) == first == order(0, workers=0) == order(0, workers=3)  # the seed's order, whatever the workers
    assert order(1) != first and sorted(order(1)) == list(range(100))  # another epoch, another permutation
    assert order(0, drop_last=True) == first[:96]  # 12 whole batches of 8, the short one dropped


def test_batches_are_tensors_over_the_loaders_memory(slides):
    """No copy: the tensor is a view of the batch array tilewise returned."""
    batch = next(iter(tilewise.open(slides[0]).read_regions(locations(4, 4), SIZE, batch_size=4)))
    from tilewise.torch import _as_tensor

    tensor = _as_tensor(batch, channels_first=True)
    assert tensor.data_ptr() == batch.__array_interface__["data"][0]
    assert tensor.shape == (4, 3, SIZE[1], SIZE[0]) and np.array_equal(tensor.permute(0, 2, 3, 1).numpy(), batch)
    channels_last = _as_tensor(batch, channels_first=False)
    assert channels_last.data_ptr() == tensor.data_ptr() and channels_last.is_contiguous()


def test_batch_dataset_reports_bad_requests(slides):
    with pytest.raises(ValueError, match="targets"):
        BatchDataset(slides[0], locations(3, 5), SIZE, targets=[1])
    with pytest.raises(ValueError, match="batch_size"):
        BatchDataset(slides[0], locations(3, 5), SIZE, batch_size=0)
    with pytest.raises(tilewise.TilewiseError):
        next(iter(BatchDataset(slides[0] + ".missing", locations(3, 5), SIZE)))


def _rank_indices(dataset, workers=0):
    out = []
    for batch, indices in DataLoader(dataset, batch_size=None, num_workers=workers):
        out.append(indices.numpy())
    return out


@pytest.mark.parametrize("n,drop_last", [(61, False), (61, True), (64, False), (2, False)])
def test_batch_dataset_shards_over_ranks_as_distributed_sampler(slides, n, drop_last):
    """Every rank takes the same number of batches; together they cover every location (DistributedSampler's
    padding repeats the order's beginning; drop_last cuts it to a multiple of the ranks)."""
    locs = locations(n, 8)
    world = 3
    per_rank = []
    for rank in range(world):
        ds = BatchDataset(slides[0], locs, SIZE, batch_size=8, shuffle=True, seed=5, drop_last=drop_last,
                          return_indices=True, rank=rank, world_size=world)
        batches = _rank_indices(ds, workers=2 if rank == 1 else 0)
        assert len(ds) == len(batches)
        per_rank.append(np.concatenate(batches) if batches else np.empty(0, np.int64))
    sizes = {len(b) for b in per_rank}
    assert len(sizes) == 1
    together = np.concatenate(per_rank)
    if drop_last:
        assert len(together) == world * (n // world // 8 * 8)  # cut to the ranks, short batches dropped
        assert len(set(together.tolist())) == len(together)  # nothing read twice
    else:
        assert set(together.tolist()) == set(range(n))
        assert len(together) == -(-n // world) * world
    # Each rank's patches are the slide's pixels at its locations.
    ds = BatchDataset(slides[0], locs, SIZE, batch_size=8, return_indices=True, rank=2, world_size=world)
    batch, indices = next(iter(DataLoader(ds, batch_size=None)))
    for image, i in zip(batch, indices.numpy()):
        assert np.array_equal(image.permute(1, 2, 0).numpy(), direct(slides[0], locs[i]))
    with pytest.raises(ValueError):
        BatchDataset(slides[0], locs, SIZE, rank=3, world_size=3)
    with pytest.raises(ValueError):
        BatchDataset(slides[0], locs, SIZE, rank=0)


def _ddp_rank(rank, world, path, locs, port, queue):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        ds = BatchDataset(path, locs, SIZE, batch_size=4, shuffle=True, seed=2, return_indices=True)
        ds.set_epoch(1)
        queue.put((rank, [i.tolist() for i in _rank_indices(ds)]))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_batch_dataset_takes_ranks_from_an_initialised_process_group(slides):
    """Two DDP ranks (gloo, spawned processes) read disjoint shares that cover every location."""
    import socket

    import torch.multiprocessing as tmp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    locs = locations(30, 9)
    ctx = tmp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_ddp_rank, args=(r, 2, slides[0], locs, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    got = dict(queue.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    shares = [sum(got[r], []) for r in range(2)]
    assert len(shares[0]) == len(shares[1]) == 15
    assert set(shares[0]).isdisjoint(shares[1]) and set(shares[0]) | set(shares[1]) == set(range(30))
