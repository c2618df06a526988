#include "formats/level_builder.h"

#include "codecs/jpeg/markers.h"

#include "codecs/cpu/cpu_decoder.h"
#include "tiff/tags.h"
#include "util/checked_math.h"

namespace tilewise::formats {

using codecs::ColorSpace;
using codecs::Compression;

std::string describe_ifd(const tiff::Ifd& ifd) {
  if (ifd.parent >= 0) return "IFD " + std::to_string(ifd.parent) + " SubIFD " + std::to_string(ifd.sub_index);
  return "IFD " + std::to_string(ifd.index);
}

namespace {

Result<Compression> map_compression(uint32_t code) {
  switch (code) {
    case tiff::kCompressionNone: return Compression::kNone;
    case tiff::kCompressionJpeg: return Compression::kJpeg;
    case tiff::kCompressionAdobeDeflate:
    case tiff::kCompressionDeflate: return Compression::kDeflate;
    case tiff::kCompressionLzw: return Compression::kLzw;
    case tiff::kCompressionZstd: return Compression::kZstd;
    case tiff::kCompressionAperioJp2kYCbCr:
    case tiff::kCompressionAperioJp2kRgb: return Compression::kJpeg2000;
    default: return unsupported("Unsupported TIFF compression: " + std::to_string(code));
  }
}

Result<ColorSpace> map_color(const tiff::Ifd& ifd, Compression c) {
  const uint32_t spp = ifd.samples_per_pixel;
  uint32_t photometric = ifd.photometric;
  if (!ifd.has_photometric) photometric = spp >= 3 ? tiff::kPhotometricRgb : tiff::kPhotometricMinIsBlack;
  switch (photometric) {
    case tiff::kPhotometricMinIsBlack: return ColorSpace::kMinIsBlack;
    case tiff::kPhotometricMinIsWhite: return ColorSpace::kMinIsWhite;
    case tiff::kPhotometricRgb: return ColorSpace::kRgb;
    case tiff::kPhotometricYCbCr:
      if (c == Compression::kJpeg || c == Compression::kJpeg2000) return ColorSpace::kYCbCr;
      return unsupported("uncompressed YCbCr images are not supported");
    default: return unsupported("photometric interpretation " + std::to_string(photometric) + " is not supported");
  }
}

}  // namespace

Result<codecs::TileDesc> describe_chunks(const tiff::Ifd& ifd, const std::string& where) {
  auto mapped = map_compression(ifd.compression);
  if (!mapped.ok()) return mapped.status().with_context(where);
  const Compression compression = *mapped;
  if (ifd.planar_configuration != 1 && ifd.samples_per_pixel > 1) {
    return unsupported(where + ": separate colour planes (PlanarConfiguration 2) are not supported");
  }
  for (uint32_t bits : ifd.bits_per_sample) {
    if (bits != ifd.bits_per_sample[0]) return unsupported(where + ": mixed bits per sample are not supported");
  }
  for (uint32_t fmt : ifd.sample_format) {
    if (fmt != ifd.sample_format[0]) return unsupported(where + ": mixed sample formats are not supported");
    if (fmt < 1 || fmt > 3) return unsupported(where + ": SampleFormat " + std::to_string(fmt) + " is not supported");
  }
  auto color = map_color(ifd, compression);
  // Aperio's JPEG 2000 compression values say what the components are, whatever Photometric says.
  if (ifd.compression == tiff::kCompressionAperioJp2kYCbCr) color = ColorSpace::kYCbCr;
  if (ifd.compression == tiff::kCompressionAperioJp2kRgb) color = ColorSpace::kRgb;
  if (!color.ok()) return color.status().with_context(where);
  if (ifd.chunk_width > INT32_MAX || ifd.chunk_height > INT32_MAX) {
    return unsupported(where + ": tile size is too large");
  }
  codecs::TileDesc d;
  d.compression = compression;
  d.width = static_cast<int32_t>(ifd.chunk_width);
  d.height = static_cast<int32_t>(ifd.chunk_height);
  d.samples_per_pixel = static_cast<int32_t>(ifd.samples_per_pixel);
  d.bits_per_sample = static_cast<int32_t>(ifd.bits_per_sample[0]);
  d.sample_format = ifd.sample_format[0] == 2   ? codecs::SampleFormat::kSigned
                    : ifd.sample_format[0] == 3 ? codecs::SampleFormat::kFloat
                                                : codecs::SampleFormat::kUnsigned;
  d.color = *color;
  d.predictor = static_cast<int32_t>(ifd.predictor);
  d.jpeg_tables = ifd.jpeg_tables;
  d.big_endian = !ifd.little_endian;
  return d;
}

namespace {

Result<LevelModel> tiff_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const ModelLimits& limits,
                              bool rgb) {
  const std::string where = describe_ifd(ifd);
  TW_ASSIGN_OR_RETURN(const codecs::TileDesc d, describe_chunks(ifd, where));
  const uint64_t pixel_bytes = rgb ? 4 : static_cast<uint64_t>(d.samples_per_pixel) * ((d.bits_per_sample + 7) / 8);
  if (!limits.unit_fits(ifd.chunk_width, ifd.chunk_height, pixel_bytes)) {
    return out_of_memory(where + ": a " + std::to_string(ifd.chunk_width) + "x" + std::to_string(ifd.chunk_height) +
                         " decode unit exceeds the " + std::to_string(limits.max_chunk_bytes >> 20) + " MiB limit");
  }
  Status decodable = rgb ? codecs::CpuDecoder::renders_rgb(d) : codecs::CpuDecoder::supports(d);
  if (!decodable.ok()) return decodable.with_context(where);

  LevelModel level = grid_level(ifd.width, ifd.height, d);  // tiles, or strips the image's width
  level.ifd = &ifd;
  level.info.tiled = ifd.tiled;
  level.info.samples_per_pixel = d.samples_per_pixel;
  // ExtraSamples lists the samples after the colour ones; the first, when it is alpha (1 associated,
  // 2 unassociated), is the level's alpha.
  const size_t extra = ifd.extra_samples.size();
  if (extra > 0 && extra < ifd.samples_per_pixel && (ifd.extra_samples[0] == 1 || ifd.extra_samples[0] == 2)) {
    level.info.alpha_sample = static_cast<int32_t>(ifd.samples_per_pixel - extra);
    level.info.alpha_associated = ifd.extra_samples[0] == 1;
  }
  level.parts = single_part(tiff.source_ptr(), {}, tiff.structure());
  level.units = std::make_shared<const UnitTable>(UnitTable{ifd.chunk_offsets, ifd.chunk_byte_counts, {}});
  return level;
}

}  // namespace

Result<LevelModel> build_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const ModelLimits& limits) {
  return tiff_level(tiff, ifd, limits, true);
}

Result<LevelModel> build_sample_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const ModelLimits& limits) {
  return tiff_level(tiff, ifd, limits, false);
}

void add_associated_image(SlideModel& model, const std::string& name, const tiff::Ifd& ifd) {
  auto image = build_level(*model.tiff, ifd);
  if (!image.ok()) {
    model.warnings.push_back("associated image '" + name + "' cannot be read: " + image.status().message());
    return;
  }
  model.associated.push_back({name, std::move(image).value(), {}});
}

void compute_downsamples(std::vector<LevelModel>& levels) {
  if (levels.empty()) return;
  const double w0 = static_cast<double>(levels[0].info.width), h0 = static_cast<double>(levels[0].info.height);
  for (size_t i = 0; i < levels.size(); ++i) {
    LevelInfo& l = levels[i].info;
    l.downsample = i == 0 ? 1.0 : (w0 / static_cast<double>(l.width) + h0 / static_cast<double>(l.height)) / 2.0;
  }
}

}  // namespace tilewise::formats

namespace tilewise::formats {

Result<std::vector<LevelModel>> build_levels(const tiff::TiffFile& tiff, const std::vector<const tiff::Ifd*>& ifds,
                                             const ModelLimits& limits) {
  std::vector<LevelModel> levels;
  for (const tiff::Ifd* ifd : ifds) {
    TW_ASSIGN_OR_RETURN(LevelModel level, build_level(tiff, *ifd, limits));
    levels.push_back(std::move(level));
  }
  compute_downsamples(levels);
  return levels;
}

Result<LevelModel> whole_jpeg_level(std::shared_ptr<const io::Source> source, uint64_t offset, uint64_t length) {
  if (!internal::range_inside(offset, length, source->size())) {
    return corrupt("the image at offset " + std::to_string(offset) + " runs past the end of " + source->name());
  }
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(length, 1 << 16)));
  TW_RETURN_IF_ERROR(source->pread(head, offset));
  TW_ASSIGN_OR_RETURN(codecs::JpegFrame frame, codecs::parse_jpeg_frame(head));
  if (frame.width == 0 || frame.height == 0) return corrupt("the JPEG has no size");
  if (!ModelLimits{}.unit_fits(frame.width, frame.height)) return unsupported("the JPEG is too large");
  LevelModel level;
  level.info.width = frame.width;
  level.info.height = frame.height;
  level.info.tile_width = static_cast<int32_t>(frame.width);
  level.info.tile_height = static_cast<int32_t>(frame.height);
  level.info.compression = codecs::compression_name(codecs::Compression::kJpeg);
  level.desc.compression = codecs::Compression::kJpeg;
  level.desc.color = codecs::ColorSpace::kYCbCr;
  level.desc.width = static_cast<int32_t>(frame.width);
  level.desc.height = static_cast<int32_t>(frame.height);
  level.tiles_across = level.tiles_down = 1;
  level.units = std::make_shared<const UnitTable>(UnitTable{{offset}, {length}, {}});
  level.parts = single_part(std::move(source));
  return level;
}

}  // namespace tilewise::formats
