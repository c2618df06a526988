// Slide::axes and Slide::read_planes: channels, focal planes and time points at their own sample type.
//
// A read names channels of one (z, t). Each plane holding some of them is read once through the host
// region reader, as any level is (planned, cached per plane and level, decoded in parallel): straight into
// the caller's view when one plane holds exactly the channels asked for, in their order; otherwise into a
// buffer of the plane's samples, from which each asked channel is copied to its place in every pixel. A read
// into device memory goes the same way through the device reader when the GPU decoders take every plane's
// tiles as samples (grey JPEG, grey JPEG 2000: nvimgcodec_decoder.h) and the device's scheduler routes the
// read there (gpu/scheduler.h: the faster side by measured rates), the buffer and the copies on the device;
// else it is read on the host into page-locked staging and uploaded once (gpu_stats counts these reads as
// host_plane_regions).
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
  std::string label = "level ";
  label += std::to_string(level);
  label += " plane (channel ";
  label += std::to_string(p.channel);
  if (p.samples > 1) (label += '-') += std::to_string(p.channel + p.samples - 1);
  label += ", z ";
  label += std::to_string(p.z);
  label += ", t ";
  label += std::to_string(p.t);
  return label += ')';
}


// Which plane holds each asked channel, grouped by plane in the order they are first asked.
Result<std::vector<PlaneUse>> plane_uses(const internal::SlideImpl& impl, const std::vector<int32_t>& channels,
                                         const PlaneSelection& selection) {
  const formats::SlideModel& model = impl.model;
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
  return uses;
}

const formats::LevelModel& level_of(const formats::SlideModel& model, const PlaneUse& use, int level) {
  return use.plane ? use.plane->levels[static_cast<size_t>(level)] : model.levels[static_cast<size_t>(level)];
}

// Whether `use` is read straight into `out`: its plane holds exactly the asked channels, in their order.
bool is_direct(const PlaneUse& use, const ImageView& out) {
  const int32_t held = use.plane ? use.plane->samples : 3;
  bool direct = held == out.channels;
  for (size_t k = 0; direct && k < use.samples.size(); ++k) direct = use.samples[k] == static_cast<int32_t>(k);
  return direct;
}

// The view `use`'s plane is read into (its data unset where a buffer is needed): `out`, or the plane's samples.
ImageView plane_view(const PlaneUse& use, const ImageView& out, int32_t bytes) {
  if (is_direct(use, out)) return out;
  const int32_t held = use.plane ? use.plane->samples : 3;
  return ImageView{nullptr, out.width * held * bytes, out.width, out.height, held, out.device, bytes};
}

// Moves the asked samples of the plane buffer `from` to their channels of `out`, on the device.
Status scatter_on_device(gpu::DeviceContext& context, const ImageView& from, const ImageView& out, const PlaneUse& use,
                         int64_t width, int64_t height) {
  gpu::DeviceOps& ops = context.ops();
  TW_ASSIGN_OR_RETURN(gpu::StreamLease stream, gpu::StreamLease::acquire(ops));
  for (size_t k = 0; k < use.samples.size(); ++k) {
    const gpu::SampleCopy c{out.data, from.data, static_cast<size_t>(out.stride), static_cast<size_t>(from.stride),
                            out.pixel_bytes(), from.pixel_bytes(), use.targets[k], use.samples[k], out.sample_bytes,
                            static_cast<int32_t>(width), static_cast<int32_t>(height)};
    TW_RETURN_IF_ERROR(ops.copy_samples(c, stream.get()));
  }
  return ops.synchronize(stream.get());
}

// Reads every plane use into `out` (host memory, or device memory through `device`'s reader and buffers).
Status read_uses(const internal::SlideImpl& impl, const std::vector<PlaneUse>& uses, int level,
                 const LevelRegion& region, const ImageView& out, int32_t bytes, const ReadOptions& options,
                 gpu::DeviceContext* device) {
  const int64_t width = region.width, height = region.height;
  std::vector<uint8_t> buffer;
  for (const PlaneUse& use : uses) {
    const bool direct = is_direct(use, out);
    ImageView view = plane_view(use, out, bytes);
    view.width = static_cast<int32_t>(width), view.height = static_cast<int32_t>(height);
    view.stride = direct ? out.stride : width * view.channels * bytes;
    void* device_buffer = nullptr;
    if (!direct) {
      TW_RETURN_IF_ERROR(check_region_size(width, height, int64_t{view.channels} * bytes).with_context(impl.path));
      const size_t size = static_cast<size_t>(view.stride) * static_cast<size_t>(height);
      if (device) {
        auto allocated = device->ops().allocate(size);
        if (!allocated.ok()) return impl.with_path(allocated.status());
        device_buffer = *allocated;
        view.data = static_cast<uint8_t*>(device_buffer);
      } else {
        buffer.resize(size);
        view.data = buffer.data();
      }
    }
    region::RegionRequest req = impl.request(level, region, view, options);
    if (use.plane != nullptr) {
      req.level = &use.plane->levels[static_cast<size_t>(level)];
      req.level_label = plane_label(level, *use.plane);
      req.cache_level = use.index * static_cast<int32_t>(impl.levels.size()) + level;
    }
    Status s = impl.with_path(impl.read(req));
    if (s.ok() && !direct && width > 0 && height > 0) {
      if (device) {
        s = impl.with_path(scatter_on_device(*device, view, out, use, width, height));
      } else {
        scatter(view, out, use, width, height);
      }
    }
    if (device_buffer) device->ops().release(device_buffer);
    TW_RETURN_IF_ERROR(s);
  }
  return Status();
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
  TW_ASSIGN_OR_RETURN(const std::vector<PlaneUse> uses, plane_uses(impl, channels, selection));
  if (!out.device.is_cpu()) {
    if (width == 0 || height == 0) return Status();
    auto context = gpu::device_context(out.device.index);
    if (!context.ok()) return impl.with_path(context.status());
    // Through the lanes when their decoders take every plane's tiles and the race of the two sides says so
    // (nvJPEG2000 on small tiles is slower than the cores).
    bool on_gpu = true;
    for (const PlaneUse& use : uses) {
      on_gpu = on_gpu && (*context)->can_decode_into(level_of(model, use, level).desc, plane_view(use, out, bytes)).ok();
    }
    gpu::Scheduler& scheduler = (*context)->scheduler();
    const codecs::TileDesc& desc = level_of(model, uses.front(), level).desc;
    const gpu::CodecClass codec = gpu::codec_class(desc);
    const int64_t tile_pixels = int64_t{desc.width} * desc.height;
    const double samples = static_cast<double>(width) * static_cast<double>(height) * out.channels;
    const double start = scheduler.now();
    if (on_gpu && scheduler.route_plane_read(codec, tile_pixels) == gpu::ReadSide::kLanes) {
      TW_RETURN_IF_ERROR(read_uses(impl, uses, level, LevelRegion{x, y, width, height}, out, bytes, options, *context));
      scheduler.record_plane_read(codec, tile_pixels, gpu::ReadSide::kLanes, samples, scheduler.now() - start);
      return Status();
    }
    const size_t row = static_cast<size_t>(width) * out.pixel_bytes();
    auto staging = gpu::Staging::for_device(out.device, row * static_cast<size_t>(height));
    if (!staging.ok()) return impl.with_path(staging.status());
    const ImageView host{staging->data(), static_cast<int64_t>(row), static_cast<int32_t>(width),
                         static_cast<int32_t>(height), out.channels, {}, out.sample_bytes};
    TW_RETURN_IF_ERROR(read_uses(impl, uses, level, LevelRegion{x, y, width, height}, host, bytes, options, nullptr));
    ImageView device = out;
    device.width = static_cast<int32_t>(width), device.height = static_cast<int32_t>(height);
    TW_RETURN_IF_ERROR(impl.with_path(upload(*staging, device, row)));
    if (on_gpu) scheduler.record_plane_read(codec, tile_pixels, gpu::ReadSide::kCpu, samples, scheduler.now() - start);
    scheduler.count_host_plane_region();
    return Status();
  }
  return read_uses(impl, uses, level, LevelRegion{x, y, width, height}, out, bytes, options, nullptr);
}

}  // namespace tilewise
