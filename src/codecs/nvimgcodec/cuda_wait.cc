#include "codecs/nvimgcodec/cuda_wait.h"

#include <mutex>
#include <set>
#include <unordered_map>

#include "util/settings.h"

namespace tilewise::codecs::nvimgcodec {

namespace {

// This thread's blocking-sync events, by device; destroyed when the thread ends (a thread-local of the main
// thread goes before the CUDA runtime's exit handler runs).
class ThreadEvents {
 public:
  ~ThreadEvents() {
    for (auto& [device, event] : events_) cudaEventDestroy(event);
  }
  cudaEvent_t get(int device) {
    auto it = events_.find(device);
    if (it != events_.end()) return it->second;
    cudaEvent_t event = nullptr;
    if (cudaEventCreateWithFlags(&event, cudaEventBlockingSync | cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    events_.emplace(device, event);
    return event;
  }

 private:
  std::unordered_map<int, cudaEvent_t> events_;
};

}  // namespace

cudaError_t wait_for_stream(cudaStream_t stream, Wait expected) {
  const internal::GpuWait policy = internal::settings().gpu_wait;
  if (policy == internal::GpuWait::kSpin || (policy == internal::GpuWait::kAuto && expected == Wait::kShort)) {
    return cudaStreamSynchronize(stream);
  }
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  thread_local ThreadEvents events;
  cudaEvent_t event = events.get(device);
  if (!event) return cudaStreamSynchronize(stream);  // no event to sleep on: the plain wait still works
  e = cudaEventRecord(event, stream);
  if (e != cudaSuccess) return e;
  return cudaEventSynchronize(event);
}

void set_device_wait_policy(int device) {
  if (internal::settings().gpu_wait != internal::GpuWait::kDevice) return;
  static std::mutex mutex;
  static std::set<int> done;
  std::lock_guard<std::mutex> lock(mutex);
  if (!done.insert(device).second) return;
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = device;
  // On an active primary context this changes its scheduling for every thread of the process.
  if (cudaSetDevice(device) == cudaSuccess) cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  cudaGetLastError();
  cudaSetDevice(current);
}

}  // namespace tilewise::codecs::nvimgcodec
