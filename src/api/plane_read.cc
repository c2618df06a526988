// Slide::axes and Slide::read_planes: channels, focal planes and time points at their own sample type.
//
// A read names channels of one (z, t). Each plane holding some of them is read once through the host
// region reader, as any level is (planned, cached per plane and level, decoded in parallel): straight into
// the caller's view when one plane holds exactly the channels asked for, in their order; otherwise into a
// buffer of the plane's samples, from which each asked channel is copied to its place in every pixel. A read
// into device memory is made so into page-locked staging and uploaded once (the GPU lanes decode RGB tiles
// only; gpu_stats counts these reads as host_plane_regions).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "api/slide_impl.h"
#include "gpu/device_context.h"
#include "gpu/scheduler.h"
#include "gpu/staging.h"
#include "tilewise/config.h"

namespace tilewise {

namespace {

// One plane of a read and where its samples go: sample `samples[i]` of every pixel to output channel
// `targets[i]`.
struct PlaneUse {
  const formats::PlaneModel* plane = nullptr;  // nullptr: the slide's one RGB plane (model.levels)
  int32_t index = 0;                           // in model.planes
  std::vector<int32_t> samples, targets;
};

template <size_t kBytes>
void scatter_rows(const ImageView& from, const ImageView& to, const PlaneUse& use, int64_t width, int64_t height) {
  const size_t from_pixel = from.pixel_bytes(), to_pixel = to.pixel_bytes();
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src = from.row(y);
    uint8_t* dst = to.row(y);
    for (size_t k = 0; k < use.samples.size(); ++k) {
      const uint8_t* s = src + static_cast<size_t>(use.samples[k]) * kBytes;
      uint8_t* d = dst + static_cast<size_t>(use.targets[k]) * kBytes;
      for (int64_t x = 0; x < width; ++x, s += from_pixel, d += to_pixel) std::memcpy(d, s, kBytes);
    }
  }
}

void scatter(const ImageView& from, const ImageView& to, const PlaneUse& use, int64_t width, int64_t height) {
  switch (from.sample_bytes) {
    case 1: return scatter_rows<1>(from, to, use, width, height);
    case 2: return scatter_rows<2>(from, to, use, width, height);
    default: return scatter_rows<4>(from, to, use, width, height);
  }
}

// Uploads `staging` (rows of `row_bytes`, packed) into the device view `out`.
Status upload(const gpu::Staging& staging, const ImageView& out, size_t row_bytes) {
  if (static_cast<size_t>(out.stride) == row_bytes) return staging.upload(out.data, 0, row_bytes * size_t(out.height));
  TW_ASSIGN_OR_RETURN(gpu::DeviceContext * context, gpu::device_context(out.device.index));
  TW_ASSIGN_OR_RETURN(gpu::StreamLease stream, gpu::StreamLease::acquire(context->ops()));
  TW_RETURN_IF_ERROR(staging.upload_rows(out.data, static_cast<size_t>(out.stride), 0, row_bytes, out.height, stream.get()));
  return context->ops().synchronize(stream.get());
}

std::string plane_label(int level, const formats::PlaneModel& p) {
  std::string label = "level " + std::to_string(level) + " plane (channel " + std::to_string(p.channel);
  if (p.samples > 1) label += "-" + std::to_string(p.channel + p.samples - 1);
  return label + ", z " + std::to_string(p.z) + ", t " + std::to_string(p.t) + ")";
}

}  // namespace

const ImageAxes& Slide::axes() const { return impl_->model.axes; }

Status Slide::read_planes(int level, int64_t x, int64_t y, int64_t width, int64_t height,
                          const PlaneSelection& selection, const ImageView& out, const ReadOptions& options) const {
  const internal::SlideImpl& impl = *impl_;
  const formats::SlideModel& model = impl.model;
  const ImageAxes& axes = model.axes;
  if (level < 0 || level >= level_count()) return impl.no_such_level(level);
  std::vector<int32_t> channels = selection.channels;
  if (channels.empty()) {
    channels.resize(static_cast<size_t>(axes.channels));
    std::iota(channels.begin(), channels.end(), 0);
  }
  for (int32_t c : channels) {
    if (c < 0 || c >= axes.channels) {
      return impl.with_path(invalid_argument("channel " + std::to_string(c) + " does not exist (the image has " +
                                             std::to_string(axes.channels) + ")"));
    }
  }
  if (selection.z < 0 || selection.z >= axes.z || selection.t < 0 || selection.t >= axes.t) {
    return impl.with_path(invalid_argument("plane z " + std::to_string(selection.z) + ", t " +
                                           std::to_string(selection.t) + " does not exist (the image has " +
                                           std::to_string(axes.z) + " focal planes and " + std::to_string(axes.t) +
                                           " time points)"));
  }
  const int32_t bytes = axes.rgb ? 1 : sample_bytes(axes.sample_type);
  TW_RETURN_IF_ERROR(check_region_size(width, height, static_cast<int64_t>(out.pixel_bytes())).with_context(impl.path));
  if (out.channels != static_cast<int32_t>(channels.size()) || out.sample_bytes != bytes ||
      out.width < width || out.height < height || out.data == nullptr) {
    return impl.with_path(invalid_argument(
        "the output view must hold " + std::to_string(width) + "x" + std::to_string(height) + " pixels of " +
        std::to_string(channels.size()) + " " + (axes.rgb ? "uint8" : sample_type_name(axes.sample_type)) +
        " channels"));
  }
  if (!out.device.is_cpu()) {
    if (width == 0 || height == 0) return Status();
    const size_t row = static_cast<size_t>(width) * out.pixel_bytes();
    auto staging = gpu::Staging::for_device(out.device, row * static_cast<size_t>(height));
    if (!staging.ok()) return impl.with_path(staging.status());
    const ImageView host{staging->data(), static_cast<int64_t>(row), static_cast<int32_t>(width),
                         static_cast<int32_t>(height), out.channels, {}, out.sample_bytes};
    TW_RETURN_IF_ERROR(read_planes(level, x, y, width, height, selection, host, options));
    ImageView device = out;
    device.width = static_cast<int32_t>(width), device.height = static_cast<int32_t>(height);
    TW_RETURN_IF_ERROR(impl.with_path(upload(*staging, device, row)));
    gpu::device_scheduler(out.device.index).count_host_plane_region();
    return Status();
  }

  // Which plane holds each asked channel, grouped by plane in the order they are first asked.
  std::vector<PlaneUse> uses;
  for (size_t i = 0; i < channels.size(); ++i) {
    PlaneUse use;
    int32_t sample = channels[i];
    if (!model.planes.empty()) {
      use.plane = formats::find_plane(model, channels[i], selection.z, selection.t, &sample);
      if (use.plane == nullptr) return internal_error(impl.path + ": no plane holds channel " + std::to_string(channels[i]));
      use.index = static_cast<int32_t>(use.plane - model.planes.data());
    }
    auto same = std::find_if(uses.begin(), uses.end(), [&](const PlaneUse& u) { return u.plane == use.plane; });
    PlaneUse& u = same == uses.end() ? uses.emplace_back(use) : *same;
    u.samples.push_back(sample);
    u.targets.push_back(static_cast<int32_t>(i));
  }

  const LevelRegion region{x, y, width, height};
  std::vector<uint8_t> buffer;
  for (const PlaneUse& use : uses) {
    const int32_t held = use.plane ? use.plane->samples : 3;
    bool direct = held == out.channels;
    for (size_t k = 0; direct && k < use.samples.size(); ++k) direct = use.samples[k] == static_cast<int32_t>(k);
    ImageView view = out;
    if (!direct) {
      TW_RETURN_IF_ERROR(check_region_size(width, height, int64_t{held} * bytes).with_context(impl.path));
      buffer.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * static_cast<size_t>(held) *
                    static_cast<size_t>(bytes));
      view = ImageView{buffer.data(), width * held * bytes, static_cast<int32_t>(width), static_cast<int32_t>(height),
                       held, {}, bytes};
    }
    region::RegionRequest req = impl.request(level, region, view, options);
    if (use.plane != nullptr) {
      req.level = &use.plane->levels[static_cast<size_t>(level)];
      req.level_label = plane_label(level, *use.plane);
      req.cache_level = use.index * level_count() + level;
    }
    TW_RETURN_IF_ERROR(impl.with_path(impl.read(req)));
    if (!direct && width > 0 && height > 0) scatter(view, out, use, width, height);
  }
  return Status();
}

}  // namespace tilewise
