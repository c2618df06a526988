// tilewise::convert and tilewise::write_image (tilewise/convert.h): the plan (write/output_plan.h), then each
// plane's level 0 read in bands of tile rows and written as a pyramid (write/pyramid_writer.h) into one TIFF
// - a generic pyramid or an Aperio SVS (levels in the main chain), or an OME-TIFF (planes in the main chain
// in XYCZT order, each plane's levels its SubIFDs, the OME-XML in the first directory's description) - into
// a DICOM WSI series (an instance per level) or into an OME-Zarr group (each level one array over t, c, z,
// y, x).
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "codecs/jpeg/markers.h"
#include "tilewise/convert.h"
#include "tilewise/tilewise.h"
#include "util/settings.h"
#include "write/associated_image.h"
#include "write/band_ops.h"
#include "write/dicom_wsi_writer.h"
#include "write/ome_xml.h"
#include "write/ome_zarr_writer.h"
#include "write/output_plan.h"
#include "write/plane_bands.h"
#include "write/pyramid_writer.h"
#include "write/srgb_profile.h"
#include "write/stow_rs.h"
#include "write/svs.h"
#include "write/tiff_writer.h"
#include "write/tile_encoder.h"

namespace tilewise {

namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The name without its extension, as a DICOM LO value (at most 64 characters, no backslash): the slide's
// identifier in a DICOM series.
std::string slide_identifier(const std::string& name) {
  const size_t dot = name.find('.');
  std::string id = dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
  std::replace(id.begin(), id.end(), '\\', '_');
  return id.substr(0, 64);
}

// The levels of a pyramid over level 0 (each halved, down to one tile or max_levels), their tags set.
std::vector<write::LevelSpec> pyramid_levels(const WritableImage& image, const ConvertOptions& options, write::TileCodec codec,
                                            int32_t samples, SampleType type) {
  std::vector<write::LevelSpec> levels;
  int64_t w = image.width, h = image.height;
  for (int i = 0;; ++i) {
    write::LevelSpec level;
    level.width = w;
    level.height = h;
    level.tile = options.tile_size;
    level.samples = static_cast<uint16_t>(samples);
    level.bits = static_cast<uint16_t>(8 * sample_bytes(type));
    level.sample_format = type == SampleType::kFloat32 ? 3
                          : (type == SampleType::kInt8 || type == SampleType::kInt16 || type == SampleType::kInt32) ? 2 : 1;
    level.compression = write::tiff_compression(codec);
    level.codec = codec;
    level.photometric = samples == 3 ? write::tiff_photometric(codec) : 1;
    level.ycbcr_subsampling = options.subsample ? 2 : 1;
    level.subfile_type = i > 0 ? 1 : 0;
    if (const auto& mpp = image.mpp) {
      const double scale = static_cast<double>(image.width) / static_cast<double>(w);
      level.mpp = std::make_pair(mpp->first * scale, mpp->second * scale);
    }
    levels.push_back(std::move(level));
    if ((w <= options.tile_size && h <= options.tile_size) || static_cast<int>(levels.size()) == options.max_levels) break;
    w = (w + 1) / 2;
    h = (h + 1) / 2;
  }
  return levels;
}

// Level 0's stored JPEG tiles where they can stand as the output's (ConvertOptions::copy_tiles): baseline,
// three YCbCr components sampled as the output's, of the output's tile size.
write::PyramidWriter::TileCopy jpeg_tile_copy(const Slide& slide, const ConvertOptions& options) {
  const LevelInfo& base = slide.level(0);
  if (base.tile_width != options.tile_size || base.tile_height != options.tile_size) return nullptr;
  const int mcu = options.subsample ? 16 : 8;
  return [&slide, tile = options.tile_size, mcu](int64_t col, int64_t row) -> std::optional<std::vector<uint8_t>> {
    Result<StoredTile> stored = slide.read_stored_tile(0, col, row);
    if (!stored.ok() || !stored->ycbcr || stored->width != tile || stored->height != tile) return std::nullopt;
    const Result<codecs::JpegFrame> frame = codecs::parse_jpeg_frame(stored->bytes);
    if (!frame.ok() || frame->sof_marker != 0xC0 || frame->components != 3 || frame->mcu_width != mcu ||
        frame->mcu_height != mcu) {
      return std::nullopt;
    }
    return std::move(stored->bytes);
  };
}

// What a slide adds to the image it is written as: its tile height (level 0 is read in whole tile rows of
// the source where they are multiples of the output's), its format (in a generic TIFF's description), and
// the copy of its stored JPEG tiles (ConvertOptions::copy_tiles).
struct SourceDetails {
  int32_t tile_height = 0;
  std::string format;
  write::PyramidWriter::TileCopy copy;
};

Status write_pyramids(const WritableImage& image, const std::string& output, const ConvertOptions& options,
                      const SourceDetails& source) {
  TW_ASSIGN_OR_RETURN(const write::OutputPlan plan, write::plan_output(image, output, options));
  const ImageAxes& axes = image.axes;
  const std::string& format = plan.format;
  const write::TileCoding& coding = plan.coding;
  const write::TileCodec codec = coding.codec;
  const write::Downsample filter = plan.filter;
  const int32_t samples = plan.samples;
  const SampleType type = plan.type;
  const bool zarr = format == "ome-zarr";
  const auto& planes = plan.planes;
  using Plane = write::OutputPlan::Plane;
  // Level 0 is read a whole number of the source's tile rows at a time where they are multiples of the
  // output's (no source tile is decoded for two reads), else one output tile row at a time.
  const int32_t source_tile = source.tile_height;
  const int32_t tile_rows =
      source_tile > options.tile_size && source_tile % options.tile_size == 0 ? std::min(source_tile / options.tile_size, 8) : 1;
  const std::string creator = std::string("tilewise ") + version();
  // Where the bands lie and what halves and encodes them: the worker pool, or the device (one encoder for
  // every plane).
  std::unique_ptr<write::BandOps> ops;
  if (options.device.type == DeviceType::kCuda) {
    TW_RETURN_IF_ERROR(gpu_status(options.device.index).with_context("convert on the GPU"));
    TW_ASSIGN_OR_RETURN(ops, write::device_band_ops(options.device.index, coding, filter));
  } else {
    ops = write::host_band_ops(samples, type, coding, filter);
  }

  int64_t done = 0;
  const int64_t total = image.height * static_cast<int64_t>(planes.size());
  const bool svs = format == "svs";
  int thumbnail_level = -1;  // SVS: the pyramid level kept as the thumbnail
  std::pair<int64_t, int64_t> thumbnail_size;
  std::vector<uint8_t> thumbnail;
  // Each plane's pyramid into `out` (the main chain, or SubIFDs for OME-TIFF), the first with `description`
  auto write_planes = [&](write::TileSink& out, bool sub_ifds, const std::string& description) -> Status {
    for (size_t p = 0; p < planes.size(); ++p) {
      std::vector<write::LevelSpec> levels = pyramid_levels(image, options, codec, samples, type);
      if (p == 0) {
        levels[0].description = description;
        if (axes.rgb) levels[0].icc_profile = image.icc_profile;
      }
      if (svs) {
        for (size_t k = 0; k < levels.size(); ++k) {
          levels[k].description = write::aperio_description(levels[0], levels[k], static_cast<int>(k), coding,
                                                            image.objective_power, creator);
        }
        thumbnail_level = write::aperio_thumbnail_level(levels);
        if (thumbnail_level >= 0) thumbnail_size = {levels[static_cast<size_t>(thumbnail_level)].width, levels[static_cast<size_t>(thumbnail_level)].height};
      }
      const Plane plane = planes[p];
      out.begin_plane(plane.c, plane.z, plane.t);
      TW_ASSIGN_OR_RETURN(std::unique_ptr<write::PyramidWriter> writer,
                          write::PyramidWriter::create(out, std::move(levels), sub_ifds, samples, type, tile_rows, *ops));
      write::PyramidWriter& pyramid = *writer;
      if (thumbnail_level >= 0) pyramid.keep_level(static_cast<size_t>(thumbnail_level), &thumbnail);
      if (source.copy && codec == write::TileCodec::kJpeg && axes.rgb) pyramid.copy_level0(source.copy);
      const write::BandReader read = [&image, plane](int64_t y, int32_t rows, const ImageView& view) {
        return image.read_rows(plane.c, plane.z, plane.t, y, rows, view);
      };
      const write::BandWritten written = [&](int32_t rows) {
        done += rows;  // level-0 rows over every plane
        return options.progress ? options.progress(done, total) : Status();
      };
      // On the device the GPU's decoders read the next band while its encoders write this one; not with
      // skip_damaged, whose reports come on the converting thread.
      Status s = options.device.type == DeviceType::kCuda && !options.skip_damaged
                     ? write::write_level0_overlapped(pyramid, *ops, image.height, read, written)
                     : write::write_level0(pyramid, image.height, read, written);
      if (!s.ok() && (!axes.rgb || planes.size() > 1)) {
        s = s.with_context("plane (channel " + std::to_string(plane.c) + ", z " + std::to_string(plane.z) + ", t " +
                           std::to_string(plane.t) + ")");
      }
      TW_RETURN_IF_ERROR(s);
    }
    return Status();
  };
  if (format == "dicom") {
    write::DicomSeries series = write::DicomSeries::make(slide_identifier(image.name), creator);
    series.icc_profile = image.icc_profile.empty() ? write::srgb_icc_profile() : image.icc_profile;
    series.width = image.width;
    series.height = image.height;
    series.mpp = *image.mpp;
    series.barcode = image.barcode;
    if (!axes.rgb) {
      series.optical_paths = axes.channel_info;
      series.optical_paths.resize(static_cast<size_t>(axes.channels));
      series.focal_planes = axes.z;
      series.z_spacing = axes.z_spacing;
    }
    TW_ASSIGN_OR_RETURN(write::DicomWsiWriter out, write::DicomWsiWriter::create(output, std::move(series)));
    TW_RETURN_IF_ERROR(write_planes(out, false, ""));
    for (const auto& [name, associated] : image.associated_images) {  // LABEL and OVERVIEW instances
      if (name != "label" && name != "macro") continue;
      TW_RETURN_IF_ERROR(write::add_associated_image(out, associated.pixels.data(), associated.width, associated.height, name,
                                                     write::TileCodec::kJpeg)
                             .status());
    }
    return out.finish();
  }
  if (zarr) {
    write::OmeZarrImage group;
    group.name = image.name;
    group.creator = creator;
    group.rgb = axes.rgb;
    group.c = axes.rgb ? 3 : axes.channels;
    group.z = axes.z;
    group.t = axes.t;
    group.type = type;
    group.mpp = image.mpp;
    group.z_spacing = axes.z > 1 ? axes.z_spacing : 0.0;
    group.channels = axes.channel_info;
    group.coding = coding;
    group.filter = filter;
    TW_ASSIGN_OR_RETURN(write::OmeZarrWriter out, write::OmeZarrWriter::create(output, std::move(group)));
    TW_RETURN_IF_ERROR(write_planes(out, false, ""));
    return out.finish();
  }
  TW_ASSIGN_OR_RETURN(write::TiledTiffWriter out, write::TiledTiffWriter::create(output));
  if (svs) {
    TW_RETURN_IF_ERROR(write_planes(out, false, ""));
    TW_RETURN_IF_ERROR(write::add_aperio_associated(out, 0, thumbnail, thumbnail_size.first, thumbnail_size.second,
                                                    image.associated_images, creator));
    return out.finish();
  }
  const bool ome = format == "ome-tiff";
  TW_RETURN_IF_ERROR(write_planes(out, ome,
                                  ome ? write::ome_xml(image, creator)
                                      : creator + ": " + image.name + (source.format.empty() ? "" : " (" + source.format + ")")));
  return out.finish();
}

// ConvertOptions::skip_damaged: the band's rows read again one source tile at a time; a tile whose read is
// corrupt is written as background and reported (once, though its rows span several bands).
using PieceReader = std::function<Status(int64_t x, int64_t y, int32_t w, int32_t h, const ImageView& part)>;
Status read_around_damage(const LevelInfo& base, bool rgb, int64_t y, int32_t rows, const ImageView& view,
                          const ConvertOptions& options, const PieceReader& read) {
  const int64_t tw = base.tile_width > 0 ? base.tile_width : 256, th = base.tile_height > 0 ? base.tile_height : 256;
  for (int64_t ty = y / th * th; ty < y + rows; ty += th) {
    const int64_t top = std::max(ty, y), bottom = std::min(ty + th, y + rows);
    for (int64_t x = 0; x < base.width; x += tw) {
      const auto w = static_cast<int32_t>(std::min(tw, base.width - x));
      const ImageView part = view.sub(x, top - y, w, static_cast<int32_t>(bottom - top));
      const Status s = read(x, top, w, part.height, part);
      if (s.ok()) continue;
      if (s.code() != StatusCode::kCorrupt) return s;
      TW_RETURN_IF_ERROR(write::fill_view(part, rgb ? 0xFF : 0));
      // Reported with the band holding its first row (a tile's rows may come in several bands; each fails alike)
      if (options.skipped && top == ty) options.skipped(s);
    }
  }
  return Status();
}

}  // namespace

Status convert(const Slide& slide, const std::string& output, const ConvertOptions& options) {
  const LevelInfo& base = slide.level(0);
  const ImageAxes& axes = slide.axes();
  WritableImage image;
  image.name = base_name(slide.path());
  image.width = base.width;
  image.height = base.height;
  image.axes = axes;
  image.mpp = slide.mpp();
  image.icc_profile = slide.icc_profile();
  const bool rgb = axes.rgb;
  auto read = [&slide, rgb, default_z = axes.default_z](int32_t c, int32_t z, int32_t t, int64_t x, int64_t y, int32_t w,
                                                         int32_t rows, const ImageView& view) {
    if (rgb && z == default_z && t == 0) return slide.read_level_region(0, x, y, w, rows, view);
    if (rgb) return slide.read_planes(0, x, y, w, rows, PlaneSelection{{}, z, t}, view);  // another focal plane's RGB
    return slide.read_planes(0, x, y, w, rows, PlaneSelection{{c}, z, t}, view);
  };
  image.read_rows = [&, read](int32_t c, int32_t z, int32_t t, int64_t y, int32_t rows, const ImageView& view) {
    Status s = read(c, z, t, 0, y, static_cast<int32_t>(base.width), rows, view);
    if (s.code() != StatusCode::kCorrupt || !options.skip_damaged) return s;
    return read_around_damage(base, rgb, y, rows, view, options, [&](int64_t x, int64_t ty, int32_t w, int32_t h, const ImageView& part) {
      Status piece = read(c, z, t, x, ty, w, h, part);
      if (piece.code() == StatusCode::kCorrupt && (!rgb || axes.z > 1 || axes.t > 1)) {
        piece = piece.with_context("plane (channel " + std::to_string(c) + ", z " + std::to_string(z) + ", t " + std::to_string(t) + ")");
      }
      return piece;
    });
  };
  for (const auto& [key, value] : slide.properties()) {
    if (key == "openslide.objective-power") {
      try {
        image.objective_power = std::stod(value);
      } catch (...) {  // a property that is not a number: no AppMag
      }
    }
    // The vendor's barcode property (aperio.Barcode, leica.barcode, ...)
    const std::string last = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
    std::string lower = last;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == "barcode" && image.barcode.empty()) image.barcode = value;
  }
  const std::string format = write::output_format(output, options.format);
  if (format == "svs" || format == "dicom") {  // the outputs that keep the label and macro
    for (const AssociatedImageInfo& info : slide.associated_images()) {
      if (info.name != "label" && info.name != "macro") continue;
      Result<RgbImage> associated = slide.read_associated_image(info.name);
      if (!associated.ok()) {
        const Status s = associated.status().with_context("associated image " + info.name);
        if (s.code() != StatusCode::kCorrupt || !options.skip_damaged) return s;
        if (options.skipped) options.skipped(s);
        continue;
      }
      image.associated_images.emplace_back(info.name, std::move(*associated));
    }
  }
  SourceDetails source;
  source.tile_height = base.tile_height;
  source.format = slide.format();
  if (options.copy_tiles) source.copy = jpeg_tile_copy(slide, options);
  return write_pyramids(image, output, options, source);
}

Status stow_dicom_folder(const std::string& folder, const std::string& dicomweb_url, const std::vector<std::string>& headers) {
  return write::stow_rs(folder, dicomweb_url, headers);
}

Status write_image(const WritableImage& image, const std::string& output, const ConvertOptions& options) {
  if (options.device.type == DeviceType::kCuda) {
    return invalid_argument(output + ": write_image writes an image from host memory on the CPU; the device option applies to convert");
  }
  return write_pyramids(image, output, options, SourceDetails{});
}

}  // namespace tilewise
