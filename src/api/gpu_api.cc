#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "codecs/gpu/device_memory.h"
#include "codecs/gpu/gpu_decoder.h"
#include "codecs/gpu/tile_lanes.h"
#include "tilewise/memory.h"

#ifdef TILEWISE_HAVE_GPU
#include "codecs/gpu/nvimgcodec_library.h"
#endif

namespace tilewise {

Status gpu_status(int device) { return codecs::gpu::device_status(device); }

GpuStats gpu_stats(int device) {
  const codecs::gpu::LaneStats s = codecs::gpu::lane_stats(device);
  const auto c = codecs::gpu::tile_cache(device).stats();
  return GpuStats{s.gpu_tiles, s.cpu_tiles, s.batches, s.lanes, c.hits, c.misses, c.bytes};
}

Result<double> gpu_decode_rate(const std::vector<std::vector<uint8_t>>& streams, int32_t width, int32_t height,
                               int threads, int batch, int repeats, int device) {
  namespace gpu = codecs::gpu;
  if (threads < 1 || batch < 1 || repeats < 1 || width < 1 || height < 1 || streams.empty()) {
    return invalid_argument("gpu_decode_rate: nothing to decode");
  }
  const size_t tile_bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  std::vector<std::unique_ptr<gpu::GpuDecoder>> decoders;
  std::vector<void*> outputs;
  auto release = [&] {
    for (void* p : outputs) gpu::device_free(p, device);
  };
  for (int t = 0; t < threads; ++t) {
    auto d = gpu::GpuDecoder::create(device);
    if (!d.ok()) return release(), d.status();
    decoders.push_back(std::move(*d));
    auto out = gpu::device_malloc(tile_bytes * static_cast<size_t>(batch), device);
    if (!out.ok()) return release(), out.status();
    outputs.push_back(*out);
  }
  std::atomic<int> failures{0};
  auto work = [&](int t, int rounds) {
    std::vector<gpu::DeviceTileRequest> requests;
    std::vector<Status> statuses;
    auto flush = [&] {
      statuses.assign(requests.size(), Status());
      decoders[static_cast<size_t>(t)]->decode_batch(requests, statuses);
      for (const Status& s : statuses) failures += s.ok() ? 0 : 1;
      requests.clear();
    };
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = static_cast<size_t>(t); i < streams.size(); i += static_cast<size_t>(threads)) {
        gpu::DeviceTileRequest q;
        q.stream = streams[i];
        q.compression = streams[i].size() > 1 && streams[i][1] == 0x4F ? codecs::Compression::kJpeg2000
                                                                         : codecs::Compression::kJpeg;
        q.color = codecs::ColorSpace::kYCbCr;
        q.width = width;
        q.height = height;
        q.out = static_cast<uint8_t*>(outputs[static_cast<size_t>(t)]) + requests.size() * tile_bytes;
        q.pitch = static_cast<size_t>(width) * 3;
        requests.push_back(q);
        if (requests.size() == static_cast<size_t>(batch)) flush();
      }
    }
    if (!requests.empty()) flush();
  };
  auto run = [&](int rounds) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t, rounds);
    for (auto& th : pool) th.join();
  };
  run(1);  // warm-up: staging buffers, code-stream handles
  failures = 0;
  const auto start = std::chrono::steady_clock::now();
  run(repeats);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  release();
  if (failures > 0) return internal_error("gpu_decode_rate: " + std::to_string(failures.load()) + " tiles failed");
  return static_cast<double>(streams.size()) * repeats / seconds;
}

void set_nvimgcodec_directory(const std::string& directory) {
#ifdef TILEWISE_HAVE_GPU
  codecs::gpu::set_library_directory(directory);
#else
  (void)directory;
#endif
}

void* allocate_device_pixels(size_t bytes, int device, Status* error) {
  auto p = codecs::gpu::device_malloc(bytes, device);
  if (!p.ok()) {
    if (error) *error = p.status();
    return nullptr;
  }
  return *p;
}

void free_device_pixels(void* buffer, int device) { codecs::gpu::device_free(buffer, device); }

Status fill_device_pixels(uint8_t* buffer, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3],
                          int device) {
  TW_RETURN_IF_ERROR(codecs::gpu::device_status(device));
  TW_ASSIGN_OR_RETURN(auto stream, codecs::gpu::StreamLease::acquire(device));
  TW_RETURN_IF_ERROR(codecs::gpu::device_fill(buffer, pitch, width, height, rgb, stream.get()));
  return codecs::gpu::device_synchronize(stream.get());
}

}  // namespace tilewise
