"""Writers for DICOM VL Whole Slide Microscopy series, for testing against OpenSlide 4.0.1 and pydicom.

One file per pyramid level (and per associated image), all of one series, as scanners and converters write
them. Frames are encoded here (Pillow's libjpeg-turbo for JPEG baseline, imagecodecs for JPEG 2000 and
JPEG-LS) and stored with pydicom: encapsulated with a Basic Offset Table, an Extended Offset Table, or
neither (readers must then walk the fragments); native (explicit VR little endian) frames as they are.
TILED_SPARSE files list each frame's position in the per-frame functional groups and may leave tiles out.

Images of planes - (paths, focal planes, H, W) MONOCHROME2 samples (uint8 or uint16) or
(paths, focal planes, H, W, 3) RGB - store every optical path's every focal plane: TILED_FULL frames tile by
tile, then by focal plane, then by optical path; TILED_SPARSE frames with their Z offset and Optical Path
Identification in the per-frame groups.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import imagecodecs
import numpy as np
from PIL import Image
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.encaps import encapsulate, encapsulate_extended
from pydicom.sequence import Sequence as DicomSequence
from pydicom.uid import (ExplicitVRLittleEndian, ImplicitVRLittleEndian, JPEG2000, JPEG2000Lossless, JPEGBaseline8Bit,
                         JPEGLSLossless, JPEGLSNearLossless, generate_uid)

WSI_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.77.1.6"
SYNTAXES = {"jpeg": JPEGBaseline8Bit, "jpeg2000": JPEG2000, "jpeg2000-lossless": JPEG2000Lossless,
            "raw": ExplicitVRLittleEndian, "raw-implicit": ImplicitVRLittleEndian, "jpegls": JPEGLSLossless,
            "jpegls-near": JPEGLSNearLossless}


def encode_frame(tile: np.ndarray, codec: str, *, quality: int = 85, subsampling: str = "4:2:2") -> Tuple[bytes, str]:
    """One frame's bytes and its Photometric Interpretation."""
    if tile.ndim == 2:  # grey
        if codec == "jpeg":
            b = io.BytesIO()
            Image.fromarray(tile).save(b, "JPEG", quality=quality)
            return b.getvalue(), "MONOCHROME2"
        if codec == "jpeg2000":
            return imagecodecs.jpeg2k_encode(tile, level=40, codecformat="j2k"), "MONOCHROME2"
        if codec == "jpeg2000-lossless":
            return imagecodecs.jpeg2k_encode(tile, level=0, codecformat="j2k", reversible=True), "MONOCHROME2"
        if codec == "jpegls":
            return imagecodecs.jpegls_encode(tile, level=0), "MONOCHROME2"
        if codec == "raw":
            return np.ascontiguousarray(tile, dtype="<" + tile.dtype.str[1:]).tobytes(), "MONOCHROME2"
        raise ValueError(codec)
    if codec == "jpeg":
        b = io.BytesIO()
        Image.fromarray(tile).save(b, "JPEG", quality=quality, subsampling=subsampling)
        return b.getvalue(), "YBR_FULL_422"  # Pillow writes YCbCr (JFIF) whatever the subsampling
    if codec == "jpeg-rgb":  # JPEG without colour transform (Adobe marker, components R, G, B)
        return imagecodecs.jpeg8_encode(tile, level=quality, colorspace="RGB", outcolorspace="RGB"), "RGB"
    if codec == "jpeg2000":
        return imagecodecs.jpeg2k_encode(tile, level=40, codecformat="j2k", mct=True), "YBR_ICT"
    if codec == "jpeg2000-lossless":
        return imagecodecs.jpeg2k_encode(tile, level=0, codecformat="j2k", reversible=True, mct=False), "RGB"
    if codec == "jpegls":
        return imagecodecs.jpegls_encode(tile, level=0), "RGB"
    if codec == "jpegls-near":  # near-lossless: each sample within 2
        return imagecodecs.jpegls_encode(tile, level=2), "RGB"
    if codec in ("raw", "raw-implicit"):
        return np.ascontiguousarray(tile).tobytes(), "RGB"
    raise ValueError(codec)


def _tiles(image: np.ndarray, th: int, tw: int) -> List[Tuple[int, int, np.ndarray]]:
    """(row, column, tile) row-major, edge tiles padded with white (grey: the type's maximum) to the full tile
    size."""
    h, w = image.shape[:2]
    out = []
    for r in range(0, h, th):
        for c in range(0, w, tw):
            t = np.full((th, tw) + image.shape[2:], np.iinfo(image.dtype).max, image.dtype)
            piece = image[r:r + th, c:c + tw]
            t[:piece.shape[0], :piece.shape[1]] = piece
            out.append((r, c, t))
    return out


def _common(ds: Dataset, series: Dict[str, str], image_type: Sequence[str]) -> None:
    ds.SOPClassUID = WSI_SOP_CLASS
    ds.SOPInstanceUID = generate_uid()
    ds.StudyInstanceUID = series["study"]
    ds.SeriesInstanceUID = series["series"]
    ds.FrameOfReferenceUID = series["frame"]
    ds.Modality = "SM"
    ds.ImageType = list(image_type)
    ds.Manufacturer = "tilewise"
    ds.ManufacturerModelName = "generator"
    ds.PatientName = "Test^Slide"
    ds.PatientID = "TW-1"
    ds.StudyDate = "20261201"
    ds.SeriesNumber = 1
    ds.ContainerIdentifier = "TW-SLIDE-1"
    ds.SamplesPerPixel = 3
    ds.PlanarConfiguration = 0
    ds.BitsAllocated = 8
    ds.BitsStored = 8
    ds.HighBit = 7
    ds.PixelRepresentation = 0
    ds.BurnedInAnnotation = "NO"
    ds.SpecimenLabelInImage = "NO"
    ds.VolumetricProperties = "VOLUME"


def _optical_path(ds: Dataset, objective: Optional[float], icc: Optional[bytes],
                  paths: Sequence[dict] = ({"id": "1"},)) -> None:
    """The Optical Path Sequence: one item per `paths` entry (id; optional description and wavelength in nm,
    which make it a fluorescence path)."""
    items = []
    for spec in paths:
        path = Dataset()
        path.OpticalPathIdentifier = spec["id"]
        if "description" in spec:
            path.OpticalPathDescription = spec["description"]
        code = Dataset()
        kind = Dataset()
        if "wavelength" in spec:
            path.IlluminationWaveLength = spec["wavelength"]
            kind.CodeValue, kind.CodingSchemeDesignator, kind.CodeMeaning = "111743", "DCM", "Epifluorescence illumination"
        else:
            code.CodeValue, code.CodingSchemeDesignator, code.CodeMeaning = "414298005", "SCT", "Full Spectrum"
            path.IlluminationColorCodeSequence = DicomSequence([code])
            kind.CodeValue, kind.CodingSchemeDesignator, kind.CodeMeaning = "111744", "DCM", "Brightfield illumination"
        path.IlluminationTypeCodeSequence = DicomSequence([kind])
        if objective is not None:
            path.ObjectiveLensPower = objective
        if icc is not None:
            path.ICCProfile = icc
        items.append(path)
    ds.OpticalPathSequence = DicomSequence(items)
    ds.NumberOfOpticalPaths = len(items)


def write_instance(path, image: np.ndarray, *, series: Dict[str, str], tile: int = 256, codec: str = "jpeg",
                   image_type: Sequence[str] = ("ORIGINAL", "PRIMARY", "VOLUME", "NONE"), spacing_mm: float = 0.00025,
                   objective: Optional[float] = 20.0, icc: Optional[bytes] = None, offsets: str = "basic",
                   sparse_missing: Optional[Sequence[int]] = None, fragments_per_frame: int = 1,
                   subsampling: str = "4:2:2", instance_number: int = 1, quality: int = 85,
                   paths: Sequence[dict] = ({"id": "1"},), z_offsets_um: Sequence[float] = (0.0,),
                   sparse: bool = False) -> Path:
    """Writes one WSI instance of `image` as `tile`-sized frames (tile 0: one frame of the whole image). offsets: "basic" (a Basic Offset Table),
    "extended" (an Extended Offset Table and an empty basic one) or "none"; sparse_missing: frame indices
    (row-major over the full grid) left out of a TILED_SPARSE file; fragments_per_frame > 1 splits each
    encapsulated frame (only with offsets "basic"). An image of planes (see the module's docstring) names its
    optical paths in `paths` and its focal planes' Z offsets (micrometres, evenly spaced) in `z_offsets_um`;
    `sparse` writes TILED_SPARSE frames even with nothing missing."""
    path = Path(path)
    planar = image.ndim == 4 or (image.ndim == 5)
    stack = image if planar else image[None, None]
    assert stack.shape[:2] == (len(paths), len(z_offsets_um)), (stack.shape, paths, z_offsets_um)
    h, w = stack.shape[2:4]
    grey = stack.ndim == 4
    th, tw = (tile, tile) if tile else (h, w)
    frames, photometric, placed = [], "RGB", []
    missing = set(sparse_missing or ())
    for p in range(stack.shape[0]):
        for z in range(stack.shape[1]):
            tiles = _tiles(stack[p, z], th, tw)
            for i, (r, c, t) in enumerate(tiles):
                if i in missing:
                    continue
                data, photometric = encode_frame(t, codec, subsampling=subsampling, quality=quality)
                frames.append(data)
                placed.append((r, c, z, p))
    if sparse and sparse_missing is None:
        sparse_missing = ()

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = WSI_SOP_CLASS
    syntax = SYNTAXES["jpeg" if codec.startswith("jpeg-") else codec]
    meta.TransferSyntaxUID = syntax
    ds = Dataset()
    ds.file_meta = meta
    _common(ds, series, image_type)
    meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
    ds.InstanceNumber = instance_number
    ds.Rows = th
    ds.Columns = tw
    ds.PhotometricInterpretation = photometric
    ds.TotalPixelMatrixColumns = w
    ds.TotalPixelMatrixRows = h
    ds.TotalPixelMatrixFocalPlanes = len(z_offsets_um)
    if grey:
        ds.SamplesPerPixel = 1
        del ds.PlanarConfiguration
        ds.BitsAllocated = ds.BitsStored = stack.dtype.itemsize * 8
        ds.HighBit = ds.BitsStored - 1
    ds.NumberOfFrames = len(frames)
    ds.ImagedVolumeWidth = w * spacing_mm
    ds.ImagedVolumeHeight = h * spacing_mm
    ds.ImagedVolumeDepth = 0.001
    origin = Dataset()
    origin.XOffsetInSlideCoordinateSystem = 20.0
    origin.YOffsetInSlideCoordinateSystem = 40.0
    origin.ZOffsetInSlideCoordinateSystem = z_offsets_um[0]
    ds.TotalPixelMatrixOriginSequence = DicomSequence([origin])
    shared = Dataset()
    measures = Dataset()
    measures.PixelSpacing = [spacing_mm, spacing_mm]
    measures.SliceThickness = 0.001
    if len(z_offsets_um) > 1:
        measures.SpacingBetweenSlices = (z_offsets_um[1] - z_offsets_um[0]) / 1000.0  # millimetres
    shared.PixelMeasuresSequence = DicomSequence([measures])
    ds.SharedFunctionalGroupsSequence = DicomSequence([shared])
    _optical_path(ds, objective, icc, paths)
    ds.LossyImageCompression = "01" if codec in ("jpeg", "jpeg-rgb", "jpeg2000", "jpegls-near") else "00"
    if sparse_missing is not None:
        ds.DimensionOrganizationType = "TILED_SPARSE"
        per_frame = []
        for r, c, z, p in placed:
            item = Dataset()
            pos = Dataset()
            pos.ColumnPositionInTotalImagePixelMatrix = c + 1
            pos.RowPositionInTotalImagePixelMatrix = r + 1
            pos.XOffsetInSlideCoordinateSystem = 20.0 + c * spacing_mm
            pos.YOffsetInSlideCoordinateSystem = 40.0 + r * spacing_mm
            pos.ZOffsetInSlideCoordinateSystem = z_offsets_um[z]
            item.PlanePositionSlideSequence = DicomSequence([pos])
            ident = Dataset()
            ident.OpticalPathIdentifier = paths[p]["id"]
            item.OpticalPathIdentificationSequence = DicomSequence([ident])
            per_frame.append(item)
        ds.PerFrameFunctionalGroupsSequence = DicomSequence(per_frame)
    else:
        ds.DimensionOrganizationType = "TILED_FULL"

    if codec in ("raw", "raw-implicit"):
        ds.PixelData = b"".join(frames)
    elif offsets == "extended":
        data, table, lengths = encapsulate_extended(frames)
        ds.PixelData = data
        ds.ExtendedOffsetTable = table
        ds.ExtendedOffsetTableLengths = lengths
    else:
        ds.PixelData = encapsulate(frames, fragments_per_frame=fragments_per_frame, has_bot=offsets == "basic")
    if codec not in ("raw", "raw-implicit"):
        ds["PixelData"].VR = "OB"
        ds["PixelData"].is_undefined_length = True
    ds.save_as(path, enforce_file_format=True)
    return path


def new_series() -> Dict[str, str]:
    return {"study": generate_uid(), "series": generate_uid(), "frame": generate_uid()}


def write_series(folder, image: np.ndarray, *, levels: int = 3, tile: int = 256, codec: str = "jpeg",
                 associated: bool = True, name: str = "slide", **kwargs) -> Path:
    """A pyramid of `levels` files (each level half the previous one) plus label, overview and thumbnail
    files; returns the level-0 file's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    series = new_series()
    spacing = kwargs.pop("spacing_mm", 0.00025)
    current = image
    first = None
    for level in range(levels):
        image_type = ("ORIGINAL", "PRIMARY", "VOLUME", "NONE") if level == 0 else ("DERIVED", "PRIMARY", "VOLUME", "RESAMPLED")
        p = write_instance(folder / f"{name}-level{level}.dcm", current, series=series, tile=tile, codec=codec,
                           image_type=image_type, spacing_mm=spacing * (2 ** level), instance_number=level + 1, **kwargs)
        first = first or p
        h, w = current.shape[:2]
        current = np.asarray(Image.fromarray(current).resize((max(1, w // 2), max(1, h // 2)), Image.BILINEAR))
    if associated:
        label = np.full((200, 300, 3), 240, np.uint8)
        label[50:150, 50:250] = (20, 20, 120)
        macro = np.full((240, 640, 3), 200, np.uint8)
        macro[40:200, 200:600] = (180, 120, 160)
        h, w = image.shape[:2]
        thumb = np.asarray(Image.fromarray(image).resize((max(1, w // 16), max(1, h // 16)), Image.BILINEAR))
        for kind, img in (("LABEL", label), ("OVERVIEW", macro), ("THUMBNAIL", thumb)):
            flavour = ("ORIGINAL", "PRIMARY", kind, "NONE" if kind != "THUMBNAIL" else "RESAMPLED")
            write_instance(folder / f"{name}-{kind.lower()}.dcm", img, series=series, tile=0,
                           codec="jpeg" if codec in ("raw", "raw-implicit", "jpegls", "jpegls-near") else codec,
                           image_type=flavour,
                           spacing_mm=spacing * 16, objective=None)
    return first


def write_concatenation(whole, folder, first_part_frames: int) -> List[Path]:
    """Splits the encapsulated instance `whole` into two instances of one concatenation in `folder`
    (part1.dcm holding its first `first_part_frames` frames, part2.dcm the rest); returns their paths."""
    import pydicom
    from pydicom.encaps import encapsulate, generate_frames
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ds = pydicom.dcmread(whole)
    frames = list(generate_frames(ds.PixelData, number_of_frames=int(ds.NumberOfFrames)))
    uid = generate_uid()
    out = []
    for number, (start, part) in enumerate([(0, frames[:first_part_frames]),
                                            (first_part_frames, frames[first_part_frames:])], start=1):
        piece = pydicom.dcmread(whole)
        piece.SOPInstanceUID = piece.file_meta.MediaStorageSOPInstanceUID = generate_uid()
        piece.ConcatenationUID = uid
        piece.InConcatenationNumber = number
        piece.InConcatenationTotalNumber = 2
        piece.ConcatenationFrameOffsetNumber = start
        piece.NumberOfFrames = len(part)
        piece.PixelData = encapsulate(part)
        piece.save_as(folder / f"part{number}.dcm")
        out.append(folder / f"part{number}.dcm")
    return out
