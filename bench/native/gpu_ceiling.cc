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

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "gpu/device_memory.h"

namespace nb = nanobind;
using namespace tilewise;

namespace {

void check(const Status& s) {
  if (!s.ok()) throw std::runtime_error(s.message());
}

std::pair<double, double> decode_rate(const std::vector<nb::bytes>& py_streams, int32_t width, int32_t height,
                                      int threads, int batch, double seconds, int device) {
  if (threads < 1 || batch < 1 || width < 1 || height < 1 || py_streams.empty() || seconds <= 0) {
    throw std::invalid_argument("decode_rate: nothing to decode");
  }
  std::vector<std::vector<uint8_t>> streams;
  for (const nb::bytes& b : py_streams) {
    const auto* p = static_cast<const uint8_t*>(b.data());
    streams.emplace_back(p, p + b.size());
  }
  nb::gil_scoped_release release;
  check(gpu::device_status(device));
  gpu::DeviceOps& ops = gpu::cuda_ops(device);
  codecs::TileDesc desc;
  desc.width = width;
  desc.height = height;
  desc.color = codecs::ColorSpace::kYCbCr;
  desc.compression = streams[0].size() > 1 && streams[0][1] == 0x4F ? codecs::Compression::kJpeg2000
                                                                      : codecs::Compression::kJpeg;
  const size_t tile_bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  std::vector<std::unique_ptr<codecs::Decoder>> decoders;
  std::vector<void*> outputs;
  for (int t = 0; t < threads; ++t) {
    auto d = codecs::nvimgcodec::create_decoder(device);
    check(d.status());
    decoders.push_back(std::move(*d));
    auto out = ops.allocate(tile_bytes * static_cast<size_t>(batch));
    check(out.status());
    outputs.push_back(*out);
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
      r.out = ImageView{static_cast<uint8_t*>(outputs[static_cast<size_t>(t)]) + requests.size() * tile_bytes,
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
  for (void* p : outputs) ops.release(p);
  if (failures > 0) throw std::runtime_error("decode_rate: " + std::to_string(failures.load()) + " tiles failed");
  double longest = 0;
  for (double s : took) longest = std::max(longest, s);
  return {static_cast<double>(decoded.load()) / longest, longest};
}

}  // namespace

NB_MODULE(_bench, m) {
  m.def("decode_rate", &decode_rate, nb::arg("streams"), nb::arg("width"), nb::arg("height"), nb::arg("threads") = 1,
        nb::arg("batch") = 64, nb::arg("seconds") = 2.0, nb::arg("device") = 0,
        "Sustained raw nvImageCodec decode rate: (tiles per second, seconds timed).");
}
