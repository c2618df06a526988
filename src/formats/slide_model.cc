#include "formats/slide_model.h"

#include "util/checked_math.h"

namespace tilewise::formats {

LevelModel grid_level(int64_t width, int64_t height, const codecs::TileDesc& desc) {
  LevelModel level;
  level.desc = desc;
  level.info.width = width;
  level.info.height = height;
  level.info.tiled = true;
  level.info.tile_width = desc.width;
  level.info.tile_height = desc.height;
  level.info.compression = codecs::compression_name(desc.compression);
  level.tiles_across = internal::ceil_div(width, int64_t{desc.width});
  level.tiles_down = internal::ceil_div(height, int64_t{desc.height});
  return level;
}

const PlaneModel* find_plane(const SlideModel& model, int32_t channel, int32_t z, int32_t t, int32_t* sample) {
  for (const PlaneModel& p : model.planes) {
    if (p.z == z && p.t == t && channel >= p.channel && channel < p.channel + p.samples) {
      *sample = channel - p.channel;
      return &p;
    }
  }
  return nullptr;
}

Result<SampleType> sample_type_of(const codecs::TileDesc& desc) {
  using codecs::SampleFormat;
  const int bits = desc.bits_per_sample;
  if (desc.sample_format == SampleFormat::kFloat) {
    if (bits == 32) return SampleType::kFloat32;
  } else if (desc.sample_format == SampleFormat::kSigned) {
    if (bits == 8) return SampleType::kInt8;
    if (bits == 16) return SampleType::kInt16;
    if (bits == 32) return SampleType::kInt32;
  } else {
    if (bits == 8) return SampleType::kUint8;
    if (bits == 16) return SampleType::kUint16;
    if (bits == 32) return SampleType::kUint32;
  }
  return unsupported(std::to_string(bits) + "-bit " +
                     (desc.sample_format == SampleFormat::kFloat ? "floating-point " : "") + "samples");
}

Status check_planes(const SlideModel& model, const std::string& file) {
  const ImageAxes& a = model.axes;
  if (model.planes.empty()) return Status();
  if (a.default_z < 0 || a.default_z >= a.z) {
    return corrupt(file + ": the default focal plane " + std::to_string(a.default_z) + " lies outside the image's " +
                   std::to_string(a.z));
  }
  std::vector<uint8_t> held(static_cast<size_t>(a.channels) * static_cast<size_t>(a.z) * static_cast<size_t>(a.t));
  for (size_t i = 0; i < model.planes.size(); ++i) {
    const PlaneModel& p = model.planes[i];
    const std::string where = file + ": plane " + std::to_string(i) + " (channel " + std::to_string(p.channel) +
                              ", z " + std::to_string(p.z) + ", t " + std::to_string(p.t) + ")";
    if (p.channel < 0 || p.samples < 1 || p.channel + p.samples > a.channels || p.z < 0 || p.z >= a.z || p.t < 0 ||
        p.t >= a.t) {
      return corrupt(where + " lies outside the image's " + std::to_string(a.channels) + " channels, " +
                     std::to_string(a.z) + " focal planes and " + std::to_string(a.t) + " time points");
    }
    if (p.levels.size() != model.levels.size()) {
      return corrupt(where + " has " + std::to_string(p.levels.size()) + " levels, the image " +
                     std::to_string(model.levels.size()));
    }
    for (size_t l = 0; l < p.levels.size(); ++l) {
      const LevelModel& level = p.levels[l];
      if (level.info.width != model.levels[l].info.width || level.info.height != model.levels[l].info.height) {
        return corrupt(where + " level " + std::to_string(l) + " is " + std::to_string(level.info.width) + "x" +
                       std::to_string(level.info.height) + ", the image's " + std::to_string(model.levels[l].info.width) +
                       "x" + std::to_string(model.levels[l].info.height));
      }
      auto type = sample_type_of(level.desc);
      if (!a.rgb && (!type.ok() || *type != a.sample_type || level.desc.samples_per_pixel != p.samples)) {
        return corrupt(where + " level " + std::to_string(l) + " holds " +
                       std::to_string(level.desc.samples_per_pixel) + " samples of " +
                       std::to_string(level.desc.bits_per_sample) + " bits, not " + std::to_string(p.samples) +
                       " of the image's " + sample_type_name(a.sample_type));
      }
    }
    for (int32_t c = p.channel; c < p.channel + p.samples; ++c) {
      uint8_t& h = held[(static_cast<size_t>(p.t) * a.z + static_cast<size_t>(p.z)) * a.channels + static_cast<size_t>(c)];
      if (h) return corrupt(where + ": channel " + std::to_string(c) + " is stored twice");
      h = 1;
    }
  }
  for (size_t i = 0; i < held.size(); ++i) {
    if (!held[i]) {
      const size_t c = i % a.channels, z = i / a.channels % a.z, t = i / a.channels / a.z;
      return corrupt(file + ": no plane holds channel " + std::to_string(c) + " at z " + std::to_string(z) + ", t " +
                     std::to_string(t));
    }
  }
  return Status();
}

}  // namespace tilewise::formats
