"""Writer of Akoya (PerkinElmer) QPTIFF files as Vectra Polaris and PhenoCycler write them, through tifffile:
a BigTIFF whose Software is "PerkinElmer-QPI" and whose every directory carries a
<PerkinElmer-QPI-ImageDescription> XML, directories in file order - the full-resolution channels, the
thumbnail, each reduced resolution's channels, the overview and the label (tifffile's QPI series reader
groups them by that order and size)."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import tifffile


def _description(image_type: str, name: str = "", color: Optional[Tuple[int, int, int]] = None,
                 exposure: Optional[int] = None) -> str:
    fields = [("DescriptionVersion", "2"), ("AcquisitionSoftware", "PhenoImager HT"), ("ImageType", image_type),
              ("Identifier", "4f1c9a2e-0000-0000-0000-000000000000"), ("SlideID", "S-1")]
    if name:
        fields += [("Name", name), ("Biomarker", name)]
    if color is not None:
        fields.append(("Color", ",".join(str(v) for v in color)))
    if exposure is not None:
        fields.append(("ExposureTime", str(exposure)))
    fields += [("Objective", "20x"), ("IsUnmixedComponent", "False")]
    body = "".join(f"<{k}>{v}</{k}>" for k, v in fields)
    return f'<?xml version="1.0" encoding="utf-8"?>\r\n<PerkinElmer-QPI-ImageDescription>{body}</PerkinElmer-QPI-ImageDescription>'


def write_qptiff(path, channels: np.ndarray, *, names: Sequence[str] = (), colors: Sequence[Tuple[int, int, int]] = (),
                 levels: int = 3, tile: int = 128, compression="lzw", mpp: float = 0.5,
                 thumbnail: Optional[np.ndarray] = None, macro: Optional[np.ndarray] = None,
                 label: Optional[np.ndarray] = None) -> list:
    """Writes `channels` ((C, h, w) grey, or (h, w, 3) uint8 brightfield RGB); level k is every 2**k-th
    pixel (sizes rounded down). Returns the levels written, as (C, h, w) or (h, w, 3) arrays."""
    rgb = channels.ndim == 3 and channels.shape[-1] == 3 and channels.dtype == np.uint8 and not names
    stack = [channels] if rgb else list(channels)
    pyramid = []
    res = (10000 / mpp, 10000 / mpp)
    with tifffile.TiffWriter(path, bigtiff=True) as tw:
        def page(data, image_type, c=None, subfile=0, tiled=True):
            desc = _description(image_type, names[c] if c is not None and c < len(names) else "",
                                colors[c] if c is not None and c < len(colors) else None,
                                1000 * (c + 1) if c is not None else None)
            tw.write(data, photometric="rgb" if data.ndim == 3 else "minisblack", tile=(tile, tile) if tiled else None,
                     compression=compression, description=desc, software="PerkinElmer-QPI", metadata=None,
                     subfiletype=subfile, resolution=res, resolutionunit="CENTIMETER")

        for level in range(levels):
            step = 2**level
            # Each resolution half the one before, rounded down (as tifffile's QPI reader expects).
            level_data = [s[: s.shape[0] // step * step : step, : s.shape[1] // step * step : step] for s in stack]
            pyramid.append(level_data[0] if rgb else np.stack(level_data))
            for c, data in enumerate(level_data):
                page(data, "FullResolution" if level == 0 else "ReducedResolution", None if rgb else c,
                     subfile=0 if level == 0 else 1)
            if level == 0 and thumbnail is not None:
                page(thumbnail, "Thumbnail", subfile=1, tiled=False)
        if macro is not None:
            page(macro, "Overview", subfile=1, tiled=False)
        if label is not None:
            page(label, "Label", subfile=1, tiled=False)
    return pyramid
