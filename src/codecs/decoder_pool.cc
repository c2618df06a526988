#include "codecs/decoder_pool.h"

#include "util/fork_safe.h"

namespace tilewise::codecs {

DecoderPool::Lease DecoderPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      auto d = std::move(free_.back());
      free_.pop_back();
      return Lease(this, std::move(d));
    }
  }
  return Lease(this, std::make_unique<CpuDecoder>());
}

void DecoderPool::give_back(std::unique_ptr<CpuDecoder> d) {
  // Keep at most a generous bound of idle decoders; more only appear under bursts of user threads.
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() < 256) free_.push_back(std::move(d));
}

DecoderPool& DecoderPool::global() {
  static auto* pool = new internal::ForkSafe<DecoderPool>([] { return new DecoderPool(); });
  return pool->get();
}

}  // namespace tilewise::codecs
