// The host BandOps (band_ops.h): bands in host memory, tiles encoded (encode_tile) and rows halved on the
// worker pool.
#include <algorithm>
#include <cstring>

#include "util/thread_pool.h"
#include "write/band_ops.h"

namespace tilewise::write {

namespace {

class HostBandOps final : public BandOps {
 public:
  HostBandOps(int32_t samples, SampleType type, const TileCoding& coding, Downsample filter)
      : samples_(samples), type_(type), pixel_bytes_(int64_t{samples} * sample_bytes(type)), coding_(coding), filter_(filter) {}

  Device device() const override { return Device{}; }

  Result<uint8_t*> allocate(size_t bytes) override {
    bands_.emplace_back(bytes);
    return bands_.back().data();
  }

  Status pad(uint8_t* top, int64_t stride, int64_t width, int64_t padded, int32_t rows, int32_t tile) override {
    const auto pixel = static_cast<size_t>(pixel_bytes_);
    if (padded > width) {
      for (int32_t r = 0; r < rows; ++r) {
        uint8_t* row = top + r * stride;
        for (int64_t x = width; x < padded; ++x) std::memcpy(row + pixel_bytes_ * x, row + pixel_bytes_ * (width - 1), pixel);
      }
    }
    for (int32_t r = rows; r < tile; ++r) std::memcpy(top + r * stride, top + (rows - 1) * stride, static_cast<size_t>(stride));
    return Status();
  }

  void encode(const uint8_t* top, int64_t stride, int32_t tile, std::span<const int64_t> which,
              std::vector<std::vector<uint8_t>>& tiles, std::vector<Status>& statuses) override {
    internal::global_pool().parallel_for(static_cast<int64_t>(which.size()), [&](int64_t k) {
      const auto i = static_cast<size_t>(which[static_cast<size_t>(k)]);
      const ImageView view{const_cast<uint8_t*>(top) + static_cast<int64_t>(i) * tile * pixel_bytes_, stride, tile, tile,
                           samples_, {}, sample_bytes(type_)};
      statuses[i] = encode_tile(coding_, view, tiles[i]);
    });
  }

  Status halve(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst, int64_t dst_stride) override {
    const int32_t halved = (rows + 1) / 2;
    constexpr int32_t kRowsPerTask = 16;
    internal::global_pool().parallel_for((halved + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task) {
      const int32_t first = static_cast<int32_t>(task) * kRowsPerTask;
      const int32_t count = std::min(kRowsPerTask, halved - first);
      write::halve(src + 2 * first * src_stride, src_stride, width, std::min(2 * count, rows - 2 * first), samples_, type_,
                   dst + first * dst_stride, dst_stride, filter_);
    });
    return Status();
  }

  Status to_host(const uint8_t* src, int64_t stride, int64_t row_bytes, int32_t rows, uint8_t* dst) override {
    for (int32_t r = 0; r < rows; ++r) std::memcpy(dst + r * row_bytes, src + r * stride, static_cast<size_t>(row_bytes));
    return Status();
  }

  Status copy_rows(const ImageView& src, const ImageView& dst) override {
    for (int32_t r = 0; r < src.height; ++r) std::memcpy(dst.row(r), src.row(r), src.row_bytes());
    return Status();
  }

  void release() override { bands_.clear(); }

 private:
  int32_t samples_;
  SampleType type_;
  int64_t pixel_bytes_;
  TileCoding coding_;
  Downsample filter_;
  std::vector<std::vector<uint8_t>> bands_;
};

}  // namespace

Status fill_view(const ImageView& view, uint8_t value) {
  if (view.device.type == DeviceType::kCuda) return fill_device_view(view, value);
  for (int32_t r = 0; r < view.height; ++r) std::memset(view.row(r), value, view.row_bytes());
  return Status();
}

std::unique_ptr<BandOps> host_band_ops(int32_t samples, SampleType type, const TileCoding& coding, Downsample filter) {
  return std::make_unique<HostBandOps>(samples, type, coding, filter);
}

}  // namespace tilewise::write
