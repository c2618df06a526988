#include "write/output_plan.h"

#include <algorithm>
#include <cctype>

namespace tilewise::write {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

}  // namespace

std::string output_format(const std::string& output, const std::string& named) {
  if (!named.empty()) return named;
  if (ends_with(output, ".ome.tif") || ends_with(output, ".ome.tiff")) return "ome-tiff";
  if (ends_with(output, ".tif") || ends_with(output, ".tiff")) return "tiff";
  if (ends_with(output, ".zarr") || ends_with(output, ".zarr/")) return "ome-zarr";
  if (ends_with(output, ".svs")) return "svs";
  return "";
}

Result<OutputPlan> plan_output(const WritableImage& image, const std::string& output, const ConvertOptions& options) {
  const ImageAxes& axes = image.axes;
  if (image.width <= 0 || image.height <= 0 || !image.read_rows ||
      (!axes.rgb && (axes.channels <= 0 || axes.z <= 0 || axes.t <= 0))) {
    return invalid_argument(output + ": the image has no pixels to write (a size, planes and read_rows are needed)");
  }
  const std::string format = output_format(output, options.format);
  if (format.empty()) {
    return invalid_argument(output + ": the output's name must end in .tif or .tiff (a pyramidal TIFF), .ome.tif "
                            "or .ome.tiff (an OME-TIFF), .svs (Aperio) or .zarr (an OME-Zarr group), or the format be "
                            "named (dicom: a folder of instances)");
  }
  if (format != "tiff" && format != "ome-tiff" && format != "svs" && format != "dicom" && format != "ome-zarr") {
    return invalid_argument("format \"" + format + "\" is not one convert writes (tiff, ome-tiff, svs, ome-zarr, dicom)");
  }
  if (format == "svs" && !axes.rgb) {
    return invalid_argument(output + ": an SVS holds RGB slides; the image has channels: name the output *.ome.tif");
  }
  if (format == "tiff" && !axes.rgb) {
    return invalid_argument(output + ": the image has channels (" + std::to_string(axes.channels) + " of " +
                            sample_type_name(axes.sample_type) + ", z " + std::to_string(axes.z) + ", t " +
                            std::to_string(axes.t) + "), which a generic TIFF does not describe: name the output *.ome.tif");
  }
  if (format == "dicom" && !axes.rgb && (axes.t > 1 || (axes.sample_type != SampleType::kUint8 && axes.sample_type != SampleType::kUint16))) {
    return unsupported(output + ": a DICOM WSI series holds channels of 8- or 16-bit unsigned samples without time points; the "
                       "image has " + sample_type_name(axes.sample_type) + " samples and " + std::to_string(axes.t) +
                       " time points: write an OME-TIFF or OME-Zarr");
  }
  if (format == "dicom" && !axes.rgb && axes.z > 1 && !(axes.z_spacing > 0)) {
    // TILED_FULL focal planes are placed by their spacing (Spacing Between Slices), which readers such as
    // wsidicom require
    return unsupported(output + ": a DICOM WSI series of " + std::to_string(axes.z) +
                       " focal planes needs their spacing, which the source does not state: write an OME-TIFF or OME-Zarr");
  }
  if (format == "dicom" && !image.mpp) {
    return invalid_argument(output + ": the image states no pixel size (mpp), which a DICOM WSI instance must carry");
  }
  if (options.tile_size < 16 || options.tile_size > 4096 || options.tile_size % 16 != 0) {
    return invalid_argument("tile size " + std::to_string(options.tile_size) + " is not a multiple of 16 from 16 to 4096");
  }
  if (options.quality < 1 || options.quality > 100) {
    return invalid_argument("quality " + std::to_string(options.quality) + " is not 1 to 100");
  }
  if (options.max_levels < 0) return invalid_argument("max_levels must be >= 0");
  if (options.downsample != "mean" && options.downsample != "nearest") {
    return invalid_argument("downsample \"" + options.downsample + "\" is not mean or nearest");
  }
  const Downsample filter = options.downsample == "nearest" ? Downsample::kNearest : Downsample::kMean;
  const bool zarr = format == "ome-zarr";
  const std::string named_codec = options.codec != "auto" ? options.codec
                                 : zarr                   ? "zstd"
                                 : axes.rgb               ? "jpeg"
                                 : format == "dicom"      ? "jpegls"  // channels: lossless, past 4 GiB
                                                          : "deflate";
  TW_ASSIGN_OR_RETURN(const TileCodec codec, tile_codec(named_codec));
  if (codec == TileCodec::kJpeg && !axes.rgb) {
    return invalid_argument("jpeg tiles are 8-bit RGB; the image's channels are " + std::string(sample_type_name(axes.sample_type)) +
                            ": write them with codec deflate or none");
  }
  if (format == "dicom" && codec != TileCodec::kJpeg && codec != TileCodec::kJpegLs && !is_jpeg2000(codec) &&
      codec != TileCodec::kNone) {
    return invalid_argument(std::string("DICOM WSI frames are JPEG, JPEG-LS, JPEG 2000 or uncompressed (codec jpeg, jpegls, "
                                        "jpeg2000, jpeg2000-lossless or none), not ") +
                            codec_name(codec));
  }
  if (is_jpeg2000(codec) && axes.sample_type != SampleType::kUint8 && axes.sample_type != SampleType::kUint16) {
    return invalid_argument(std::string("JPEG 2000 tiles hold unsigned 8- or 16-bit samples; the image's are ") +
                            sample_type_name(axes.sample_type));
  }
  if (format != "dicom" && codec == TileCodec::kJpegLs) {
    return invalid_argument("jpegls frames are written to DICOM only (TIFF has no JPEG-LS compression code)");
  }
  if (zarr && codec != TileCodec::kZstd && codec != TileCodec::kDeflate && codec != TileCodec::kNone) {
    return invalid_argument(std::string("OME-Zarr chunks are zstd, deflate or uncompressed, not ") + codec_name(codec) +
                            " (Zarr has no standard codec for it)");
  }
  if (options.device.type == DeviceType::kCuda && (!axes.rgb || (codec != TileCodec::kJpeg && !is_jpeg2000(codec)))) {
    return invalid_argument(std::string("convert on the GPU writes RGB slides with codec jpeg, jpeg2000 or jpeg2000-lossless; ") +
                            (axes.rgb ? std::string("not ") + codec_name(codec) : std::string("the image has channels")) +
                            ": convert on the CPU");
  }
  OutputPlan plan;
  plan.format = format;
  plan.coding = TileCoding{codec, options.quality, options.subsample, zarr};
  plan.filter = filter;
  plan.samples = axes.rgb ? 3 : 1;
  plan.type = axes.rgb ? SampleType::kUint8 : axes.sample_type;

  std::vector<OutputPlan::Plane>& planes = plan.planes;
  const bool ome_axes = format == "ome-tiff" || format == "ome-zarr";
  if (axes.rgb && !ome_axes) {
    planes.push_back({0, axes.default_z, 0});
  } else if (axes.rgb) {
    for (int32_t t = 0; t < axes.t; ++t)
      for (int32_t z = 0; z < axes.z; ++z) planes.push_back({0, z, t});
  } else if (format == "dicom") {  // TILED_FULL's order: focal planes within each optical path
    for (int32_t c = 0; c < axes.channels; ++c)
      for (int32_t z = 0; z < axes.z; ++z) planes.push_back({c, z, 0});
  } else {
    for (int32_t t = 0; t < axes.t; ++t)
      for (int32_t z = 0; z < axes.z; ++z)
        for (int32_t c = 0; c < axes.channels; ++c) planes.push_back({c, z, t});
  }
  return plan;
}

}  // namespace tilewise::write
