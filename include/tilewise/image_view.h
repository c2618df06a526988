// Non-owning views of interleaved pixel buffers (host or device): 8-bit RGB for brightfield reads, or the
// samples a file stores (1-4 channels of 8, 16 or 32 bits) for native reads.
//
// Decoders and the region planner write straight into the caller's memory through these views, so a tile
// that lies fully inside a requested region is decoded in place. A view never owns or frees its memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tilewise {

enum class DeviceType { kCpu = 0, kCuda = 1 };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;
  bool is_cpu() const { return type == DeviceType::kCpu; }
};

// Rows of `width * channels * sample_bytes` bytes, `stride` bytes apart (stride >= that), samples in host
// byte order.
struct ImageView {
  uint8_t* data = nullptr;
  int64_t stride = 0;
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 3;
  Device device{};
  int32_t sample_bytes = 1;

  size_t pixel_bytes() const { return static_cast<size_t>(channels) * static_cast<size_t>(sample_bytes); }
  uint8_t* row(int64_t y) const { return data + y * stride; }
  uint8_t* pixel(int64_t x, int64_t y) const { return data + y * stride + x * static_cast<int64_t>(pixel_bytes()); }
  // The sub-rectangle [x, x+w) x [y, y+h); the caller guarantees it lies inside this view.
  ImageView sub(int64_t x, int64_t y, int32_t w, int32_t h) const {
    return ImageView{pixel(x, y), stride, w, h, channels, device, sample_bytes};
  }
  size_t row_bytes() const { return static_cast<size_t>(width) * pixel_bytes(); }
  // An 8-bit RGB view: what brightfield reads and the decoders' RGB rendering write.
  bool is_rgb8() const { return channels == 3 && sample_bytes == 1; }
};

}  // namespace tilewise
