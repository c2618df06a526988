"""Seed corpora for the fuzzers, from the catalogue's good files: whole files (tiff, dicom, open_read), MIRAX sets
joined as fuzz_mirax reads them, VSI sets as fuzz_vsi reads them, and, for TIFF
files, their tiles prefixed with the codec selector bytes fuzz_codecs expects; JPEG XR streams (as Zeiss CZI
stores them) behind the size bytes fuzz_jpegxr expects. (An index file of a file set,
such as Hamamatsu VMS, seeds open_read alone: its parser runs, its members cannot be found from memory.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import imagecodecs
import numpy as np
import tifffile

SELECTOR = {7: 0, 33003: 1, 33005: 1, 8: 2, 32946: 2, 5: 3, 50000: 4, 1: 5}


def jpegxr_seeds(out: Path) -> None:
    """Streams of the kinds CZI holds (BGR 8 and 16 bits, lossy and lossless, one or several tiles' worth)."""
    rng = np.random.default_rng(7)
    for w, h, dtype, level in ((64, 48, np.uint8, 0.9), (300, 200, np.uint8, 1.0), (40, 30, np.uint16, 0.95)):
        gradient = (np.add.outer(np.arange(h), np.arange(w)) * 3 % 251).astype(dtype)
        pixels = np.stack([gradient, gradient[::-1], rng.integers(0, 200, (h, w)).astype(dtype)], axis=-1)
        stream = imagecodecs.jpegxr_encode(pixels, level=level)
        head = bytes([1 if dtype == np.uint16 else 0]) + (w - 1).to_bytes(2, "little") + (h - 1).to_bytes(2, "little")
        (out / f"bgr{8 * np.dtype(dtype).itemsize}-{w}x{h}-{level}").write_bytes(head + stream)


def restart_unit_seeds(out: Path) -> None:
    """JPEGs one MCU row high and 512 pixels wide, as NDPI's restart-interval units are, for fuzz_codecs'
    MCU-index pass (selector 0; the second byte sets the MCU count it walks: 32 of 16-pixel MCUs, 64 of
    8-pixel ones)."""
    rng = np.random.default_rng(3)
    for sampling, mcus, h in (("422", 32, 8), ("444", 64, 8), ("420", 32, 16)):
        pixels = rng.integers(0, 256, (h, 512, 3), dtype=np.uint8)
        pixels[:, ::3] = 40
        stream = imagecodecs.jpeg8_encode(pixels, level=85, subsampling={"422": (2, 1), "444": (1, 1), "420": (2, 2)}[sampling])
        (out / f"restart-unit-{sampling}").write_bytes(bytes([0, mcus - 1, 7, 9, 0]) + stream)


def dicomweb_seeds(path: Path, out: Path, name: str) -> None:
    """For fuzz_dicomweb: the file's metadata as a DICOMweb server gives it (DICOM JSON, selector 1), and its
    first frames as a WADO-RS multipart answer (selector 0)."""
    import pydicom
    from pydicom.encaps import generate_frames

    ds = pydicom.dcmread(path)
    meta = ds.to_json_dict(bulk_data_threshold=256, bulk_data_element_handler=lambda e: "http://h/bulk")
    meta.pop("7FE00010", None)
    (out / f"{name}.json").write_bytes(b"\x01" + json.dumps([meta]).encode())
    if "PixelData" not in ds or not ds.file_meta.TransferSyntaxUID.is_compressed:
        return
    frames = list(generate_frames(ds.PixelData, number_of_frames=int(getattr(ds, "NumberOfFrames", 1))))[:3]
    body = b"".join(b"--b0undary\r\nContent-Type: application/octet-stream; transfer-syntax=" +
                    str(ds.file_meta.TransferSyntaxUID).encode() + b"\r\nContent-Length: " + str(len(f)).encode() +
                    b"\r\n\r\n" + f + b"\r\n" for f in frames) + b"--b0undary--\r\n"
    (out / f"{name}.multipart").write_bytes(b"\x00" + body)


def main(catalogue: Path, out: Path) -> None:
    entries = json.loads((catalogue / "catalogue.json").read_text())
    for d in ("tiff", "dicom", "codecs", "open_read", "mirax", "vsi", "jpegxr", "dicomweb"):
        (out / d).mkdir(parents=True, exist_ok=True)
    jpegxr_seeds(out / "jpegxr")
    restart_unit_seeds(out / "codecs")
    n = 0
    for e in entries:
        if not e["name"].startswith("good-"):
            continue
        path = catalogue / e["file"]
        if path.suffix == ".mrxs":  # fuzz_mirax's input: the set's files joined behind their lengths
            folder = path.with_suffix("")
            ini, index = (folder / "Slidedat.ini").read_bytes(), (folder / "Index.dat").read_bytes()
            blob = len(ini).to_bytes(4, "little") + len(index).to_bytes(4, "little") + ini + index
            (out / "mirax" / e["name"]).write_bytes(blob + (folder / "Data0000.dat").read_bytes())
            continue
        if path.suffix == ".vsi" and (path.parent / "_slide_").is_dir():  # fuzz_vsi's input: the .vsi, then the .ets
            vsi = path.read_bytes()
            ets = (path.parent / "_slide_" / "stack1" / "frame_t.ets").read_bytes()
            (out / "vsi" / e["name"]).write_bytes(len(vsi).to_bytes(4, "little") + vsi + ets)
            continue
        data = path.read_bytes()
        is_tiff = data[:4] in (b"II*\0", b"MM\0*", b"II+\0", b"MM\0+")
        if len(data) <= 512 * 1024:
            if is_tiff:
                (out / "tiff" / e["name"]).write_bytes(data)
            if data[128:132] == b"DICM":
                (out / "dicom" / e["name"]).write_bytes(data)
                dicomweb_seeds(path, out / "dicomweb", e["name"])
            (out / "open_read" / e["name"]).write_bytes(data)
        if not is_tiff:
            continue
        with tifffile.TiffFile(path) as tf:
            for page_index, page in enumerate(tf.pages[:2]):
                code = int(page.compression)
                if code not in SELECTOR:
                    continue
                tables = page.jpegtables or b""
                w = page.tilewidth or page.imagewidth
                h = page.tilelength or page.rowsperstrip
                spp = page.samplesperpixel
                flags = {1: 0, 3: 1, 4: 2}.get(spp, 1) | (8 if int(page.photometric) == 6 else 0) | (
                    16 if int(page.predictor) == 2 else 0)
                for i in range(min(3, len(page.dataoffsets))):
                    tf.filehandle.seek(page.dataoffsets[i])
                    chunk = tf.filehandle.read(page.databytecounts[i])
                    head = bytes([SELECTOR[code], (w - 1) % 256, (h - 1) % 256, flags, len(tables) // 4])
                    body = tables[: (len(tables) // 4) * 4] + (tables[(len(tables) // 4) * 4:] if False else b"")
                    (out / "codecs" / f"{path.stem}-{page_index}-{i}").write_bytes(head + body + chunk)
                    n += 1
    print(f"seeds: {len(list((out / 'tiff').iterdir()))} files, {n} tiles in {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
