"""The corruption catalogue: damaged variants of good slides, each with its expected outcome.

    python tests/data/catalogue.py OUTDIR      # writes the files and OUTDIR/catalogue.json

Each entry: {"name", "file", "expect", "pattern"} and, for a file set whose member is damaged, "names": the
member the error message must name (default: "file"). `expect` is one of
  "open-fails"   open raises; the message matches `pattern`
  "read-fails"   open succeeds, reading every level raises; the message matches `pattern`
  "reads"        open succeeds and every level reads
  "clean"        no crash and no leak: open or read may fail, but any error message names the file
The same manifest drives tests/cpp/catalogue (under AddressSanitizer in CI) and tests/python/test_catalogue.py.
Base files are small (a few hundred pixels) so that the catalogue also seeds the fuzzers.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import tifffile

sys.path.insert(0, str(Path(__file__).resolve().parent))
import czi  # noqa: E402
import dicom_wsi  # noqa: E402
import leica  # noqa: E402
import mirax  # noqa: E402
import ndpi  # noqa: E402
import qptiff  # noqa: E402
import sakura  # noqa: E402
import slidegen  # noqa: E402
import trestle  # noqa: E402
import vendor_tiff  # noqa: E402
import ventana  # noqa: E402
import vms  # noqa: E402
import vsi  # noqa: E402


def base_files(out: Path) -> dict:
    """Good slides of every format and codec."""
    img = slidegen.tissue_image(320, 240, seed=21)
    files = {}

    def tf(name, **kw):
        p = out / f"{name}.tif"
        slidegen.write_tifffile_pyramid(p, img, levels=2, **kw)
        files[name] = p

    tf("jpeg", compression="jpeg", tile=(64, 64))
    tf("deflate", compression="deflate", tile=(64, 64))
    tf("lzw", compression="lzw", tile=(64, 64), predictor=True)
    tf("zstd", compression="zstd", tile=(64, 64))
    tf("raw", compression=None, tile=(64, 64))
    tf("strips", compression="deflate", tile=None, rowsperstrip=16)
    tf("bigtiff", compression="deflate", tile=(64, 64), bigtiff=True, byteorder=">")
    p = out / "vips.tif"
    slidegen.write_vips_pyramid(p, img, tile=64)
    files["vips"] = p
    for codec in ("jpeg-rgb", "j2k-ycbcr"):
        p = out / f"aperio-{codec}.svs"
        vendor_tiff.write_aperio(p, img, codec=codec, tile=64, downsamples=(4,))
        files[f"aperio-{codec}"] = p
    p = out / "philips.tiff"
    vendor_tiff.write_philips(p, img, tile=64, levels=2)
    files["philips"] = p
    p = out / "ome.ome.tif"
    with tifffile.TiffWriter(p, ome=True) as tw:
        tw.write(img, subifds=1, tile=(64, 64), compression="deflate", photometric="rgb",
                 metadata={"axes": "YXS", "PhysicalSizeX": 0.5})
        tw.write(img[::2, ::2], subfiletype=1, tile=(64, 64), compression="deflate", photometric="rgb")
    files["ome"] = p
    # Channels and focal planes: 2 x 2 planes of 16-bit samples, each with its SubIFD pyramid.
    p = out / "ome-planes.ome.tif"
    planes = np.stack([np.stack([img[..., c].astype(np.uint16) * 257 + z for c in (0, 2)]) for z in (0, 1)])
    with tifffile.TiffWriter(p, ome=True) as tw:
        tw.write(planes, subifds=1, tile=(64, 64), compression="zlib", photometric="minisblack",
                 metadata={"axes": "ZCYX", "Channel": {"Name": ["red", "blue"]}})
        tw.write(planes[..., ::2, ::2], subfiletype=1, tile=(64, 64), compression="zlib", photometric="minisblack")
    files["ome-planes"] = p
    p = out / "akoya.qptiff"
    qptiff.write_qptiff(p, np.stack([img[..., c] for c in range(3)]), names=["DAPI", "CD8", "PanCK"], levels=2,
                        tile=64, thumbnail=img[::4, ::4], label=img[:32, :32])
    files["qptiff"] = p
    # Grey + alpha (2-component) JPEG tiles, as found in real files (OpenSlide reads them).
    p = out / "grey-alpha-jpeg.tif"
    tifffile.imwrite(p, np.dstack([img[..., 0], np.full(img.shape[:2], 255, np.uint8)]), tile=(64, 64),
                     compression="jpeg", photometric="minisblack", extrasamples=[2])
    files["grey-alpha-jpeg"] = p
    p = out / "hamamatsu.ndpi"
    ndpi.write_ndpi(p, img, levels=2, restart_interval=8, subsampling="4:4:4")
    files["ndpi"] = p
    return files


class Tiff:
    """Minimal view of a classic little-endian TIFF for surgical edits."""

    def __init__(self, data: bytes):
        self.data = bytearray(data)
        assert self.data[:4] == b"II*\0", "catalogue edits use classic little-endian files"

    def ifds(self):
        off = struct.unpack_from("<I", self.data, 4)[0]
        out = []
        while off and off not in out:
            out.append(off)
            n = struct.unpack_from("<H", self.data, off)[0]
            off = struct.unpack_from("<I", self.data, off + 2 + 12 * n)[0]
        return out

    def entry(self, ifd: int, tag: int):
        n = struct.unpack_from("<H", self.data, ifd)[0]
        for i in range(n):
            pos = ifd + 2 + 12 * i
            if struct.unpack_from("<H", self.data, pos)[0] == tag:
                return pos
        raise KeyError(tag)

    def set_value(self, ifd: int, tag: int, value: int, typ: int = None) -> None:
        pos = self.entry(ifd, tag)
        t = struct.unpack_from("<H", self.data, pos + 2)[0] if typ is None else typ
        struct.pack_into("<HI", self.data, pos + 2, t, 1)
        struct.pack_into("<I" if t == 4 else "<HH", self.data, pos + 8, *((value,) if t == 4 else (value, 0)))

    def array(self, ifd: int, tag: int):
        """(offset of the values, count, type size) of an array tag."""
        pos = self.entry(ifd, tag)
        typ, count = struct.unpack_from("<HI", self.data, pos + 2)
        size = {1: 1, 7: 1, 3: 2, 4: 4, 16: 8}[typ]
        where = pos + 8 if size * count <= 4 else struct.unpack_from("<I", self.data, pos + 8)[0]
        return where, count, size

    def set_array_item(self, ifd: int, tag: int, index: int, value: int) -> None:
        where, count, size = self.array(ifd, tag)
        struct.pack_into({2: "<H", 4: "<I", 8: "<Q"}[size], self.data, where + index * size, value)

    def get_array_item(self, ifd: int, tag: int, index: int) -> int:
        where, count, size = self.array(ifd, tag)
        return struct.unpack_from({2: "<H", 4: "<I", 8: "<Q"}[size], self.data, where + index * size)[0]

    def chunk(self, ifd: int, index: int):
        tiled = True
        try:
            self.entry(ifd, 324)
        except KeyError:
            tiled = False
        offsets, counts = (324, 325) if tiled else (273, 279)
        return self.get_array_item(ifd, offsets, index), self.get_array_item(ifd, counts, index), (offsets, counts)


def build(out: Path) -> list:
    out.mkdir(parents=True, exist_ok=True)
    files = base_files(out)
    entries = []

    def add(name, data, expect, pattern=""):
        path = out / name
        if isinstance(data, (bytes, bytearray)):
            path.write_bytes(bytes(data))
        entries.append({"name": name, "file": path.name if path.exists() else name, "expect": expect, "pattern": pattern})

    for key, path in files.items():  # the good files themselves
        add(f"good-{path.name}", path.read_bytes(), "reads")

    # Truncations at many offsets of several files.
    for key in ("jpeg", "deflate", "vips", "aperio-j2k-ycbcr", "philips", "strips", "ome-planes", "qptiff"):
        data = files[key].read_bytes()
        for frac in (0.0, 0.001, 0.02, 0.1, 0.35, 0.6, 0.9, 0.999):
            cut = int(len(data) * frac)
            add(f"trunc-{key}-{cut}.tif", data[:cut], "clean", "")

    def edit(key, fn):
        t = Tiff(files[key].read_bytes())
        fn(t)
        return t.data

    # Byte counts and offsets.
    add("zero-bytecount.tif", edit("deflate", lambda t: t.set_array_item(t.ifds()[0], 325, 0, 0)), "reads")
    add("huge-bytecount.tif", edit("deflate", lambda t: t.set_array_item(t.ifds()[0], 325, 2, 0xFFFFFFF0)),
        "read-fails", r"level 0 tile \(2,0\) at offset \d+: .*past the end")
    add("offset-past-eof.tif", edit("jpeg", lambda t: t.set_array_item(t.ifds()[0], 324, 5, 0xFFFFFF00)),
        "read-fails", r"level 0 tile \(0,1\) at offset 4294967040")
    add("plane-bytecount-past-eof.ome.tif",
        edit("ome-planes", lambda t: t.set_array_item(t.ifds()[3], 325, 0, 0xFFFFFFF0)),
        "read-fails", r"level 0 plane \(channel 1, z 1, t 0\) tile \(0,0\) at offset \d+: .*past the end")
    add("strip-offset-past-eof.tif", edit("strips", lambda t: t.set_array_item(t.ifds()[0], 273, 3, 0x7FFFFFFF)),
        "read-fails", r"level 0 tile \(0,3\)")
    add("short-tile-table.tif", edit("deflate", lambda t: struct.pack_into("<I", t.data, t.entry(t.ifds()[0], 325) + 4, 3)),
        "open-fails", r"byte counts table has 3 entries")
    add("tag-data-outside.tif", edit("jpeg", lambda t: struct.pack_into("<I", t.data, t.entry(t.ifds()[0], 324) + 8, 0x7FFFFFF0)),
        "open-fails", r"outside the file")

    # Directory structure.
    def ifd_loop(t):
        ifds = t.ifds()
        n = struct.unpack_from("<H", t.data, ifds[-1])[0]
        struct.pack_into("<I", t.data, ifds[-1] + 2 + 12 * n, ifds[0])
    add("ifd-loop.tif", edit("deflate", ifd_loop), "open-fails", r"IFD loop")
    add("ifd-offset-past-eof.tif", edit("deflate", lambda t: struct.pack_into("<I", t.data, 4, 0x7FFFFF00)),
        "open-fails", r"outside the file")
    add("ifd-zero-entries.tif", edit("deflate", lambda t: struct.pack_into("<H", t.data, t.ifds()[0], 0)),
        "open-fails", r"has 0 entries")
    add("ifd-many-entries.tif", edit("deflate", lambda t: struct.pack_into("<H", t.data, t.ifds()[0], 65535)),
        "clean", "")
    add("first-ifd-zero.tif", edit("deflate", lambda t: struct.pack_into("<I", t.data, 4, 0)),
        "open-fails", r"no image directory")

    # Sizes.
    add("absurd-width.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 256, 0x7FFFFFFF, 4)),
        "open-fails", r"tile offsets table has \d+ entries, the image needs")
    add("zero-height.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 257, 0, 4)),
        "open-fails", r"is empty")
    add("zero-tile-width.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 322, 0, 4)),
        "open-fails", r"tile size 0x64 is invalid")
    add("huge-tile.tif", edit("deflate", lambda t: (t.set_value(t.ifds()[0], 322, 65536 * 4, 4),
                                                  t.set_value(t.ifds()[0], 323, 65536 * 4, 4))),
        "open-fails", r"exceeds the \d+ MiB limit")
    add("odd-tile-size.tif", edit("raw", lambda t: t.set_value(t.ifds()[0], 322, 48, 4)), "clean", "")

    # Codec and colour values.
    add("unknown-compression.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 259, 9999, 3)),
        "open-fails", r"Unsupported TIFF compression: 9999")
    add("wrong-compression-deflate-as-lzw.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 259, 5, 3)),
        "read-fails", r"lzw")
    add("wrong-compression-jpeg-as-zstd.tif", edit("jpeg", lambda t: t.set_value(t.ifds()[0], 259, 50000, 3)),
        "open-fails", r"uncompressed YCbCr images are not supported")
    add("wrong-compression-deflate-as-zstd.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 259, 50000, 3)),
        "read-fails", r"zstd: ")
    add("cmyk-photometric.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 262, 5, 3)),
        "open-fails", r"photometric interpretation 5")
    add("palette-photometric.tif", edit("raw", lambda t: t.set_value(t.ifds()[0], 262, 3, 3)),
        "open-fails", r"photometric")
    add("bits-12.tif", edit("raw", lambda t: struct.pack_into("<HIHH", t.data, t.entry(t.ifds()[0], 258) + 2, 3, 1, 12, 0)),
        "open-fails", r"12-bit")
    add("planar-separate.tif", edit("deflate", lambda t: t.set_value(t.ifds()[0], 284, 2, 3)), "clean", "")
    add("predictor-3.tif", edit("lzw", lambda t: t.set_value(t.ifds()[0], 317, 3, 3)),
        "open-fails", r"predictor 3")
    add("jpeg-ycbcr-as-rgb.tif", edit("jpeg", lambda t: t.set_value(t.ifds()[0], 262, 2, 3)), "reads")

    # Damaged payloads.
    def damage_chunk(key, index, how, ifd_index=0):
        t = Tiff(files[key].read_bytes())
        off, count, _ = t.chunk(t.ifds()[ifd_index], index)
        if how == "zeros":
            t.data[off + count // 4 : off + count] = bytes(count - count // 4)
        elif how == "flip":
            rng = np.random.default_rng(index)
            for i in rng.integers(off + 2, off + count, 16):
                t.data[int(i)] ^= 0xFF
        elif how == "header":
            t.data[off : off + 8] = b"\x00" * 8
        return t.data

    add("jpeg-payload-zeros.tif", damage_chunk("jpeg", 3, "zeros"), "read-fails", r"tile \(3,0\).*jpeg: ")
    add("jpeg-payload-header.tif", damage_chunk("jpeg", 0, "header"), "read-fails", r"tile \(0,0\).*jpeg: ")
    add("jpeg-payload-flips.tif", damage_chunk("vips", 4, "flip"), "clean", "")
    add("jpegtables-damaged.tif", edit("vips", lambda t: t.data.__setitem__(slice(t.array(t.ifds()[0], 347)[0] + 2,
                                                                                     t.array(t.ifds()[0], 347)[0] + 40),
                                                                            b"\xff" * 38)),
        "read-fails", r"jpeg: ")
    # OpenJPEG decodes zeroed packet data without complaint (the codestream stays well-formed).
    add("j2k-payload-zeros.svs", damage_chunk("aperio-j2k-ycbcr", 2, "zeros"), "clean", "")
    add("j2k-payload-header.svs", damage_chunk("aperio-j2k-ycbcr", 0, "header"), "read-fails", r"jpeg2000: ")
    add("j2k-payload-flips.svs", damage_chunk("aperio-j2k-ycbcr", 1, "flip"), "clean", "")
    add("deflate-payload-zeros.tif", damage_chunk("deflate", 1, "zeros"), "read-fails", r"tile \(1,0\).*deflate: ")
    add("deflate-payload-header.tif", damage_chunk("deflate", 0, "header"), "read-fails", r"deflate: ")
    add("lzw-payload-flips.tif", damage_chunk("lzw", 2, "flip"), "clean", "")
    add("lzw-payload-header.tif", damage_chunk("lzw", 0, "header"), "clean", "")
    add("zstd-payload-zeros.tif", damage_chunk("zstd", 1, "zeros"), "read-fails", r"zstd: ")
    add("zstd-payload-flips.tif", damage_chunk("zstd", 3, "flip"), "clean", "")
    add("strip-payload-zeros.tif", damage_chunk("strips", 2, "zeros"), "read-fails", r"tile \(0,2\).*deflate: ")

    # Streams that decompress to more than their tile: a decoder must stop at the tile's end, and, as libtiff
    # and tifffile do (OpenSlide reads such files through libtiff), keep the tile's worth of pixels.
    import imagecodecs
    import zlib
    for key, encode in (("lzw", imagecodecs.lzw_encode), ("deflate", zlib.compress),
                        ("zstd", imagecodecs.zstd_encode)):
        t = Tiff(files[key].read_bytes())
        ifd = t.ifds()[0]
        payload = encode(bytes(range(256)) * (64 * 64 * 3 * 2 // 256))  # twice a 64 x 64 RGB tile
        t.set_array_item(ifd, 324, 0, len(t.data))
        t.set_array_item(ifd, 325, 0, len(payload))
        t.data += payload
        add(f"{key}-overlong.tif", t.data, "reads")

    # A PerkinElmer QPTIFF seen in the wild: an LZW strip that decodes to 3 bytes more than the strip (libtiff
    # and tifffile keep the strip's worth).
    strip_file = out / "lzw-strips.tif"
    tifffile.imwrite(strip_file, slidegen.tissue_image(96, 64, seed=22), compression="lzw", rowsperstrip=16,
                     photometric="rgb")
    t = Tiff(strip_file.read_bytes())
    ifd = t.ifds()[0]
    start, length = t.get_array_item(ifd, 273, 1), t.get_array_item(ifd, 279, 1)
    strip = imagecodecs.lzw_decode(bytes(t.data[start:start + length]))
    payload = imagecodecs.lzw_encode(strip + b"\x7f\x7f\x7f")
    t.set_array_item(ifd, 273, 1, len(t.data))
    t.set_array_item(ifd, 279, 1, len(payload))
    t.data += payload
    strip_file.unlink()
    add("lzw-strip-overlong.tif", t.data, "reads")

    # A .vsi that is a plain TIFF: no cellSens metadata stream after its header.
    plain = Tiff(files["strips"].read_bytes())
    add("olympus.vsi", plain.data, "open-fails", r"Olympus cellSens VSI: no metadata volume")

    # A JPEG 2000 codestream that claims a larger image than its tile (OpenJPEG would allocate for it).
    t = Tiff(files["aperio-j2k-ycbcr"].read_bytes())
    ifd = t.ifds()[0]
    big = imagecodecs.jpeg2k_encode(np.zeros((1024, 1024, 3), np.uint8), level=40, codecformat="J2K")
    t.set_array_item(ifd, 324, 0, len(t.data))
    t.set_array_item(ifd, 325, 0, len(big))
    t.data += big
    add("j2k-larger-than-tile.svs", t.data, "read-fails", r"tile \(0,0\).*jpeg2000: image is 1024x1024, larger than")

    # Metadata.
    def bad_xml(t):
        pos = t.data.find(b"</DataObject></Array>")
        t.data[pos : pos + 3] = b"<<<"
    add("philips-bad-xml.tiff", edit("philips", bad_xml), "reads")
    add("ome-bad-xml.ome.tif", bytes(Tiff(files["ome"].read_bytes()).data).replace(b"<Pixels", b"<Pix<els", 1),
        "reads")
    latin = out / "latin1-description.tif"
    tifffile.imwrite(latin, slidegen.tissue_image(100, 80, seed=1), tile=(64, 64), metadata=None,
                     description="r\xe9solution \xb5m".encode("latin-1"))
    add(latin.name, None, "reads")
    huge = out / "huge-description.tif"
    tifffile.imwrite(huge, slidegen.tissue_image(100, 80, seed=2), tile=(64, 64), metadata=None,
                     description="x" * (24 << 20))
    add(huge.name, None, "reads")

    # Hamamatsu NDPI: damaged vendor tags, restart markers and layouts.
    img = slidegen.tissue_image(320, 240, seed=21)

    def ndpi_variant(name, expect, pattern="", **kw):
        path = out / name
        ndpi.write_ndpi(path, img, levels=2, restart_interval=kw.pop("restart_interval", 8), subsampling="4:4:4", **kw)
        add(name, None, expect, pattern)

    def drop_tag(tag, only=0):
        return lambda k, tags: [t for t in tags if not (k == only and t[0] == tag)]

    def shift_mcu_starts(by):
        return lambda k, tags: [(t[0], t[1], [v + by for v in t[2]]) if t[0] == ndpi.MCU_STARTS else t for t in tags]

    ndpi_variant("ndpi-no-source-lens.ndpi", "open-fails", r"no SourceLens", edit=drop_tag(ndpi.SOURCE_LENS))
    ndpi_variant("ndpi-no-focal-plane.ndpi", "open-fails", r"no focal plane", edit=drop_tag(ndpi.FOCAL_PLANE))
    ndpi_variant("ndpi-mcu-starts-past-jpeg.ndpi", "open-fails", r"MCU start 0 lies past the JPEG",
                 edit=shift_mcu_starts(1 << 30))
    ndpi_variant("ndpi-mcu-starts-shifted.ndpi", "clean", edit=shift_mcu_starts(5))
    ndpi_variant("ndpi-restart-interval-3.ndpi", "open-fails", r"restart interval 3 does not divide", restart_interval=3)
    ndpi_variant("ndpi-no-mcu-starts.ndpi", "reads", with_mcu_starts=False)
    data = files["ndpi"].read_bytes()
    for frac in (0.05, 0.3, 0.7, 0.95, 0.999):
        add(f"trunc-ndpi-{int(len(data) * frac)}.ndpi", data[: int(len(data) * frac)], "clean", "")

    # Hamamatsu VMS: file sets in their own folders (the entry's file is the index).
    def vms_variant(name, expect, pattern="", edit=None, **kw):
        index = vms.write_vms(out / name, img[:, :256], cols=2, rows=2, restart_interval=4, **kw)
        if edit:
            edit(index)
        entries.append({"name": name, "file": f"{name}/{index.name}", "expect": expect, "pattern": pattern})

    def rewrite(fn):
        return lambda index: index.write_text(fn(index.read_text()))

    vms_variant("good-vms", "reads")
    vms_variant("vms-missing-image", "open-fails", r"slide_1_1\.jpg", edit=lambda i: (i.parent / "slide_1_1.jpg").unlink())
    vms_variant("vms-no-map-key", "open-fails", r"Can't read map file",
                edit=rewrite(lambda t: "".join(l for l in t.splitlines(True) if not l.startswith("MapFile"))))
    vms_variant("vms-duplicate-image", "open-fails", r"Duplicate image for \(1,0\)",
                edit=rewrite(lambda t: t + "ImageFile(1,0)=slide_0_0.jpg\r\n"))
    vms_variant("vms-bad-column", "open-fails", r"Invalid row or column",
                edit=rewrite(lambda t: t + "ImageFile(5,0)=slide_0_0.jpg\r\n"))
    vms_variant("vms-no-rows", "open-fails", r"VMS file has no rows",
                edit=rewrite(lambda t: t.replace("NoJpegRows=2", "NoJpegRows=0")))
    vms_variant("vms-truncated-jpeg", "open-fails", r"restart intervals",
                edit=lambda i: (i.parent / "slide_0_1.jpg").write_bytes((i.parent / "slide_0_1.jpg").read_bytes()[:900]))
    vms_variant("vms-image-without-restart-markers", "open-fails", r"Tile size not consistent",
                edit=lambda i: (i.parent / "slide_1_0.jpg").write_bytes(ndpi.encode_jpeg(img[:120, 128:256])))

    def vmu_variant(name, expect, pattern="", edit=None, names=None):
        index = vms.write_vmu(out / name, img[:, :256], column_width=32)
        if edit:
            edit(index)
        entries.append({"name": name, "file": f"{name}/{index.name}", "expect": expect, "pattern": pattern,
                        "names": f"{name}/{names or index.name}"})

    def patch_ngr(offset, value):
        def edit(index):
            p = index.parent / "slide.ngr"
            data = bytearray(p.read_bytes())
            data[offset:offset + len(value)] = value
            p.write_bytes(bytes(data))
        return edit

    vmu_variant("good-vmu", "reads")
    vmu_variant("vmu-bad-magic", "open-fails", r"Bad magic on NGR file", edit=patch_ngr(0, b"XX"))
    vmu_variant("vmu-width-not-columns", "open-fails", r"not multiple of column width",
                edit=patch_ngr(12, (30).to_bytes(4, "little")))
    vmu_variant("vmu-data-past-eof", "read-fails", r"past the end", edit=patch_ngr(24, (1 << 30).to_bytes(4, "little")),
                names="slide.ngr")
    vmu_variant("vmu-bits-per-pixel", "open-fails", r"BitsPerPixel must be 36",
                edit=rewrite(lambda t: t.replace("BitsPerPixel=36", "BitsPerPixel=24")))

    # DICOM series: each in its own folder (the driver reads the folder of the opened file); the entry's file
    # is the level-0 instance, edited with pydicom (attributes) or as bytes (damage).
    import pydicom

    def dicom_variant(name, expect, pattern="", attrs=None, raw=None, **kw):
        folder = out / name
        if folder.exists():
            for f in folder.iterdir():
                f.unlink()
        first = dicom_wsi.write_series(folder, img, levels=2, tile=64, **kw)
        if attrs:
            ds = pydicom.dcmread(first)
            attrs(ds)
            ds.save_as(first)
        if raw:
            first.write_bytes(bytes(raw(bytearray(first.read_bytes()))))
        entries.append({"name": name, "file": f"{name}/{first.name}", "expect": expect, "pattern": pattern})

    def setattr_(key, value):
        return lambda ds: setattr(ds, key, value)

    def frame_bytes(data, which=3):
        """Offset of the `which`-th encapsulated fragment's value (after the offset table)."""
        at = data.rfind(b"\xe0\x7f\x10\x00OB") + 12
        for _ in range(which + 1):
            at += 8 + int.from_bytes(data[at + 4:at + 8], "little")
        return at + 8

    def patch(fn):
        def edit(data):
            fn(data)
            return data
        return edit

    dicom_variant("good-dicom", "reads")
    dicom_variant("good-dicom-sparse", "reads", sparse_missing=[2, 7])
    dicom_variant("good-dicom-j2k", "reads", codec="jpeg2000-lossless", associated=False)
    dicom_variant("good-dicom-jpegls", "reads", codec="jpegls", associated=False)
    dicom_variant("good-dicom-raw", "reads", codec="raw", associated=False)
    dicom_variant("dicom-unsupported-syntax", "open-fails", r"Unsupported transfer syntax 1\.2\.840\.10008\.1\.2\.4\.100",
                  attrs=lambda ds: setattr(ds.file_meta, "TransferSyntaxUID", "1.2.840.10008.1.2.4.100"))
    dicom_variant("dicom-no-series-uid", "open-fails", r"SeriesInstanceUID not found", attrs=lambda ds: delattr(ds, "SeriesInstanceUID"))
    dicom_variant("dicom-bits-12", "open-fails", r"BitsStored value 12 != 8", attrs=setattr_("BitsStored", 12))
    dicom_variant("dicom-more-frames-than-fragments", "open-fails", r"fragments .* for 99 frames",
                  attrs=setattr_("NumberOfFrames", 99), offsets="none")
    def bot_entry(data, i):  # where the Basic Offset Table's entry i lies
        return data.rfind(b"\xe0\x7f\x10\x00OB") + 20 + 4 * i

    def shift_bot(i, by):
        def edit(d):
            at = bot_entry(d, i)
            d[at:at + 4] = (int.from_bytes(d[at:at + 4], "little") + by).to_bytes(4, "little")
        return patch(edit)

    # A table whose first offset is wrong fails the check at open: the fragments are walked instead.
    dicom_variant("dicom-lying-offset-table", "reads", raw=shift_bot(0, 7))
    # One wrong offset among many passes the sampled check: the frames it cuts fail when read, clearly.
    dicom_variant("dicom-lying-offset-one-frame", "clean", raw=shift_bot(1, 2))
    dicom_variant("dicom-damaged-frame", "read-fails", r"level 0 tile \(3,0\)",
                  raw=patch(lambda d: d.__setitem__(slice(frame_bytes(d), frame_bytes(d) + 40), bytes(40))))
    # Optical paths (channels) and focal planes of MONOCHROME2 frames, one instance.
    def dicom_planes_variant(name, expect, pattern="", raw=None, dtype=np.uint16, **kw):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for f in folder.iterdir():
            f.unlink()
        stack = np.stack([np.stack([img[..., c].astype(dtype) * (251 if dtype == np.uint16 else 1) + z
                                    for z in range(2)]) for c in range(2)])
        first = dicom_wsi.write_instance(folder / "planes.dcm", stack, series=dicom_wsi.new_series(), tile=64,
                                         paths=[{"id": "1", "description": "DAPI", "wavelength": 405.0},
                                                {"id": "2", "description": "FITC", "wavelength": 488.0}],
                                         z_offsets_um=[0.0, 1.5], **kw)
        if raw:
            first.write_bytes(bytes(raw(bytearray(first.read_bytes()))))
        entries.append({"name": name, "file": f"{name}/{first.name}", "expect": expect, "pattern": pattern})

    dicom_planes_variant("good-dicom-grey16-planes", "reads", codec="raw")
    dicom_planes_variant("good-dicom-grey8-planes-j2k-sparse", "reads", codec="jpeg2000-lossless", dtype=np.uint8, sparse=True)
    dicom_planes_variant("good-dicom-grey16-planes-jpegls", "reads", codec="jpegls")
    # frame 23: path 1, focal plane 2, tile 3 (20 tiles a plane)
    dicom_planes_variant("dicom-plane-damaged-frame", "read-fails", r"plane \(channel 0, z 1, t 0\) tile \(3,0\)",
                         codec="jpeg2000-lossless",
                         raw=patch(lambda d: d.__setitem__(slice(frame_bytes(d, 23), frame_bytes(d, 23) + 40), bytes(40))))
    dicom_variant("dicom-sparse-off-grid", "open-fails", r"is not on the 64x64 tile grid", sparse_missing=[1],
                  attrs=lambda ds: setattr(ds.PerFrameFunctionalGroupsSequence[1].PlanePositionSlideSequence[0],
                                           "ColumnPositionInTotalImagePixelMatrix", 70))

    def deep(ds):
        item = ds
        for _ in range(20):
            inner = pydicom.Dataset()
            item.ContentSequence = pydicom.Sequence([inner])
            item = inner
    dicom_variant("dicom-nested-deep", "open-fails", r"nested deeper than 12", attrs=deep)
    good = (out / "good-dicom" / "slide-level0.dcm").read_bytes()
    for frac in (0.02, 0.1, 0.3, 0.6, 0.9, 0.999):
        cut = int(len(good) * frac)
        dicom_variant(f"trunc-dicom-{cut}", "clean", raw=lambda d, cut=cut: d[:cut], associated=False)

    # MIRAX: a .mrxs beside its folder; the index, Slidedat.ini and data files damaged one at a time.
    def mirax_variant(name, expect, pattern="", edit=None, member=None, **kw):
        folder = out / name
        if folder.exists():
            shutil.rmtree(folder)
        kw.setdefault("fmt", "PNG")
        path = mirax.write_mirax(folder / "slide.mrxs", img, tile=64, overlap=(16, 8), levels=3, data_files=2, **kw)
        if edit:
            edit(path.with_suffix(""))
        entry = {"name": name, "file": f"{name}/slide.mrxs", "expect": expect, "pattern": pattern}
        if member:
            entry["names"] = f"{name}/slide/{member}"
        entries.append(entry)

    def index_edit(fn):
        def edit(folder):
            p = folder / "Index.dat"
            data = bytearray(p.read_bytes())
            fn(data)
            p.write_bytes(bytes(data))
        return edit

    def level0_page(data):
        """Offset of zoom level 0's first data page in the generator's Index.dat."""
        head = len(b"01.02" + mirax.SLIDE_ID.encode())
        record = struct.unpack_from("<i", data, struct.unpack_from("<i", data, head)[0])[0]
        return struct.unpack_from("<i", data, record + 4)[0]

    def entry_field(k, field, value):  # field: 0 image index, 1 offset, 2 length, 3 data file
        return index_edit(lambda d: struct.pack_into("<i", d, level0_page(d) + 8 + 16 * k + 4 * field, value))

    def ini_edit(old, new):
        def edit(folder):
            p = folder / "Slidedat.ini"
            p.write_bytes(p.read_bytes().replace(old.encode(), new.encode(), 1))
        return edit

    mirax_variant("good-mirax", "reads")
    mirax_variant("good-mirax-jpeg", "reads", fmt="JPEG")
    mirax_variant("good-mirax-bmp-gap", "reads", fmt="BMP24", absent=[(1, 0)])
    mirax_variant("mirax-no-slidedat", "open-fails", r"Slidedat\.ini", edit=lambda f: (f / "Slidedat.ini").unlink())
    mirax_variant("mirax-index-version", "open-fails", r"doesn't have expected version",
                  edit=index_edit(lambda d: d.__setitem__(slice(0, 5), b"09.99")))
    mirax_variant("mirax-slide-id", "open-fails", r"matching slide identifier", edit=ini_edit("SLIDE_ID = ", "SLIDE_ID = x"))
    mirax_variant("mirax-index-cut", "open-fails", r"Can't read", edit=index_edit(lambda d: d.__delitem__(slice(90, None))))
    mirax_variant("mirax-page-loop", "open-fails", r"form a loop",
                  edit=index_edit(lambda d: struct.pack_into("<i", d, level0_page(d) + 4, level0_page(d))))
    mirax_variant("mirax-page-length", "open-fails", r"page length",
                  edit=index_edit(lambda d: struct.pack_into("<i", d, level0_page(d), 1 << 28)))
    mirax_variant("mirax-fileno", "open-fails", r"Invalid fileno", edit=entry_field(0, 3, 99))
    mirax_variant("mirax-image-index", "open-fails", r"outside of bounds", edit=entry_field(1, 0, 1 << 20))
    mirax_variant("mirax-image-offset", "read-fails", r"level 0 tile \(0,0\) at offset 2147483000: .*past the end",
                  edit=entry_field(0, 1, 2147483000), member="Data0000.dat")
    mirax_variant("mirax-missing-data-file", "open-fails", r"Data0001\.dat", edit=lambda f: (f / "Data0001.dat").unlink())
    mirax_variant("mirax-damaged-image", "clean", member="Data0000.dat",
                  edit=lambda f: (f / "Data0000.dat").write_bytes((f / "Data0000.dat").read_bytes()[:200]))
    def zoom_not_first(folder):
        ini_edit("HIER_COUNT = 1", "HIER_COUNT = 2")(folder)
        ini_edit("HIER_0_NAME = Slide zoom level", "HIER_0_NAME = Other\r\nHIER_1_NAME = Slide zoom level")(folder)

    mirax_variant("mirax-zoom-not-first", "open-fails", r"Slide zoom level not HIER_0", edit=zoom_not_first)
    mirax_variant("mirax-format", "open-fails", r"Unrecognized image format: GIF", edit=ini_edit("IMAGE_FORMAT = PNG", "IMAGE_FORMAT = GIF"))
    mirax_variant("mirax-positions-size", "open-fails", r"not of the expected size",
                  edit=ini_edit("CameraImageDivisionsPerSide = 2", "CameraImageDivisionsPerSide = 1"))
    mirax_variant("mirax-positions-zlib", "open-fails", r"decompressing position buffer",
                  edit=ini_edit("VIMSLIDE_POSITION_BUFFER", "StitchingIntensityLayer"))
    mirax_variant("mirax-zero-images", "open-fails", r"images_y <= 0", edit=ini_edit("IMAGENUMBER_Y = ", "IMAGENUMBER_Y = -"))
    mirax_variant("mirax-huge-image", "open-fails", r"too large",
                  edit=ini_edit("DIGITIZER_WIDTH = 64", "DIGITIZER_WIDTH = 64000000"))
    good_index = (out / "good-mirax" / "slide" / "Index.dat").read_bytes()
    for frac in (0.1, 0.4, 0.7, 0.95):
        cut = int(len(good_index) * frac)
        mirax_variant(f"trunc-mirax-index-{cut}", "clean", edit=lambda f, cut=cut: (f / "Index.dat").write_bytes(good_index[:cut]))

    # Olympus cellSens VSI: a .vsi beside its _name_ folder of .ets files; the ETS headers, table and tiles
    # damaged one at a time.
    def vsi_variant(name, expect, pattern="", edit=None, rgb=False, **kw):
        folder = out / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        world = img[None, None, :192, :256] if rgb else np.stack([img[:192, :256, 0], img[:192, :256, 2]])[:, None].astype(np.uint16) * 200
        vsi.write_vsi(folder / "slide.vsi", world, tile=64, **kw)
        if edit:
            ets = folder / "_slide_" / "stack1" / "frame_t.ets"
            data = bytearray(ets.read_bytes())
            edit(data)
            ets.write_bytes(bytes(data))
        entry = {"name": name, "file": f"{name}/slide.vsi", "expect": expect, "pattern": pattern}
        if expect == "read-fails":  # a tile's error names the .ets file it is in
            entry["names"] = f"{name}/_slide_/stack1/frame_t.ets"
        entries.append(entry)

    def ets_table(data, tile, field):  # field: 0 offset, 1 length of tile `tile`'s table entry
        coords, table = struct.unpack_from("<I", data, 12)[0], struct.unpack_from("<Q", data, 32)[0]
        return table + tile * (20 + 4 * coords) + 4 + 4 * coords + 8 * field

    vsi_variant("good-vsi-j2k16", "reads", codec="j2k")
    vsi_variant("good-vsi-raw16", "reads", codec="raw")
    vsi_variant("good-vsi-jpeg-rgb", "reads", rgb=True, codec="jpeg", overview=img[::8, ::8].copy(), drop={(0, 0, 0, 1, 1)})
    vsi_variant("vsi-no-sis", "open-fails", r"no SIS header", edit=lambda d: d.__setitem__(slice(0, 3), b"XYZ"))
    vsi_variant("vsi-no-ets-header", "open-fails", r"no ETS header", edit=lambda d: d.__setitem__(slice(64, 67), b"XYZ"))
    vsi_variant("vsi-table-cut", "open-fails", r"runs past the end", edit=lambda d: d.__delitem__(slice(len(d) - 30, None)))
    vsi_variant("vsi-tile-offset", "open-fails", r"tile 3 .* lies past the end",
                edit=lambda d: struct.pack_into("<Q", d, ets_table(d, 3, 0), 1 << 40))
    vsi_variant("vsi-tile-coords", "open-fails", r"tiles of 99 coordinates", edit=lambda d: struct.pack_into("<I", d, 12, 99))
    vsi_variant("vsi-tile-size", "open-fails", r"tiles of 0x64", edit=lambda d: struct.pack_into("<I", d, 64 + 28, 0))
    vsi_variant("vsi-sample-type", "open-fails", r"ETS type 7", edit=lambda d: struct.pack_into("<I", d, 64 + 8, 7))
    vsi_variant("vsi-tile-bytes", "read-fails", r"frame_t\.ets", codec="j2k",
                edit=lambda d: d.__setitem__(slice(64 + 228, 64 + 228 + 4), bytes(4)))
    good_ets = (out / "good-vsi-j2k16" / "_slide_" / "stack1" / "frame_t.ets").read_bytes()
    for frac in (0.02, 0.1, 0.5, 0.9, 0.99):
        cut = int(len(good_ets) * frac)
        vsi_variant(f"trunc-vsi-ets-{cut}", "clean", codec="j2k", edit=lambda d, cut=cut: d.__delitem__(slice(cut, None)))

    # Leica SCN: a BigTIFF with the collection's XML; the XML edited in place (same length).
    def leica_variant(name, expect, pattern="", old=None, new=None, **kw):
        path = out / f"{name}.scn"
        leica.write_scn(path, img, **{"mains": [(32, 32, 256, 192)], "dims": 2, "tile": 64, **kw})
        if old:
            data = path.read_bytes()
            assert old.encode() in data and len(new) <= len(old)
            path.write_bytes(data.replace(old.encode(), new.encode().ljust(len(old), b" "), 1))
        add(path.name, None, expect, pattern)

    leica_variant("good-leica", "reads")
    leica_variant("good-leica-two-images", "reads", mains=[(0, 0, 128, 128), (96, 64, 192, 160)])
    leica_variant("leica-missing-directory", "open-fails", r"No TIFF directory 7", old='ifd="2"', new='ifd="7"')
    leica_variant("leica-no-main-image", "open-fails", r"Can't find main image", illumination=["fluorescence"])
    grey = np.stack([img[:96, :128, 0], img[:96, :128, 2]]).astype(np.uint16) * 200
    leica_variant("good-leica-fluorescence", "reads", mains=[], fluorescence=[((0, 0, 128, 96), grey, ["A", "B"])])
    leica_variant("leica-fluorescence-channel-missing", "open-fails", r"dimensions for 3 of its 6 channels",
                  mains=[], fluorescence=[((0, 0, 128, 96), grey, ["A", "B"])], old='r="1" c="1"', new='r="1" c="5"')
    leica_variant("leica-bad-size", "open-fails", r"sizeX", old='<collection name="tw" uuid="urn:uuid:tw" sizeX="',
                  new='<collection name="tw" uuid="urn:uuid:tw" sizeQ="')
    leica_variant("leica-zero-dimension", "open-fails", r"not positive", old='<dimension sizeX="256"',
                  new='<dimension sizeX="0"  ')

    # Ventana BIF / TIFF: XMP packets edited in place (same length).
    def ventana_variant(name, expect, pattern="", old=None, new=None, **kw):
        path = out / f"{name}.bif"
        ventana.write_bif(path, img, **{"areas": [(8, 8, 4, 3)], "tile": 64, "overlap": (8, 4), "levels": 2, **kw})
        if old:
            data = path.read_bytes()
            assert old.encode() in data and len(new) <= len(old)
            path.write_bytes(data.replace(old.encode(), new.encode().ljust(len(old), b" "), 1))
        add(path.name, None, expect, pattern)

    ventana_variant("good-ventana", "reads")
    ventana_variant("good-ventana-tiff", "reads", bif=False)
    ventana_variant("ventana-tile-size", "open-fails", r"Tile size mismatch", old='Width="64" Height="64" NumRows="3"',
                    new='Width="32" Height="64" NumRows="3"')
    ventana_variant("ventana-direction", "open-fails", r"Bad direction", old='Direction="RIGHT"', new='Direction="DOWN"')
    ventana_variant("ventana-tile-number", "open-fails", r"out of bounds", old='Tile1="1"', new='Tile1="0"')
    ventana_variant("ventana-origins", "open-fails", r"inconsistent region metadata", old='<AOI1 OriginX="0" OriginY="0"/>',
                    new="")
    ventana_variant("ventana-level-order", "open-fails", r"Unexpected encounter with level", old="level=1 mag=20",
                    new="level=3 mag=20")
    ventana_variant("ventana-bad-xml", "open-fails", r"Parsing level 0 XML", old="<EncodeInfo Ver", new="<EncodeInfo <er")

    # Trestle: a MedScan TIFF with per-level overlaps in its description.
    def trestle_variant(name, expect, pattern="", old=None, new=None, **kw):
        path = out / f"{name}.tif"
        trestle.write_trestle(path, img, **{"tile": 64, "overlaps": ((8, 4), (4, 2)), "trim": 10, **kw})
        if old:
            data = path.read_bytes()
            assert old.encode() in data and len(new) <= len(old)
            path.write_bytes(data.replace(old.encode(), new.encode().ljust(len(old), b" "), 1))
        add(path.name, None, expect, pattern)

    trestle_variant("good-trestle", "reads")
    trestle_variant("trestle-huge-overlap", "open-fails", r"do not fit its tiles", old="OverlapsXY= 8 4", new="OverlapsXY= 99")
    trestle_variant("trestle-bad-overlaps", "reads", old="OverlapsXY= 8 4 4 2", new="OverlapsXY= x y z")

    # Sakura SVSlide: SQLite databases edited with SQL.
    def sakura_variant(name, expect, pattern="", sql=None, **kw):
        import sqlite3

        path = out / f"{name}.svslide"
        sakura.write_svslide(path, img, **{"tile": 64, "levels": 2, **kw})
        if sql:
            db = sqlite3.connect(path)
            db.executescript(sql)
            db.commit()
            db.close()
        add(path.name, None, expect, pattern)

    sakura_variant("good-sakura", "reads", missing=[(0, 1, 1)])
    sakura_variant("sakura-bad-tile-id", "open-fails", r"round-trip tile ID",
                   sql="UPDATE SVSlideBlobs SET id = 'T;00|0;1;0;0' WHERE id = 'T;0|0;1;0;0';")
    sakura_variant("sakura-short-header", "open-fails", r"Header is too short",
                   sql="UPDATE SVSlideBlobs SET data = x'01' WHERE id = 'Header';")
    sakura_variant("sakura-zero-tile-size", "open-fails", r"Invalid tile size: 0",
                   sql="UPDATE SVSlideBlobs SET data = zeroblob(32) WHERE id = 'Header';")
    sakura_variant("sakura-no-tiles", "open-fails", r"Couldn't find any tiles",
                   sql="DELETE FROM SVSlideBlobs WHERE id LIKE 'T;%';")
    sakura_variant("sakura-damaged-tile", "read-fails", r"level 0 tile \(1,0\).*green channel",
                   sql="UPDATE SVSlideBlobs SET data = x'FFD8FFDB' WHERE id = 'T;64|0;1;1;0';")
    sakura_variant("sakura-missing-metadata", "reads", sql="DROP TABLE SVHRScanDataXPO;")

    # Zeiss CZI: ZISRAW segments edited as bytes.
    def czi_variant(name, expect, pattern="", edit=None, world=img, **kw):
        data = bytearray(czi.build_czi(world, **{"tile": 64, "levels": 2, "scenes": ((0, 0, 4, 3),), **kw}))
        if edit:
            edit(data)
        add(f"{name}.czi", bytes(data), expect, pattern)

    def replace(old, new, last=False):
        def edit(d):
            at = d.rindex(old) if last else d.index(old)
            d[at:at + len(new)] = new
        return edit

    czi_variant("good-czi", "reads")
    czi_variant("good-czi-zstd1-overlap", "reads", compression=6, overlap=(8, 4))
    czi_variant("good-czi-jpegxr", "reads", compression=4)
    czi_variant("czi-directory-magic", "open-fails", r'No magic string "ZISRAWDIRECTORY"',
                edit=replace(b"ZISRAWDIRECTORY", b"ZISRAWDIRECTORX"))
    czi_variant("czi-dimension", "open-fails", r"Unrecognized subblock dimension", edit=replace(b"M\0\0\0", b"Q\0\0\0"))
    czi_variant("czi-scene", "open-fails", r"No subblocks for scene 1", edit=replace(b"<SizeS>1</SizeS>", b"<SizeS>2</SizeS>"))
    planes = np.stack([np.stack([img[..., c].astype(np.uint16) * 200 + 50 * z for z in range(2)]) for c in range(3)])[None]
    czi_variant("good-czi-gray16-planes", "reads", world=planes, compression=6, hilo=True)
    czi_variant("good-czi-gray8-jpegxr", "reads", world=planes[:, :2, :1].astype(np.uint8), compression=4)
    def third_subblock(d):  # tile 0 of channel 0, z 1 at level 0 (each plane's levels follow each other)
        at = d.index(b"ZISRAWSUBBLOCK", d.index(b"ZISRAWSUBBLOCK", d.index(b"ZISRAWSUBBLOCK") + 1) + 1)
        d[at + 300:at + 360] = bytes(60)

    czi_variant("czi-plane-damaged-zstd", "read-fails", r"plane \(channel 0, z 1, t 0\) tile \(0,0\)", world=planes,
                compression=5, edit=third_subblock)
    czi_variant("czi-pixel-type", "open-fails", r"subblocks of pixel types GRAY8 and BGR24",
                edit=lambda d: d.__setitem__(slice(d.index(b"DV", d.index(b"ZISRAWDIRECTORY")) + 2,
                                                   d.index(b"DV", d.index(b"ZISRAWDIRECTORY")) + 6), bytes(4)))
    czi_variant("czi-subblock-past-eof", "open-fails", r"past the end",
                edit=lambda d: d.__setitem__(slice(d.index(b"DV", d.index(b"ZISRAWDIRECTORY")) + 6,
                                                   d.index(b"DV", d.index(b"ZISRAWDIRECTORY")) + 14),
                                             (1 << 40).to_bytes(8, "little")))
    czi_variant("czi-damaged-zstd", "read-fails", r"level 0 tile \(0,0\)", compression=5,
                edit=lambda d: d.__setitem__(slice(d.index(b"ZISRAWSUBBLOCK") + 300, d.index(b"ZISRAWSUBBLOCK") + 360), bytes(60)))
    good_czi = czi.build_czi(img, tile=64, levels=2)
    for frac in (0.05, 0.3, 0.6, 0.95):
        add(f"trunc-czi-{int(len(good_czi) * frac)}.czi", good_czi[: int(len(good_czi) * frac)], "clean", "")

    # Not slides at all.
    add("empty.tif", b"", "open-fails", r"empty")
    add("not-a-tiff.png", b"\x89PNG\r\n\x1a\n" + bytes(100), "open-fails", r"not a TIFF file")
    add("text.tif", b"this is not an image\n" * 10, "open-fails", r"not a TIFF file")
    add("header-only.tif", b"II*\x00", "open-fails", r"not a TIFF file")
    add("bigtiff-bad-header.tif", b"II+\x00\x08\x00\x01\x00" + bytes(16), "open-fails", r"malformed BigTIFF header")
    (out / "a-directory.tif").mkdir(exist_ok=True)
    entries.append({"name": "a-directory.tif", "file": "a-directory.tif", "expect": "open-fails", "pattern": "directory"})

    manifest = out / "catalogue.json"
    manifest.write_text(json.dumps(entries, indent=1))
    return entries


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "build/catalogue")
    entries = build(target)
    print(f"{len(entries)} catalogue entries in {target}")
