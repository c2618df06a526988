// Non-owning views of interleaved 8-bit pixel buffers (host or device).
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

// Rows of `width * channels` bytes, `stride` bytes apart (stride >= width * channels).
struct ImageView {
  uint8_t* data = nullptr;
  int64_t stride = 0;
  int32_t width = 0;
  int32_t height = 0;
  int32_t channels = 3;
  Device device{};

  uint8_t* row(int64_t y) const { return data + y * stride; }
  uint8_t* pixel(int64_t x, int64_t y) const { return data + y * stride + x * channels; }
  // The sub-rectangle [x, x+w) x [y, y+h); the caller guarantees it lies inside this view.
  ImageView sub(int64_t x, int64_t y, int32_t w, int32_t h) const {
    return ImageView{pixel(x, y), stride, w, h, channels, device};
  }
  size_t row_bytes() const { return static_cast<size_t>(width) * channels; }
};

}  // namespace tilewise
