// HostCost: the host CPU time one device's reads spend, by stage, in the threads' own CPU clocks
// (CLOCK_THREAD_CPUTIME_ID): what the GPU path costs the host per tile, the number that bounds how much CPU
// helpers can add beside it (they share the cores it keeps busy). Threads tilewise does not run
// (nvImageCodec's and the CUDA runtime's own workers) are not in it: a process's CPU time less these stages
// is theirs (and the caller's).
//
// Thread behaviour: add() and snapshot() are lock-free (relaxed atomics; a snapshot is per stage, not one
// instant across stages).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace tilewise::gpu {

enum class HostStage : int {
  kRead,     // tile bytes read and code streams prepared (JPEGTables spliced), on the decode pool
  kCall,     // inside the lanes' decoder calls (nvImageCodec's), on the lane threads
  kAssist,   // reading threads' CPU decodes of tiles the lanes had not reached, uploads included
  kWait,     // reading threads waiting for the lanes to finish their tiles
  kCompose,  // crops and gathers out of decoded tiles, fills, and the stream synchronisation
};
inline constexpr int kHostStages = 5;

struct HostCostSnapshot {
  std::array<uint64_t, kHostStages> ns{};
  uint64_t operator[](HostStage s) const { return ns[static_cast<size_t>(s)]; }
};

class HostCost {
 public:
  void add(HostStage stage, uint64_t ns) { ns_[static_cast<size_t>(stage)].fetch_add(ns, std::memory_order_relaxed); }
  HostCostSnapshot snapshot() const {
    HostCostSnapshot s;
    for (size_t i = 0; i < ns_.size(); ++i) s.ns[i] = ns_[i].load(std::memory_order_relaxed);
    return s;
  }

 private:
  std::array<std::atomic<uint64_t>, kHostStages> ns_{};
};

// The calling thread's CPU time so far, in nanoseconds.
uint64_t thread_cpu_ns();

// Adds the calling thread's CPU time from its construction to its destruction to `cost`'s `stage` (nothing
// when `cost` is null).
class StageClock {
 public:
  StageClock(HostCost* cost, HostStage stage) : cost_(cost), stage_(stage), start_(cost ? thread_cpu_ns() : 0) {}
  ~StageClock() {
    if (cost_) cost_->add(stage_, thread_cpu_ns() - start_);
  }
  StageClock(const StageClock&) = delete;
  StageClock& operator=(const StageClock&) = delete;

 private:
  HostCost* cost_;
  HostStage stage_;
  uint64_t start_;
};

}  // namespace tilewise::gpu
