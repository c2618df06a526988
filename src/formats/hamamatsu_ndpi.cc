// Hamamatsu NDPI (OpenSlide's "hamamatsu" vendor, NDPI variant).
//
// An NDPI file is classic TIFF with 64-bit links (tiff/tiff_file.h reads it) in which every directory holds
// one JPEG strip: the pyramid levels (SourceLens > 0, largest first, focal plane 0), the macro image
// (SourceLens -1) and a map (-2, which OpenSlide 4.0.1 does not show). A level's JPEG has restart markers
// at regular intervals; a run of MCUs between two of them decodes on its own, so the level is a grid of
// such runs (one MCU row high, restart-interval MCUs wide): a random patch decodes only the runs it needs.
// As OpenSlide does, each level also gives levels at 1/2, 1/4 and 1/8 of its size, decoded with libjpeg's
// DCT scaling (with_scaled_levels).
// The runs' starts come from the McuStarts tag, or, when it is missing or does not match, from a scan of
// the strip for restart markers at open. A JPEG without restart markers is one unit, if it can be decoded
// whole within the decode limit.
//
// Properties as OpenSlide writes them: tiff.* and openslide.comment from the first directory, mpp from its
// resolution (centimetres only), objective power and hamamatsu.SourceLens from its SourceLens,
// hamamatsu.{X,Y}OffsetFromSlideCentre, hamamatsu.Reference, and hamamatsu.<key> for each key=value line
// of the property map tag; quickhash-1 over the smallest level. Other focal planes are reported as a
// warning, not read.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "codecs/jpeg_markers.h"
#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/tiff_properties.h"
#include "tiff/private_tags.h"
#include "tiff/tags.h"
#include "util/checked_math.h"

namespace tilewise::formats {

namespace {

Status detect(const tiff::TiffFile& tiff) {
  if (!tiff.ndpi() || !tiff::find_private_tag(tiff.ifds()[0], tiff::kNdpiFormatFlag)) {
    return unsupported("no NDPI format tag (65420)");
  }
  return Status();
}

// The strip of an NDPI directory: its JPEG's byte range.
struct Strip {
  uint64_t offset;
  uint64_t length;
};

Result<Strip> strip_of(const tiff::TiffFile& tiff, const tiff::Ifd& ifd) {
  if (ifd.tiled || ifd.chunk_offsets.size() != 1 || ifd.chunk_height != ifd.height) {
    return corrupt(describe_ifd(ifd) + ": expected one strip of " + std::to_string(ifd.height) + " rows");
  }
  const Strip s{ifd.chunk_offsets[0], ifd.chunk_byte_counts[0]};
  if (!internal::range_inside(s.offset, s.length, tiff.source().size())) {
    return corrupt(describe_ifd(ifd) + ": the JPEG (" + std::to_string(s.length) + " bytes at offset " +
                   std::to_string(s.offset) + ") runs past the end of the file");
  }
  return s;
}

// The JPEG header of a strip: read in growing pieces until its SOS segment ends.
Result<std::pair<codecs::JpegFrame, std::vector<uint8_t>>> read_header(const tiff::TiffFile& tiff, const tiff::Ifd& ifd,
                                                                       const Strip& strip) {
  for (uint64_t want = 64 << 10;; want *= 4) {
    std::vector<uint8_t> bytes(static_cast<size_t>(std::min(want, strip.length)));
    TW_RETURN_IF_ERROR(tiff.source().pread(bytes, strip.offset).with_context(describe_ifd(ifd)));
    auto frame = codecs::parse_jpeg_frame(bytes);
    if (frame.ok()) {
      bytes.resize(static_cast<size_t>(frame->header_end));
      return std::make_pair(*frame, std::move(bytes));
    }
    if (!codecs::frame_needs_more_bytes(frame.status()) || want >= strip.length || want >= (16u << 20)) {
      return frame.status().with_context(describe_ifd(ifd));
    }
  }
}

// The offsets (in the file) where each restart interval of the strip begins: the McuStarts tag when it has
// one per unit, else a scan of the entropy-coded data.
Result<std::vector<uint64_t>> unit_starts(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const Strip& strip,
                                          const codecs::JpegFrame& frame, uint64_t units) {
  if (auto recorded = tiff::private_uints(ifd, tiff::kNdpiMcuStarts); recorded && recorded->size() == units) {
    std::vector<uint64_t> starts(recorded->size());
    for (size_t i = 0; i < starts.size(); ++i) {
      if ((*recorded)[i] >= strip.length) return corrupt(describe_ifd(ifd) + ": MCU start " + std::to_string(i) + " lies past the JPEG");
      starts[i] = strip.offset + (*recorded)[i];
    }
    return starts;
  }
  std::vector<uint64_t> starts{strip.offset + frame.header_end};
  constexpr uint64_t kChunk = 4 << 20;
  std::vector<uint8_t> buf;
  bool pending_ff = false;
  for (uint64_t at = frame.header_end; at < strip.length && starts.size() < units + 1; at += kChunk) {
    buf.resize(static_cast<size_t>(std::min(kChunk, strip.length - at)));
    TW_RETURN_IF_ERROR(tiff.source().pread(buf, strip.offset + at).with_context(describe_ifd(ifd)));
    codecs::find_restart_markers(buf, strip.offset + at, pending_ff, starts);
  }
  if (starts.size() != units) {
    return corrupt(describe_ifd(ifd) + ": the JPEG has " + std::to_string(starts.size()) + " restart intervals, its " +
                   "size and restart interval need " + std::to_string(units));
  }
  return starts;
}

Result<LevelModel> build_ndpi_level(const tiff::TiffFile& tiff, const tiff::Ifd& ifd, const ModelLimits& limits) {
  const std::string where = describe_ifd(ifd);
  TW_ASSIGN_OR_RETURN(const Strip strip, strip_of(tiff, ifd));
  TW_ASSIGN_OR_RETURN(auto header, read_header(tiff, ifd, strip));
  const codecs::JpegFrame& frame = header.first;
  if (frame.components != 3) return unsupported(where + ": a JPEG with " + std::to_string(frame.components) + " components");
  // SOF sizes of 0 (or anything) stand for the TIFF's size when the level is wider or taller than JPEG allows.
  if ((frame.width != 0 && frame.width != ifd.width && ifd.width <= 65500) ||
      (frame.height != 0 && frame.height != ifd.height && ifd.height <= 65500)) {
    return corrupt(where + ": JPEG size " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                   " differs from the directory's " + std::to_string(ifd.width) + "x" + std::to_string(ifd.height));
  }
  LevelModel level;
  level.ifd = &ifd;
  level.info.width = ifd.width;
  level.info.height = ifd.height;
  level.info.compression = codecs::compression_name(codecs::Compression::kJpeg);
  level.desc.compression = codecs::Compression::kJpeg;
  level.desc.color = codecs::ColorSpace::kYCbCr;
  const uint64_t mcus_across = (uint64_t{ifd.width} + frame.mcu_width - 1) / frame.mcu_width;
  if (frame.restart_interval == 0) {  // one unit: the whole JPEG
    auto bytes = internal::checked_mul(uint64_t{ifd.width} * ifd.height, 4);
    if (!bytes || *bytes > limits.max_chunk_bytes || ifd.width > 65500 || ifd.height > 65500) {
      return unsupported(where + ": a " + std::to_string(ifd.width) + "x" + std::to_string(ifd.height) +
                         " JPEG without restart markers cannot be read in parts, and exceeds the " +
                         std::to_string(limits.max_chunk_bytes >> 20) + " MiB decode limit");
    }
    level.desc.width = static_cast<int32_t>(ifd.width);
    level.desc.height = static_cast<int32_t>(ifd.height);
    level.tiles_across = level.tiles_down = 1;
    level.units = std::make_shared<const UnitTable>(UnitTable{{strip.offset}, {strip.length}, {}});
    level.parts = single_part(tiff.source_ptr());
  } else {
    if (frame.restart_interval > mcus_across || mcus_across % frame.restart_interval != 0) {
      return unsupported(where + ": restart interval " + std::to_string(frame.restart_interval) +
                         " does not divide the " + std::to_string(mcus_across) + " MCUs of a row");
    }
    const uint64_t unit_width = uint64_t{frame.restart_interval} * frame.mcu_width;
    if (unit_width > 65500) return unsupported(where + ": restart intervals of " + std::to_string(unit_width) + " pixels");
    level.desc.width = static_cast<int32_t>(unit_width);
    level.desc.height = frame.mcu_height;
    level.tiles_across = static_cast<int64_t>(mcus_across / frame.restart_interval);
    level.tiles_down = (int64_t{ifd.height} + frame.mcu_height - 1) / frame.mcu_height;
    const uint64_t count = static_cast<uint64_t>(level.tiles_across * level.tiles_down);
    UnitTable units;
    TW_ASSIGN_OR_RETURN(units.offsets, unit_starts(tiff, ifd, strip, frame, count));
    units.lengths.resize(count);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t end = i + 1 < count ? units.offsets[i + 1] : strip.offset + strip.length;
      if (end <= units.offsets[i]) return corrupt(where + ": MCU starts are not increasing at " + std::to_string(i));
      units.lengths[i] = end - units.offsets[i];
    }
    level.units = std::make_shared<const UnitTable>(std::move(units));
    level.stream = UnitStream::kRestartInterval;
    codecs::set_frame_size(header.second, frame, static_cast<uint16_t>(unit_width), static_cast<uint16_t>(frame.mcu_height));
    level.parts = single_part(tiff.source_ptr(), std::move(header.second));
  }
  level.info.tiled = true;  // OpenSlide reports the units as the level's tiles
  level.info.tile_width = level.desc.width;
  level.info.tile_height = level.desc.height;
  return level;
}

// OpenSlide's levels of a Hamamatsu JPEG pyramid: each stored level, and the same level decoded at 1/2,
// 1/4 and 1/8 scale where its units divide evenly; of several with one width the later (a smaller stored
// level, or one scaled less) replaces the earlier; largest first.
std::vector<LevelModel> with_scaled_levels(const std::vector<LevelModel>& stored) {
  std::map<int64_t, LevelModel, std::greater<>> by_width;
  for (const LevelModel& l : stored) {
    by_width.insert_or_assign(l.info.width, l);
    for (int32_t denom = 2; denom <= 8; denom *= 2) {
      if (l.desc.width % denom != 0 || l.desc.height % denom != 0) continue;
      LevelModel scaled = l;  // same units (shared), same directory (its quickhash), decoded smaller
      scaled.info.width = l.info.width / denom;
      scaled.info.height = l.info.height / denom;
      scaled.desc.width = l.desc.width / denom;
      scaled.desc.height = l.desc.height / denom;
      scaled.desc.scale_denom = denom;
      scaled.info.tile_width = scaled.desc.width;
      scaled.info.tile_height = scaled.desc.height;
      by_width.insert_or_assign(scaled.info.width, std::move(scaled));
    }
  }
  std::vector<LevelModel> levels;
  for (auto& [width, level] : by_width) levels.push_back(std::move(level));
  return levels;
}

// The macro image: its JPEG decoded whole.
void add_macro(SlideModel& model, const tiff::TiffFile& tiff, const tiff::Ifd& ifd) {
  auto level = build_ndpi_level(tiff, ifd, ModelLimits{});
  if (!level.ok()) {
    model.warnings.push_back("associated image 'macro' cannot be read: " + level.status().message());
    return;
  }
  model.associated.push_back({"macro", std::move(level).value(), {}});
}

void add_ndpi_properties(const tiff::Ifd& ifd0, PropertyMap& props) {
  if (auto lens = tiff::private_double(ifd0, tiff::kNdpiSourceLens)) {
    props["hamamatsu.SourceLens"] = format_double(*lens);
    props["openslide.objective-power"] = format_double(*lens);
  }
  if (auto x = tiff::private_sint(ifd0, tiff::kNdpiXOffset)) props["hamamatsu.XOffsetFromSlideCentre"] = std::to_string(*x);
  if (auto y = tiff::private_sint(ifd0, tiff::kNdpiYOffset)) props["hamamatsu.YOffsetFromSlideCentre"] = std::to_string(*y);
  if (auto ref = tiff::private_text(ifd0, tiff::kNdpiReference)) props["hamamatsu.Reference"] = *ref;
  if (auto map = tiff::private_text(ifd0, tiff::kNdpiPropertyMap)) {
    for (size_t at = 0; at <= map->size();) {
      size_t end = map->find("\r\n", at);
      if (end == std::string::npos) end = map->size();
      const std::string record = map->substr(at, end - at);
      const size_t eq = record.find('=');
      if (eq != std::string::npos && eq > 0 && eq + 1 < record.size()) {
        props["hamamatsu." + record.substr(0, eq)] = record.substr(eq + 1);
      }
      at = end + 2;
    }
  }
}

Result<SlideModel> open(std::shared_ptr<const tiff::TiffFile> tiff) {
  SlideModel model;
  model.tiff = tiff;
  model.vendor = "hamamatsu";
  std::set<int64_t> other_planes;
  for (const tiff::Ifd& ifd : tiff->ifds()) {
    const auto lens = tiff::private_double(ifd, tiff::kNdpiSourceLens);
    if (!lens) return corrupt(describe_ifd(ifd) + ": no SourceLens (tag 65421)");
    if (*lens > 0) {
      const auto plane = tiff::private_sint(ifd, tiff::kNdpiFocalPlane);
      if (!plane) return corrupt(describe_ifd(ifd) + ": no focal plane (tag 65424)");
      if (*plane != 0) {
        other_planes.insert(*plane);
        continue;
      }
      if (!model.levels.empty() && ifd.width >= model.levels.back().info.width) {
        return corrupt(describe_ifd(ifd) + ": levels are not in decreasing size");
      }
      TW_ASSIGN_OR_RETURN(LevelModel level, build_ndpi_level(*tiff, ifd, ModelLimits{}));
      model.levels.push_back(std::move(level));
    } else if (*lens == -1) {
      add_macro(model, *tiff, ifd);
    }
  }
  if (model.levels.empty()) return corrupt("no pyramid level (no directory with SourceLens > 0)");
  model.levels = with_scaled_levels(model.levels);
  compute_downsamples(model.levels);
  if (!other_planes.empty()) {
    std::string planes;
    for (int64_t p : other_planes) planes += (planes.empty() ? "" : ", ") + std::to_string(p);
    model.warnings.push_back("focal planes " + planes + " are not read (only plane 0, as OpenSlide)");
  }
  const tiff::Ifd& ifd0 = tiff->ifds()[0];
  PropertyMap props;
  add_tiff_properties(ifd0, props);
  if (ifd0.image_description) props["openslide.comment"] = *ifd0.image_description;
  add_mpp_from_resolution(ifd0, props);
  add_ndpi_properties(ifd0, props);
  add_standard_properties(model, props);
  return model;
}

}  // namespace

const FormatDriver kHamamatsuNdpiDriver = {"hamamatsu", &detect, &open};

}  // namespace tilewise::formats
