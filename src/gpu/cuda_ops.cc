#include "gpu/cuda_ops.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "codecs/nvimgcodec/cuda_wait.h"
#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "gpu/kernels.h"
#include "util/fork_safe.h"
#include "util/settings.h"

namespace tilewise::gpu {

namespace {

Status cuda_error(const std::string& what, cudaError_t e) { return internal_error(what + ": " + cudaGetErrorString(e)); }

// Size classes: 64 KiB granules below 256 KiB, then four classes per power of two (at most 25% waste).
size_t size_class(size_t bytes) {
  if (bytes <= (size_t{256} << 10)) return (bytes + 0xFFFF) & ~size_t{0xFFFF};
  const int top = std::bit_width(bytes) - 1;  // 2^top <= bytes
  const size_t step = size_t{1} << (top - 2);
  return (bytes + step - 1) / step * step;
}

size_t cache_limit() { return static_cast<size_t>(internal::settings().gpu_pool_bytes); }

struct Block {
  void* p;
  cudaEvent_t released;  // recorded on the legacy stream when the block was freed
};

struct DeviceCache {
  std::map<size_t, std::vector<Block>> idle;  // size class -> freed blocks
  std::unordered_map<void*, size_t> live;     // pointer -> size class
  std::vector<cudaEvent_t> spare_events;
  size_t idle_bytes = 0;
  std::vector<cudaStream_t> streams;  // idle compose streams
};

struct MemoryState {
  std::mutex mutex;
  std::unordered_map<int, DeviceCache> devices;
};

MemoryState& memory() {
  static auto* m = new internal::ForkSafe<MemoryState>([] { return new MemoryState(); });
  return m->get();
}

// Frees every idle block of `cache` whose release completed (called with the mutex held, after a failed
// cudaMalloc: the memory goes back to the device).
void trim(DeviceCache& cache) {
  for (auto& [cls, blocks] : cache.idle) {
    for (size_t i = 0; i < blocks.size();) {
      if (cudaEventSynchronize(blocks[i].released) == cudaSuccess) {
        cudaFree(blocks[i].p);
        cache.spare_events.push_back(blocks[i].released);
        cache.idle_bytes -= cls;
        blocks[i] = blocks.back();
        blocks.pop_back();
      } else {
        ++i;
      }
    }
  }
}

Result<void*> device_malloc(size_t bytes, int device) {
  const size_t cls = size_class(bytes > 0 ? bytes : 1);
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  DeviceCache& cache = m.devices[device];
  auto it = cache.idle.find(cls);
  if (it != cache.idle.end()) {
    for (size_t i = 0; i < it->second.size(); ++i) {
      Block b = it->second[i];
      if (cudaEventQuery(b.released) != cudaSuccess) continue;  // still in use by work queued before the free
      it->second[i] = it->second.back();
      it->second.pop_back();
      cache.idle_bytes -= cls;
      cache.spare_events.push_back(b.released);
      cache.live.emplace(b.p, cls);
      return b.p;
    }
  }
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return cuda_error("cudaSetDevice", e);
  void* p = nullptr;
  e = cudaMalloc(&p, cls);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    trim(cache);
    e = cudaMalloc(&p, cls);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    return out_of_memory("cudaMalloc of " + std::to_string(bytes) + " bytes on cuda:" + std::to_string(device) + ": " +
                         cudaGetErrorString(e));
  }
  cache.live.emplace(p, cls);
  return p;
}

void device_free(void* p, int device) {
  if (!p) return;
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  DeviceCache& cache = m.devices[device];
  auto it = cache.live.find(p);
  if (it == cache.live.end()) return;  // not ours (or freed twice): never hand it to cudaFree blindly
  const size_t cls = it->second;
  cache.live.erase(it);
  cudaSetDevice(device);
  cudaEvent_t ev = nullptr;
  if (!cache.spare_events.empty()) {
    ev = cache.spare_events.back();
    cache.spare_events.pop_back();
  } else if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) {
    ev = nullptr;
  }
  if (cache.idle_bytes + cls > cache_limit() || ev == nullptr ||
      cudaEventRecord(ev, cudaStreamLegacy) != cudaSuccess) {
    if (ev) cache.spare_events.push_back(ev);
    cudaFree(p);  // synchronises the device; at process exit the runtime may be unloading: errors are moot
    return;
  }
  cache.idle[cls].push_back(Block{p, ev});
  cache.idle_bytes += cls;
}

Result<Stream> acquire_stream(int device) {
  MemoryState& m = memory();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto& streams = m.devices[device].streams;
    if (!streams.empty()) {
      cudaStream_t s = streams.back();
      streams.pop_back();
      return Stream{s};
    }
  }
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return cuda_error("cudaSetDevice", e);
  cudaStream_t s = nullptr;
  e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return cuda_error("cudaStreamCreate", e);
  return Stream{s};
}

void return_stream(Stream s, int device) {
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.devices[device].streams.push_back(static_cast<cudaStream_t>(s));
}

// Page-locked host blocks by size class, kept for reuse up to kPinnedIdleBytes (cudaHostAlloc takes
// milliseconds for tens of megabytes: a large region's staging would otherwise cost more than its upload).
constexpr size_t kPinnedIdleBytes = size_t{512} << 20;

struct PinnedPool {
  std::mutex mutex;
  std::multimap<size_t, void*> idle;
  std::unordered_map<void*, size_t> live;
  size_t idle_bytes = 0;
};

PinnedPool& pinned() {
  static auto* p = new internal::ForkSafe<PinnedPool>([] { return new PinnedPool(); });
  return p->get();
}

Result<void*> pinned_malloc(size_t bytes) {
  const size_t cls = size_class(std::max<size_t>(bytes, 1));
  PinnedPool& pool = pinned();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    auto it = pool.idle.find(cls);
    if (it != pool.idle.end()) {
      void* p = it->second;
      pool.idle.erase(it);
      pool.idle_bytes -= cls;
      pool.live[p] = cls;
      return p;
    }
  }
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, cls, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return out_of_memory("cudaHostAlloc of " + std::to_string(cls) + " bytes: " + cudaGetErrorString(e));
  }
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.live[p] = cls;
  return p;
}

void pinned_free(void* p) {
  if (!p) return;
  PinnedPool& pool = pinned();
  std::unique_lock<std::mutex> lock(pool.mutex);
  auto it = pool.live.find(p);
  if (it == pool.live.end()) return;
  const size_t cls = it->second;
  pool.live.erase(it);
  if (pool.idle_bytes + cls <= kPinnedIdleBytes) {
    pool.idle.emplace(cls, p);
    pool.idle_bytes += cls;
    return;
  }
  lock.unlock();
  cudaFreeHost(p);
}

}  // namespace

class CudaOps final : public DeviceOps {
 public:
  explicit CudaOps(int device) : device_(device) {}
  int device() const override { return device_; }
  Result<void*> allocate(size_t bytes) override { return device_malloc(bytes, device_); }
  void release(void* p) override { device_free(p, device_); }
  Result<Stream> acquire_stream() override { return gpu::acquire_stream(device_); }
  void return_stream(Stream s) override { gpu::return_stream(s, device_); }
  Status fill(uint8_t* dst, size_t pitch, int32_t width, int32_t height, const uint8_t rgb[3], Stream s) override {
    cudaError_t e = launch_fill_rgb(dst, pitch, width, height, rgb, static_cast<cudaStream_t>(s));
    return e == cudaSuccess ? Status() : cuda_error("fill", e);
  }
  Status clear(uint8_t* dst, size_t pitch, size_t width_bytes, int32_t height, Stream s) override {
    if (width_bytes == 0 || height <= 0) return Status();
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = cudaMemset2DAsync(dst, pitch, 0, width_bytes, static_cast<size_t>(height), static_cast<cudaStream_t>(s));
    return e == cudaSuccess ? Status() : cuda_error("clear", e);
  }
  Status copy_samples(const SampleCopy& c, Stream s) override {
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = launch_copy_samples(c, static_cast<cudaStream_t>(s));
    return e == cudaSuccess ? Status() : cuda_error("copy samples", e);
  }
  Status copy_2d(uint8_t* dst, size_t dst_pitch, const uint8_t* src, size_t src_pitch, int32_t width_bytes,
                 int32_t height, bool src_on_host, Stream s) override {
    cudaError_t e = cudaSetDevice(device_);  // callers may be pool threads (the split region's row uploads)
    if (e == cudaSuccess) e = cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, static_cast<size_t>(width_bytes),
                                      static_cast<size_t>(height),
                                      src_on_host ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice,
                                      static_cast<cudaStream_t>(s));
    return e == cudaSuccess ? Status() : cuda_error("copy", e);
  }
  Status copy_batch(std::span<const DeviceCopy> copies, Stream s) override {
    if (copies.empty()) return Status();
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = launch_copy_batch(copies.data(), copies.size(), static_cast<cudaStream_t>(s));
    return e == cudaSuccess ? Status() : cuda_error("copy batch", e);
  }
  Status synchronize(Stream s) override {
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = codecs::nvimgcodec::wait_for_stream(static_cast<cudaStream_t>(s), codecs::nvimgcodec::Wait::kShort);
    return e == cudaSuccess ? Status() : cuda_error("synchronize", e);
  }
  Result<void*> allocate_host(size_t bytes) override { return pinned_malloc(bytes); }
  void release_host(void* p) override { pinned_free(p); }

 private:
  int device_;
};

namespace {

// TILEWISE_GPU_BLOCKING_SYNC: `device`'s primary context schedules host waits as blocking syncs, so that the
// waits inside nvImageCodec and nvJPEG sleep rather than poll a core (CUDA's default polls while the process
// has fewer contexts than cores). The primary context is every library's in the process (PyTorch's too),
// hence a setting, off by default. Once per device and process.
Status schedule_blocking_sync(int device) {
  static std::mutex mutex;
  static std::vector<int> done;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::find(done.begin(), done.end(), device) != done.end()) return Status();
  int current = 0;
  const bool had_current = cudaGetDevice(&current) == cudaSuccess;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  if (had_current) cudaSetDevice(current);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return internal_error("TILEWISE_GPU_BLOCKING_SYNC: cannot set cuda:" + std::to_string(device) +
                          "'s scheduling: " + cudaGetErrorString(e));
  }
  done.push_back(device);
  return Status();
}

}  // namespace

Status device_status(int index) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();
    return unsupported(std::string("no CUDA device is available (") +
                       (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  }
  if (index < 0 || index >= count) {
    return invalid_argument("cuda:" + std::to_string(index) + " does not exist (" + std::to_string(count) + " devices)");
  }
  if (internal::settings().gpu_blocking_sync) TW_RETURN_IF_ERROR(schedule_blocking_sync(index));
  return codecs::nvimgcodec::library_status();
}

int current_device() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return device;
}

DeviceOps& cuda_ops(int device) {
  struct Registry {
    std::mutex mutex;
    std::unordered_map<int, std::unique_ptr<CudaOps>> ops;
  };
  static auto* registry = new internal::ForkSafe<Registry>([] { return new Registry(); });
  Registry& r = registry->get();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& slot = r.ops[device];
  if (!slot) slot = std::make_unique<CudaOps>(device);
  return *slot;
}

}  // namespace tilewise::gpu
