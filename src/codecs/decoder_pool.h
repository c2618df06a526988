// DecoderPool: a process-wide free list of CpuDecoder objects.
//
// Any thread (a pool worker, a user thread calling read_region, a loader worker) leases a decoder for the
// duration of one chunk decode and returns it; decoders and their scratch buffers are reused, never shared.
// This gives each worker its own decoder without hidden thread-locals. The free list is split into shards
// chosen by the calling thread's id, each guarded by its own mutex held only to push or pop a pointer, so
// that 16+ threads leasing a decoder per tile do not all bounce one lock between cores. In a forked child a
// fresh pool is created (util/fork_safe.h).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "codecs/cpu/cpu_decoder.h"

namespace tilewise::codecs {

class DecoderPool {
 public:
  class Lease {
   public:
    Lease(DecoderPool* pool, size_t shard, std::unique_ptr<CpuDecoder> d)
        : pool_(pool), shard_(shard), decoder_(std::move(d)) {}
    ~Lease() { if (decoder_) pool_->give_back(shard_, std::move(decoder_)); }
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    CpuDecoder& operator*() { return *decoder_; }
    CpuDecoder* operator->() { return decoder_.get(); }

   private:
    DecoderPool* pool_;
    size_t shard_;
    std::unique_ptr<CpuDecoder> decoder_;
  };

  Lease acquire();
  static DecoderPool& global();

 private:
  static constexpr size_t kShards = 16;
  void give_back(size_t shard, std::unique_ptr<CpuDecoder> d);
  struct alignas(64) Shard {  // one cache line each: shards never share one
    std::mutex mutex;
    std::vector<std::unique_ptr<CpuDecoder>> free;
  };
  Shard shards_[kShards];
};

}  // namespace tilewise::codecs
