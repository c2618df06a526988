// tilewise._bench: the raw GPU decode ceiling for bench/bench_gpu.py, outside the public API.
//
// decode_rate(streams, width, height, threads, batch, seconds): each of `threads` threads owns one
// nvImageCodec decoder of tilewise's backend (codecs/nvimgcodec/; its own CUDA stream and pinned staging)
// and decodes its share of the complete streams (JPEG with tables spliced in, or JPEG 2000 codestreams of
// width x height RGB tiles) in batches of `batch` into device memory, round after round, until it has
// decoded for at least `seconds` (sustained: a run of tens of milliseconds reads ~20% low). After one
// warm-up round per thread. Returns tiles per second over all threads, and the seconds timed.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "gpu/cuda_ops.h"

namespace nb = nanobind;
using namespace tilewise;

namespace {

void check(const Status& s) {
  if (!s.ok()) throw std::runtime_error(s.message());
}

// Copies of the Python bytes (read without the GIL).
std::vector<std::vector<uint8_t>> copy_streams(const std::vector<nb::bytes>& py_streams) {
  std::vector<std::vector<uint8_t>> streams;
  for (const nb::bytes& b : py_streams) {
    const auto* p = static_cast<const uint8_t*>(b.data());
    streams.emplace_back(p, p + b.size());
  }
  return streams;
}

// Device buffers released when it goes out of scope: also when a decoder cannot be created or a check throws.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(gpu::DeviceOps& ops) : ops_(ops) {}
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  ~DeviceBuffers() {
    for (void* p : held_) ops_.release(p);
  }
  uint8_t* allocate(size_t bytes) {
    auto p = ops_.allocate(bytes);
    check(p.status());
    held_.push_back(*p);
    return static_cast<uint8_t*>(*p);
  }

 private:
  gpu::DeviceOps& ops_;
  std::vector<void*> held_;
};

// The tiles' description: YCbCr JPEG, or JPEG 2000 when the first stream is a codestream.
codecs::TileDesc tile_desc(const std::vector<std::vector<uint8_t>>& streams, int32_t width, int32_t height) {
  codecs::TileDesc desc;
  desc.width = width;
  desc.height = height;
  desc.color = codecs::ColorSpace::kYCbCr;
  desc.compression = streams[0].size() > 1 && streams[0][1] == 0x4F ? codecs::Compression::kJpeg2000
                                                                      : codecs::Compression::kJpeg;
  return desc;
}

std::pair<double, double> decode_rate(const std::vector<nb::bytes>& py_streams, int32_t width, int32_t height,
                                      int threads, int batch, double seconds, int device) {
  if (threads < 1 || batch < 1 || width < 1 || height < 1 || py_streams.empty() || seconds <= 0) {
    throw std::invalid_argument("decode_rate: nothing to decode");
  }
  const std::vector<std::vector<uint8_t>> streams = copy_streams(py_streams);
  nb::gil_scoped_release release;
  check(gpu::device_status(device));
  gpu::DeviceOps& ops = gpu::cuda_ops(device);
  const codecs::TileDesc desc = tile_desc(streams, width, height);
  const size_t tile_bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  DeviceBuffers buffers(ops);
  std::vector<std::unique_ptr<codecs::Decoder>> decoders;
  std::vector<uint8_t*> outputs;
  for (int t = 0; t < threads; ++t) {
    auto d = codecs::nvimgcodec::create_decoder(device);
    check(d.status());
    decoders.push_back(std::move(*d));
    outputs.push_back(buffers.allocate(tile_bytes * static_cast<size_t>(batch)));
  }
  std::atomic<int64_t> failures{0}, decoded{0};
  auto round = [&](int t, std::vector<codecs::DecodeRequest>& requests, std::vector<Status>& statuses) {
    int64_t n = 0;
    auto flush = [&] {
      statuses.assign(requests.size(), Status());
      decoders[static_cast<size_t>(t)]->decode_batch(requests, statuses);
      for (const Status& s : statuses) failures += s.ok() ? 0 : 1;
      n += static_cast<int64_t>(requests.size());
      requests.clear();
    };
    for (size_t i = static_cast<size_t>(t); i < streams.size(); i += static_cast<size_t>(threads)) {
      codecs::DecodeRequest r;
      r.data = streams[i];
      r.desc = &desc;
      r.out = ImageView{outputs[static_cast<size_t>(t)] + requests.size() * tile_bytes,
                        int64_t{width} * 3, width, height, 3, Device{DeviceType::kCuda, device}};
      requests.push_back(r);
      if (requests.size() == static_cast<size_t>(batch)) flush();
    }
    if (!requests.empty()) flush();
    return n;
  };
  using Clock = std::chrono::steady_clock;
  std::vector<double> took(static_cast<size_t>(threads));
  auto work = [&](int t) {
    std::vector<codecs::DecodeRequest> requests;
    std::vector<Status> statuses;
    round(t, requests, statuses);  // warm-up: staging buffers, code-stream handles
    const auto start = Clock::now();
    int64_t n = 0;
    while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) n += round(t, requests, statuses);
    took[static_cast<size_t>(t)] = std::chrono::duration<double>(Clock::now() - start).count();
    decoded += n;
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  if (failures > 0) throw std::runtime_error("decode_rate: " + std::to_string(failures.load()) + " tiles failed");
  double longest = 0;
  for (double s : took) longest = std::max(longest, s);
  return {static_cast<double>(decoded.load()) / longest, longest};
}

// One region's tiles decoded once, as a device region read would: `threads` decoders start together (a
// barrier), each decodes its contiguous share in `calls` calls, and a round ends when the last finishes.
// `in_place`: into one region buffer (tiles `cols` across, the row pitch of the whole region) as the region
// path decodes in place; else into compact tiles. After 3 warm-up rounds, `rounds` rounds; returns the
// rounds' seconds (median, min, max).
std::vector<double> shot_rate(const std::vector<nb::bytes>& py_streams, int32_t width, int32_t height, int cols,
                              int threads, int calls, bool in_place, int rounds, int device) {
  const int n = static_cast<int>(py_streams.size());
  if (width < 1 || height < 1) throw std::invalid_argument("shot_rate: empty tiles");
  if (threads < 1 || calls < 1 || cols < 1 || rounds < 1 || n < threads * calls) {
    throw std::invalid_argument("shot_rate: fewer tiles than calls");
  }
  const std::vector<std::vector<uint8_t>> streams = copy_streams(py_streams);
  nb::gil_scoped_release release;
  check(gpu::device_status(device));
  gpu::DeviceOps& ops = gpu::cuda_ops(device);
  const codecs::TileDesc desc = tile_desc(streams, width, height);
  const int rows = (n + cols - 1) / cols;
  const int64_t pitch = in_place ? int64_t{cols} * width * 3 : int64_t{width} * 3;
  DeviceBuffers buffers(ops);
  uint8_t* out = buffers.allocate(static_cast<size_t>(pitch) * static_cast<size_t>(height) *
                                  static_cast<size_t>(in_place ? rows : n));
  std::vector<codecs::DecodeRequest> requests(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    codecs::DecodeRequest& r = requests[static_cast<size_t>(i)];
    r.data = streams[static_cast<size_t>(i)];
    r.desc = &desc;
    uint8_t* at = in_place ? out + (i / cols) * pitch * height + (i % cols) * width * 3
                           : out + static_cast<int64_t>(i) * pitch * height;
    r.out = ImageView{at, pitch, width, height, 3, Device{DeviceType::kCuda, device}};
  }
  std::vector<std::unique_ptr<codecs::Decoder>> decoders;
  for (int t = 0; t < threads; ++t) {
    auto d = codecs::nvimgcodec::create_decoder(device);
    check(d.status());
    decoders.push_back(std::move(*d));
  }
  std::atomic<int> go{0}, done{0};
  std::atomic<int64_t> failures{0};
  const int total_rounds = rounds + 3;
  auto work = [&](int t) {
    std::vector<Status> statuses;
    const int first = t * n / threads, last = (t + 1) * n / threads;
    for (int round = 1; round <= total_rounds; ++round) {
      while (go.load(std::memory_order_acquire) < round) std::this_thread::yield();
      for (int c = 0; c < calls; ++c) {
        const int a = first + c * (last - first) / calls, b = first + (c + 1) * (last - first) / calls;
        std::span<const codecs::DecodeRequest> part(requests.data() + a, static_cast<size_t>(b - a));
        statuses.assign(part.size(), Status());
        decoders[static_cast<size_t>(t)]->decode_batch(part, statuses);
        for (const Status& s : statuses) failures += s.ok() ? 0 : 1;
      }
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  std::vector<double> took;
  for (int round = 1; round <= total_rounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    go.store(round, std::memory_order_release);
    while (done.load(std::memory_order_acquire) < round * threads) std::this_thread::yield();
    if (round > 3) took.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  for (auto& th : pool) th.join();
  if (failures > 0) throw std::runtime_error("shot_rate: " + std::to_string(failures.load()) + " tiles failed");
  std::sort(took.begin(), took.end());
  return {took[took.size() / 2], took.front(), took.back()};
}

}  // namespace

NB_MODULE(_bench, m) {
  m.def("shot_rate", &shot_rate, nb::arg("streams"), nb::arg("width"), nb::arg("height"), nb::arg("cols"),
        nb::arg("threads"), nb::arg("calls") = 1, nb::arg("in_place") = true, nb::arg("rounds") = 50,
        nb::arg("device") = 0, "One region's tiles decoded once per round: seconds per round (median, min, max).");
  m.def("decode_rate", &decode_rate, nb::arg("streams"), nb::arg("width"), nb::arg("height"), nb::arg("threads") = 1,
        nb::arg("batch") = 64, nb::arg("seconds") = 2.0, nb::arg("device") = 0,
        "Sustained raw nvImageCodec decode rate: (tiles per second, seconds timed).");
}
