#include "codecs/nvimgcodec/cuda_wait.h"

#include <unordered_map>

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
  if (expected == Wait::kShort) return cudaStreamSynchronize(stream);
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

}  // namespace tilewise::codecs::nvimgcodec
