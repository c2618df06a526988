// Writing slides: tilewise::convert writes a slide it reads as a tiled pyramidal TIFF, an OME-TIFF, an
// OME-Zarr group or a DICOM WSI series; tilewise::write_image writes an image the caller holds (a mask, a
// heatmap, a model's output) the same way.
//
// The TIFFs are BigTIFFs. Level 0 is the slide's level 0 (an RGB slide's RGB rendering, the background where it
// stores nothing - in OME-TIFF and OME-Zarr of each focal plane, else of its default one; every channel,
// focal plane and time point of other slides at its own sample type); each
// next level halves the one before with a 2 x 2 box (write/downsample.h; or, for label masks, takes each
// box's top-left pixel) until a level fits one tile.
// - *.tif, *.tiff (RGB slides): the pyramid's levels as the main chain of directories, largest first (the
//   reduced ones marked NewSubfileType 1): OpenSlide reads it as generic-tiff, tifffile as one series with
//   its levels, libvips and QuPath as a pyramid.
// - *.ome.tif, *.ome.tiff: one directory per plane in XYCZT order, each plane's reduced levels its SubIFDs,
//   the OME-XML (channels with names, colours, wavelengths, exposure; physical pixel size) in the first
//   directory's description: tifffile, bioio-ome-tiff, QuPath and Bio-Formats read it as one image with
//   its pyramid; OpenSlide reads its first plane's level 0 as generic-tiff.
// - *.zarr (format "ome-zarr"): an OME-Zarr 0.5 group (Zarr v3; write/ome_zarr_writer.h), each level an
//   array over (t, c, z, y, x) at the slide's own sample type (an RGB slide's as three uint8 channels),
//   sharded, zstd (or gzip, or raw) chunks of one tile, with NGFF multiscales and omero metadata: zarr,
//   ome-zarr-py, napari and bioio read it.
// - *.svs (format "svs"; RGB slides): an Aperio SVS (write/svs.h): the generic pyramid with Aperio's
//   descriptions (mpp, objective power), a thumbnail as directory 1 and the slide's label and macro, which
//   OpenSlide, tiffslide and cuCIM read as an Aperio slide with its associated images.
// - format "dicom" (slides with mpp): a folder holding a DICOM WSI series, one VL Whole Slide Microscopy
//   Image instance per level (write/dicom_wsi_writer.h), which pydicom, wsidicom, OpenSlide and PACS read;
//   RGB as JPEG baseline or uncompressed frames, the slide's label and macro as LABEL and OVERVIEW
//   instances (JPEG); channels of 8- or 16-bit unsigned samples (one time point) as one optical path each
//   of MONOCHROME2 frames, their focal planes in TILED_FULL order with the Spacing Between Slices the
//   source states (ImageAxes::z_spacing), JPEG-LS lossless with an Extended Offset Table (levels pass
//   4 GiB) or uncompressed.
// Microns per pixel become the resolution tags, an RGB slide's ICC profile is carried over.
//
// Streaming: each plane's level 0 is read in bands of tile rows, each band's tiles encoded on the worker
// pool and written while the next levels form from it, so memory stays a few bands of each level (about
// 2 x width x tile x pixel bytes) whatever the slide's size. The file is written under a temporary name beside the output and renamed when complete;
// on any error it is removed and nothing is left at the output path. Errors reading the slide name its
// file, level and tile (and plane).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tilewise/slide.h"
#include "tilewise/status.h"

namespace tilewise {

struct ConvertOptions {
  // "" (from the output's name: *.ome.tif[f] OME-TIFF, other *.tif[f] generic TIFF, *.svs Aperio SVS,
  // *.zarr OME-Zarr), "tiff", "ome-tiff", "svs", "ome-zarr", "dicom" (a folder of DICOM WSI instances)
  std::string format;
  int32_t tile_size = 256;      // a multiple of 16, 16 to 4096
  // "auto" (OME-Zarr: zstd; else JPEG for RGB slides, deflate for channels), "jpeg" (YCbCr; 8-bit RGB
  // only; not OME-Zarr), "deflate" (lossless; not DICOM), "zstd" (lossless, TIFF compression 50000; not
  // DICOM), "lzw" (lossless, TIFF compression 5; TIFF outputs only), "jpegls" (lossless JPEG-LS; DICOM
  // only, the default there for channels), "jpeg2000" (lossy, at `quality`) and "jpeg2000-lossless" (8- or
  // 16-bit samples; TIFF compression 33005 and DICOM; not OME-Zarr), "none"
  std::string codec = "auto";
  int quality = 90;             // JPEG and lossy JPEG 2000 quality, 1-100
  bool subsample = true;        // JPEG chroma 4:2:0; false: 4:4:4
  int max_levels = 0;           // at most this many levels; 0: down to the level that fits one tile
  // How each level is made from the one before: "mean" (of each 2 x 2 box) or "nearest" (its top-left
  // pixel: label masks keep their labels)
  std::string downsample = "mean";
  // A damaged tile of the source (a read failing with StatusCode::kCorrupt): false, the conversion stops
  // with that error; true, its pixels are written as background (white for RGB, 0 for channels) and
  // `skipped` (when set) is called on the converting thread with the error, which names the file, level,
  // tile (and plane), once per damaged source tile. Other errors (I/O) always stop the conversion.
  bool skip_damaged = false;
  std::function<void(const Status& error)> skipped;
  // JPEG output of an RGB slide whose level 0 is JPEG tiles of the output's size, coded as the output's
  // (baseline YCbCr, the same chroma subsampling): level 0's tiles are copied as the file stores them
  // (Slide::read_stored_tile), not decoded and encoded again - their pixels stay the source's exactly; the
  // levels below are still made from the decoded level 0. Tiles that do not qualify are encoded.
  bool copy_tiles = false;
  // Where the pixels are halved and encoded: the CPU (the worker pool), or a CUDA device ({kCuda, n}):
  // level 0 read into device memory (the GPU's decoders where the slide's tiles allow, as Slide reads to a
  // device), each level halved by a kernel and its tiles encoded by nvImageCodec - JPEG by nvJPEG's CUDA
  // encoder, JPEG 2000 by nvJPEG2000 - so the pixels pass through host memory only as the encoded tiles.
  // The same streams as the CPU writes for the same options, not the same bytes (JPEG within a level or two;
  // lossless JPEG 2000 keeps the pixels read, where a JPEG source's tiles decoded by the GPU are within 1-2
  // of libjpeg-turbo's). On a device: RGB slides with codec jpeg (or auto), jpeg2000 or jpeg2000-lossless
  // (InvalidArgument otherwise); Unsupported with the reason without a usable GPU.
  Device device{};
  // Called on the converting thread after each band of level 0 with the rows written and the level's
  // height; a status that is not ok stops the conversion with that status.
  std::function<Status(int64_t rows_done, int64_t rows_total)> progress;
};

// Writes `slide` to `output` (see above). InvalidArgument for options out of range, an output name of a
// format this does not write, a slide of channels to a generic TIFF, JPEG for channels or to OME-Zarr, a
// DICOM series of a slide without mpp, a folder output (DICOM, OME-Zarr) into a folder that is not empty;
// Unsupported for a DICOM series of channels of other samples, of time points, or of several focal planes
// whose spacing the source does not state.
Status convert(const Slide& slide, const std::string& output, const ConvertOptions& options = {});

// An image the caller holds, to write as convert writes a slide.
struct WritableImage {
  std::string name;                 // names the image in the output's metadata (a DICOM series' container)
  int64_t width = 0, height = 0;    // level 0
  // rgb: z x t planes of 3 interleaved uint8 samples (the outputs other than OME-TIFF and OME-Zarr take
  // default_z's); else channels x z x t planes of one sample of sample_type (channel_info: names and colours)
  ImageAxes axes;
  std::optional<std::pair<double, double>> mpp;  // micrometres per pixel (x, y) of level 0
  std::vector<uint8_t> icc_profile;              // an RGB image's colour profile, when known
  std::optional<double> objective_power;         // the scan's magnification (an SVS's AppMag)
  std::string barcode;                           // the slide label's barcode, when known (a DICOM label's)
  // Images that go with it, by name ("label", "macro"): an SVS and a DICOM series keep them (the other
  // outputs do not)
  std::vector<std::pair<std::string, RgbImage>> associated_images;
  // Fills `out` (width x rows pixels of host memory, `out.channels` samples) with the rows from y of plane
  // (c, z, t) (rgb: c is 0). Called on the writing thread, rows in order, each plane's
  // rows before the next plane's; an error stops the writing with it.
  std::function<Status(int32_t c, int32_t z, int32_t t, int64_t y, int32_t rows, const ImageView& out)> read_rows;
};

// Stores the DICOM instances (*.dcm) of `folder` - a series convert() wrote - on a DICOMweb server with
// STOW-RS: one POST per instance to `dicomweb_url` + "/studies" (dicomweb_url: the service's root, such as
// http://host:8042/dicom-web), `headers` ("Name: value", e.g. "Authorization: Bearer <token>") on each.
// IoError naming the URL, the instance and the HTTP status when the server does not store one (401/403:
// access denied); Unsupported when tilewise was built without libcurl.
Status stow_dicom_folder(const std::string& folder, const std::string& dicomweb_url,
                         const std::vector<std::string>& headers = {});

// Writes `image` to `output` as convert() writes a slide (copy_tiles does not apply); InvalidArgument as
// convert(), and for an image without size, planes or read_rows.
Status write_image(const WritableImage& image, const std::string& output, const ConvertOptions& options = {});

}  // namespace tilewise
