"""A slide as a read-only zarr v3 store: one array per level, chunked by the level's tiles, with OME-NGFF 0.5
multiscale metadata, so that zarr, ``dask.array.from_zarr``, xarray and napari read a slide directly.

    import zarr, tilewise
    group = tilewise.open("slide.svs").zarr()          # zarr.Group: arrays "0", "1", ... (y, x, c) uint8
    patch = group["0"][1000:1256, 2000:2256]            # decodes only the tiles it needs

Layout: ``zarr.json`` (the group, ``attributes.ome.multiscales``), ``<level>/zarr.json`` (shape (h, w, 3),
uint8, regular tile-aligned chunks of whole tiles, about 1024 x 1024 pixels, raw bytes, fill value 0) and
chunk keys ``<level>/c/<row>/<col>/0`` (edge chunks padded with the slide's background, as zarr reads whole
chunks). Chunks of several tiles, not one: zarr-python's cost per chunk is large (one tile per chunk read a
level at 85 MPix/s on one core, against 200 for ~1024^2 chunks through dask: bench/bench_dask.py). A chunk
is read through the slide's region reader on a worker thread (tilewise releases the GIL), so zarr's
concurrent chunk requests decode in parallel. The store pickles as its slide does (by path), for dask workers.
Requires ``zarr>=3`` (``pip install tilewise[zarr]``).
"""

from __future__ import annotations

import asyncio
import json
from typing import AsyncIterator, Iterable, List, Optional, Tuple

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.core.buffer import Buffer, BufferPrototype

from ._chunks import chunk_shape
from .slide import Slide

__all__ = ["SlideStore", "open_group", "chunk_shape"]


def _ome_metadata(slide: Slide) -> dict:
    mpp = slide.mpp
    unit = {"unit": "micrometer"} if mpp else {}
    datasets = []
    for i, level in enumerate(slide.levels):
        ds = level.downsample
        scale = [ds * mpp[1], ds * mpp[0], 1.0] if mpp else [ds, ds, 1.0]
        datasets.append({"path": str(i), "coordinateTransformations": [{"type": "scale", "scale": scale}]})
    return {"ome": {"version": "0.5", "multiscales": [{
        "name": slide.path,
        "axes": [{"name": "y", "type": "space", **unit}, {"name": "x", "type": "space", **unit},
                 {"name": "c", "type": "channel"}],
        "datasets": datasets,
    }]}}


class SlideStore(Store):
    """A read-only zarr v3 store over an open :class:`tilewise.Slide` (see the module notes)."""

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = True

    def __init__(self, slide: Slide):
        super().__init__(read_only=True)
        self._slide = slide
        self._documents = {"zarr.json": self._json({"zarr_format": 3, "node_type": "group",
                                                    "attributes": _ome_metadata(slide)})}
        self._chunks = [chunk_shape(level.tile_size) for level in slide.levels]
        for i, level in enumerate(slide.levels):
            w, h = level.dimensions
            ch, cw = self._chunks[i]
            self._documents[f"{i}/zarr.json"] = self._json({
                "zarr_format": 3, "node_type": "array", "shape": [h, w, 3], "data_type": "uint8",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [ch, cw, 3]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "codecs": [{"name": "bytes"}], "fill_value": 0, "dimension_names": ["y", "x", "c"],
                "attributes": {"downsample": level.downsample}})

    @staticmethod
    def _json(doc: dict) -> bytes:
        return json.dumps(doc).encode()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlideStore) and other._slide.path == self._slide.path

    def __reduce__(self):
        return (SlideStore, (self._slide,))

    def __repr__(self) -> str:
        return f"tilewise.zarr.SlideStore({self._slide.path!r})"

    # --- keys ---------------------------------------------------------------------------------------
    def _chunk(self, key: str) -> Optional[Tuple[int, int, int]]:
        """(level, row, col) of a chunk key ``<level>/c/<row>/<col>/0``, or None."""
        parts = key.split("/")
        if len(parts) != 5 or parts[1] != "c" or parts[4] != "0" or not all(p.isdigit() for p in parts[:1] + parts[2:4]):
            return None
        level, row, col = int(parts[0]), int(parts[2]), int(parts[3])
        if level >= self._slide.level_count:
            return None
        w, h = self._slide.levels[level].dimensions
        ch, cw = self._chunks[level]
        if row * ch >= h or col * cw >= w:
            return None
        return level, row, col

    def _read_chunk(self, level: int, row: int, col: int) -> bytes:
        ch, cw = self._chunks[level]
        return self._slide.read_level_region((col * cw, row * ch), (cw, ch), level=level, c="rgb").tobytes()

    def _keys(self) -> List[str]:
        keys = list(self._documents)
        for i, level in enumerate(self._slide.levels):
            w, h = level.dimensions
            ch, cw = self._chunks[i]
            keys += [f"{i}/c/{r}/{c}/0" for r in range(-(-h // ch)) for c in range(-(-w // cw))]
        return keys

    # --- the store interface --------------------------------------------------------------------------
    async def get(self, key: str, prototype: BufferPrototype, byte_range: Optional[ByteRequest] = None
                  ) -> Optional[Buffer]:
        data = self._documents.get(key)
        if data is None:
            chunk = self._chunk(key)
            if chunk is None:
                return None
            data = await asyncio.to_thread(self._read_chunk, *chunk)
        if isinstance(byte_range, RangeByteRequest):
            data = data[byte_range.start:byte_range.end]
        elif isinstance(byte_range, OffsetByteRequest):
            data = data[byte_range.offset:]
        elif isinstance(byte_range, SuffixByteRequest):
            data = data[-byte_range.suffix:]
        return prototype.buffer.from_bytes(data)

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[Tuple[str, Optional[ByteRequest]]]) -> List[Optional[Buffer]]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        return key in self._documents or self._chunk(key) is not None

    async def set(self, key: str, value: Buffer) -> None:
        raise PermissionError("tilewise.zarr.SlideStore is read-only")

    async def delete(self, key: str) -> None:
        raise PermissionError("tilewise.zarr.SlideStore is read-only")

    async def list(self) -> AsyncIterator[str]:
        for key in self._keys():
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self._keys():
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        prefix = prefix.rstrip("/")
        base = f"{prefix}/" if prefix else ""
        seen = set()
        for key in self._keys():
            if key.startswith(base):
                child = key[len(base):].split("/", 1)[0]
                if child not in seen:
                    seen.add(child)
                    yield child


def open_group(slide: Slide):
    """The slide as a read-only ``zarr.Group`` (arrays "0", "1", ... one per level)."""
    import zarr

    return zarr.open_group(store=SlideStore(slide), mode="r")
