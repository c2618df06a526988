// The device BandOps (band_ops.h): bands in CUDA device memory, padded and halved by kernels
// (band_kernels.cu) on one stream, a tile row's tiles encoded after that stream's work by nvImageCodec
// (codecs/nvimgcodec/nvimgcodec_encoder.h): by one encoder, or by TILEWISE_GPU_ENCODERS encoders at once,
// each on a thread of its own with a contiguous share of the row (four took longer than one: one encoder's
// calls take the same time however many threads nvImageCodec is given). The row's last tiles go to the
// host's cores beside them (TILEWISE_GPU_ENCODE_HOST; by default the share that has both sides finish
// together, write/encode_split.h): copied to pinned host memory and encoded by the worker pool (encode_tile)
// while the GPU encodes the others - nvJPEG's encoder alone is slower than the CPU path on every core, and
// the host's share halves the conversion's time after start-up (bench/RESULTS.md, "Convert's GPU encoders
// and the host's share").
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "codecs/nvimgcodec/cuda_wait.h"
#include "codecs/nvimgcodec/nvimgcodec_encoder.h"
#include "util/settings.h"
#include "util/thread_pool.h"
#include "write/band_kernels.h"
#include "write/band_ops.h"
#include "write/encode_split.h"

namespace tilewise::write {

namespace {

namespace nv = codecs::nvimgcodec;

Status cuda_status(const char* what, cudaError_t e) {
  if (e == cudaSuccess) return Status();
  return internal_error(std::string("gpu convert: ") + what + ": " + cudaGetErrorString(e));
}

class DeviceBandOps final : public BandOps {
 public:
  DeviceBandOps(int device, const TileCoding& coding, Downsample filter)
      : device_(device), coding_(coding), filter_(filter), split_(internal::settings().gpu_encode_host) {}

  ~DeviceBandOps() override {
    if (host_pixels_) cudaFreeHost(host_pixels_);
    if (!stream_) return;
    release();
    cudaStreamDestroy(stream_);
  }

  Status init(const TileCoding& coding) {
    TW_RETURN_IF_ERROR(cuda_status("cudaSetDevice", cudaSetDevice(device_)));
    TW_RETURN_IF_ERROR(cuda_status("cudaStreamCreate", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)));
    nv::EncodeSettings settings;
    settings.codec = coding.codec == TileCodec::kJpeg       ? nv::EncodeSettings::Codec::kJpeg
                     : coding.codec == TileCodec::kJpeg2000 ? nv::EncodeSettings::Codec::kJpeg2000
                                                            : nv::EncodeSettings::Codec::kJpeg2000Lossless;
    settings.quality = coding.quality;
    settings.subsample = coding.subsample;
    const int encoders = internal::settings().gpu_encoders;
    for (int k = 0; k < encoders; ++k) {
      TW_ASSIGN_OR_RETURN(auto encoder, nv::create_encoder(device_, settings));
      encoders_.push_back(std::move(encoder));
    }
    // Threads beside the caller: one per further encoder, and one for the host's share of a row.
    const bool host_share = split_.host_share() > 0;
    if (encoders > 1 || host_share) {
      pool_ = std::make_unique<internal::ThreadPool>(encoders - 1 + (host_share ? 1 : 0), 0, "tw-encode");
    }
    return Status();
  }

  Device device() const override { return Device{DeviceType::kCuda, device_}; }

  Result<uint8_t*> allocate(size_t bytes) override {
    cudaSetDevice(device_);
    void* band = nullptr;
    const cudaError_t e = cudaMalloc(&band, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return out_of_memory("gpu convert: cannot allocate a band of " + std::to_string(bytes) + " bytes: " + cudaGetErrorString(e));
    }
    bands_.push_back(band);
    return static_cast<uint8_t*>(band);
  }

  Status pad(uint8_t* top, int64_t stride, int64_t width, int64_t padded, int32_t rows, int32_t tile) override {
    if (padded == width && rows == tile) return Status();
    return cuda_status("pad", launch_pad_rgb8(top, stride, width, padded, rows, tile, stream_));
  }

  void encode(const uint8_t* top, int64_t stride, int32_t tile, std::span<const int64_t> which,
              std::vector<std::vector<uint8_t>>& tiles, std::vector<Status>& statuses) override {
    using Clock = std::chrono::steady_clock;
    const auto n = static_cast<int64_t>(which.size());
    const int64_t host = split_.host_tiles(n);
    const std::span<const int64_t> on_gpu = which.first(static_cast<size_t>(n - host));
    const std::span<const int64_t> on_host = which.last(static_cast<size_t>(host));
    if (on_host.empty()) {
      encode_on_gpu(top, stride, tile, on_gpu, tiles, statuses);
      return;
    }
    // The host's tiles are copied before the GPU's encode starts (the copy then waits for the pad only).
    const Clock::time_point copy_start = Clock::now();
    const Status copied = copy_to_host(top, stride, tile, on_host);
    const double copy_seconds = std::chrono::duration<double>(Clock::now() - copy_start).count();
    if (!copied.ok()) {
      for (int64_t i : on_host) statuses[static_cast<size_t>(i)] = copied;
      encode_on_gpu(top, stride, tile, on_gpu, tiles, statuses);
      return;
    }
    double seconds[2] = {0, 0};
    pool_->parallel_for(2, [&](int64_t side) {
      const Clock::time_point start = Clock::now();
      if (side == 0) {
        encode_on_gpu(top, stride, tile, on_gpu, tiles, statuses);
      } else {
        encode_on_host(tile, on_host, tiles, statuses);
      }
      seconds[side] = std::chrono::duration<double>(Clock::now() - start).count();
    });
    split_.measured(static_cast<int64_t>(on_gpu.size()), seconds[0], host, seconds[1] + copy_seconds);
  }

  Status halve(const uint8_t* src, int64_t src_stride, int64_t width, int32_t rows, uint8_t* dst, int64_t dst_stride) override {
    TW_RETURN_IF_ERROR(cuda_status("halve", launch_halve_rgb8(src, src_stride, width, rows, dst, dst_stride,
                                                              filter_ == Downsample::kNearest, stream_)));
    return synchronize();  // the band is refilled (by a read on other streams) once this returns
  }

  Status to_host(const uint8_t* src, int64_t stride, int64_t row_bytes, int32_t rows, uint8_t* dst) override {
    TW_RETURN_IF_ERROR(cuda_status("copy to host", cudaMemcpy2DAsync(dst, static_cast<size_t>(row_bytes), src, static_cast<size_t>(stride),
                                                                      static_cast<size_t>(row_bytes), static_cast<size_t>(rows),
                                                                      cudaMemcpyDeviceToHost, stream_)));
    return synchronize();
  }

  Status copy_rows(const ImageView& src, const ImageView& dst) override {
    TW_RETURN_IF_ERROR(cuda_status("copy", cudaMemcpy2DAsync(dst.data, static_cast<size_t>(dst.stride), src.data,
                                                             static_cast<size_t>(src.stride), src.row_bytes(),
                                                             static_cast<size_t>(src.height), cudaMemcpyDeviceToDevice, stream_)));
    return synchronize();  // the staging band is refilled by the next read once this returns
  }

  void release() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    for (void* band : bands_) cudaFree(band);
    bands_.clear();
  }

 private:
  Status synchronize() { return cuda_status("synchronize", nv::wait_for_stream(stream_, nv::Wait::kShort)); }

  // Tiles `which` of the row by the GPU's encoders: encoder k takes the k-th contiguous share; every encoder
  // waits for stream_'s work first.
  void encode_on_gpu(const uint8_t* top, int64_t stride, int32_t tile, std::span<const int64_t> which,
                     std::vector<std::vector<uint8_t>>& tiles, std::vector<Status>& statuses) {
    const size_t n = which.size();
    if (n == 0) return;
    std::vector<nv::DeviceTile> in(n);
    std::vector<std::vector<uint8_t>> out(n);
    std::vector<Status> encoded(n);
    for (size_t k = 0; k < n; ++k) {
      in[k] = nv::DeviceTile{top + which[k] * tile * 3, stride, tile, tile};
      out[k] = std::move(tiles[static_cast<size_t>(which[k])]);  // capacity reused
    }
    const size_t shares = std::min(encoders_.size(), n);
    auto encode_share = [&](int64_t k) {
      const size_t begin = n * static_cast<size_t>(k) / shares, end = n * static_cast<size_t>(k + 1) / shares;
      encoders_[static_cast<size_t>(k)]->encode_batch(std::span(in).subspan(begin, end - begin), stream_,
                                                      std::span(out).subspan(begin, end - begin),
                                                      std::span(encoded).subspan(begin, end - begin));
    };
    if (shares > 1) {
      pool_->parallel_for(static_cast<int64_t>(shares), encode_share);
    } else {
      encode_share(0);
    }
    for (size_t k = 0; k < n; ++k) {
      tiles[static_cast<size_t>(which[k])] = std::move(out[k]);
      statuses[static_cast<size_t>(which[k])] = std::move(encoded[k]);
    }
  }

  // The pixels of tiles which.front() to which.back() (whole tile rows) into host_pixels_, packed rows of
  // host_row_bytes_.
  Status copy_to_host(const uint8_t* top, int64_t stride, int32_t tile, std::span<const int64_t> which) {
    host_row_bytes_ = (which.back() - which.front() + 1) * tile * 3;
    const size_t bytes = static_cast<size_t>(host_row_bytes_) * static_cast<size_t>(tile);
    if (bytes > host_capacity_) {
      if (host_pixels_) cudaFreeHost(host_pixels_);
      host_pixels_ = nullptr;
      host_capacity_ = 0;
      void* pinned = nullptr;
      TW_RETURN_IF_ERROR(cuda_status("cudaMallocHost", cudaMallocHost(&pinned, bytes)));
      host_pixels_ = static_cast<uint8_t*>(pinned);
      host_capacity_ = bytes;
    }
    TW_RETURN_IF_ERROR(cuda_status("copy to host", cudaMemcpy2DAsync(host_pixels_, static_cast<size_t>(host_row_bytes_),
                                                                      top + which.front() * tile * 3, static_cast<size_t>(stride),
                                                                      static_cast<size_t>(host_row_bytes_), static_cast<size_t>(tile),
                                                                      cudaMemcpyDeviceToHost, stream_)));
    host_first_ = which.front();
    return synchronize();
  }

  // Tiles `which` from host_pixels_ (copy_to_host) by the worker pool.
  void encode_on_host(int32_t tile, std::span<const int64_t> which, std::vector<std::vector<uint8_t>>& tiles,
                      std::vector<Status>& statuses) {
    internal::global_pool().parallel_for(static_cast<int64_t>(which.size()), [&](int64_t k) {
      const auto i = static_cast<size_t>(which[static_cast<size_t>(k)]);
      const ImageView view{host_pixels_ + (static_cast<int64_t>(i) - host_first_) * tile * 3, host_row_bytes_, tile, tile, 3};
      statuses[i] = encode_tile(coding_, view, tiles[i]);
    });
  }

  int device_;
  TileCoding coding_;
  Downsample filter_;
  EncodeSplit split_;
  cudaStream_t stream_ = nullptr;
  std::vector<std::unique_ptr<nv::Encoder>> encoders_;
  std::unique_ptr<internal::ThreadPool> pool_;  // beside the caller: further encoders, the host's share
  std::vector<void*> bands_;
  uint8_t* host_pixels_ = nullptr;  // pinned: the host's share of a row
  size_t host_capacity_ = 0;
  int64_t host_row_bytes_ = 0;
  int64_t host_first_ = 0;  // the tile at host_pixels_' start
};

}  // namespace

Status fill_device_view(const ImageView& view, uint8_t value) {
  TW_RETURN_IF_ERROR(cuda_status("cudaSetDevice", cudaSetDevice(view.device.index)));
  return cuda_status("fill", cudaMemset2D(view.data, static_cast<size_t>(view.stride), value, view.row_bytes(),
                                          static_cast<size_t>(view.height)));
}

Result<std::unique_ptr<BandOps>> device_band_ops(int device, const TileCoding& coding, Downsample filter) {
  if (coding.codec != TileCodec::kJpeg && !is_jpeg2000(coding.codec)) {
    return invalid_argument(std::string("the GPU path of convert writes jpeg, jpeg2000 and jpeg2000-lossless tiles, not ") +
                            codec_name(coding.codec));
  }
  auto ops = std::make_unique<DeviceBandOps>(device, coding, filter);
  TW_RETURN_IF_ERROR(ops->init(coding));
  return std::unique_ptr<BandOps>(std::move(ops));
}

}  // namespace tilewise::write
