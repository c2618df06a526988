// DecoderPool: a process-wide free list of CpuDecoder objects.
//
// Any thread (a pool worker, a user thread calling read_region, a loader worker) leases a decoder for the
// duration of one chunk decode and returns it; decoders and their scratch buffers are reused, never shared.
// This gives each worker its own decoder without hidden thread-locals. The free list is guarded by one
// mutex held only to push or pop a pointer. In a forked child a fresh pool is created (util/fork_safe.h).
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
    Lease(DecoderPool* pool, std::unique_ptr<CpuDecoder> d) : pool_(pool), decoder_(std::move(d)) {}
    ~Lease() { if (decoder_) pool_->give_back(std::move(decoder_)); }
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    CpuDecoder& operator*() { return *decoder_; }
    CpuDecoder* operator->() { return decoder_.get(); }

   private:
    DecoderPool* pool_;
    std::unique_ptr<CpuDecoder> decoder_;
  };

  Lease acquire();
  static DecoderPool& global();

 private:
  void give_back(std::unique_ptr<CpuDecoder> d);
  std::mutex mutex_;
  std::vector<std::unique_ptr<CpuDecoder>> free_;
};

}  // namespace tilewise::codecs
