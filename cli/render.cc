#include "render.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "progress.h"

namespace tilewise::cli {
namespace {

// Colours of channels the file gives none: blue, green, red, magenta, cyan, yellow, white.
constexpr std::array<std::array<uint8_t, 3>, 7> kPalette{{
    {0, 0, 255}, {0, 255, 0}, {255, 0, 0}, {255, 0, 255}, {0, 255, 255}, {255, 255, 0}, {255, 255, 255}}};

double sample_at(const uint8_t* p, SampleType type) {
  switch (type) {
    case SampleType::kUint8: return *p;
    case SampleType::kInt8: return static_cast<int8_t>(*p);
    case SampleType::kUint16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case SampleType::kInt16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case SampleType::kUint32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case SampleType::kInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case SampleType::kFloat32: { float v; std::memcpy(&v, p, 4); return std::isfinite(v) ? v : 0.0; }
  }
  return 0;
}

// The channel's 0.1st and 99.9th percentiles over the area (every 7th sample: enough for a display range).
std::pair<double, double> display_range(const std::vector<double>& values) {
  std::vector<double> sample;
  for (size_t i = 0; i < values.size(); i += 7) sample.push_back(values[i]);
  if (sample.empty()) return {0, 1};
  const size_t lo = sample.size() / 1000, hi = sample.size() - 1 - sample.size() / 1000;
  std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(lo), sample.end());
  const double low = sample[lo];
  std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(hi), sample.end());
  return {low, std::max(sample[hi], low + 1e-9)};
}

}  // namespace

void add_plane_options(CLI::App& cmd, PlaneOptions& options) {
  cmd.add_option("--scene", options.scene, "Image of a file of several (default: the format's)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--channel", options.channels,
                 "Channel to draw (repeat for a false-colour composite; default: the RGB rendering)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--z", options.z, "Focal plane (default: the file's nominal focus)")->check(CLI::NonNegativeNumber);
  cmd.add_option("--t", options.t, "Time point")->default_val(0)->check(CLI::NonNegativeNumber);
}

Result<Slide> open_slide(const std::string& path, const PlaneOptions& options) {
  OpenOptions open;
  if (options.scene >= 0) open.scene = options.scene;
  return Slide::open(path, open);
}

Result<std::vector<uint8_t>> render_rgb(const Slide& slide, const PlaneOptions& options, int level, int64_t x,
                                        int64_t y, int64_t width, int64_t height) {
  TW_RETURN_IF_ERROR(check_region_size(width, height));
  const size_t pixels = static_cast<size_t>(width) * static_cast<size_t>(height);
  std::vector<uint8_t> rgb(pixels * 3);
  const ImageView rgb_view{rgb.data(), width * 3, static_cast<int32_t>(width), static_cast<int32_t>(height), 3, {}};
  const ImageAxes& axes = slide.axes();
  const int32_t z = options.z < 0 ? axes.default_z : options.z;
  if (options.channels.empty() && z == axes.default_z && options.t == 0) {  // the RGB rendering
    TW_RETURN_IF_ERROR(read_level_region_with_progress(slide, level, x, y, width, height, rgb_view));
    return rgb;
  }
  std::vector<int32_t> channels = options.channels;
  if (channels.empty()) {
    for (int32_t c = 0; c < axes.channels; ++c) channels.push_back(c);
  }
  const SampleType type = axes.rgb ? SampleType::kUint8 : axes.sample_type;
  const int32_t bytes = sample_bytes(type);
  const int64_t pixel = static_cast<int64_t>(channels.size()) * bytes;
  TW_RETURN_IF_ERROR(check_region_size(width, height, pixel));
  std::vector<uint8_t> native(pixels * static_cast<size_t>(pixel));
  const ImageView view{native.data(), width * pixel, static_cast<int32_t>(width), static_cast<int32_t>(height),
                       static_cast<int32_t>(channels.size()), {}, bytes};
  TW_RETURN_IF_ERROR(slide.read_planes(level, x, y, width, height, PlaneSelection{channels, z, options.t}, view));
  if (axes.rgb && channels.size() == 3 && channels == std::vector<int32_t>{0, 1, 2}) return native;  // RGB planes
  std::vector<double> sum(pixels * 3, 0.0), values(pixels);
  for (size_t k = 0; k < channels.size(); ++k) {
    for (size_t i = 0; i < pixels; ++i) values[i] = sample_at(native.data() + i * pixel + k * bytes, type);
    const auto [low, high] = display_range(values);
    const auto& info = axes.channel_info;
    const size_t c = static_cast<size_t>(channels[k]);
    std::array<uint8_t, 3> colour = channels.size() == 1 ? std::array<uint8_t, 3>{255, 255, 255}
                                    : c < info.size() && info[c].color && *info[c].color != std::array<uint8_t, 3>{0, 0, 0}
                                        ? *info[c].color
                                        : kPalette[k % kPalette.size()];
    for (size_t i = 0; i < pixels; ++i) {
      const double v = std::clamp((values[i] - low) / (high - low), 0.0, 1.0);
      for (int j = 0; j < 3; ++j) sum[i * 3 + j] += v * colour[static_cast<size_t>(j)];
    }
  }
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(std::lround(std::min(sum[i], 255.0)));
  return rgb;
}

}  // namespace tilewise::cli
