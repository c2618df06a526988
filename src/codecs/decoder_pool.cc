#include "codecs/decoder_pool.h"

#include <functional>
#include <thread>

#include "util/fork_safe.h"

namespace tilewise::codecs {

DecoderPool::Lease DecoderPool::acquire() {
  const size_t shard = std::hash<std::thread::id>{}(std::this_thread::get_id()) % kShards;
  {
    Shard& s = shards_[shard];
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.free.empty()) {
      auto d = std::move(s.free.back());
      s.free.pop_back();
      return Lease(this, shard, std::move(d));
    }
  }
  return Lease(this, shard, std::make_unique<CpuDecoder>());
}

void DecoderPool::give_back(size_t shard, std::unique_ptr<CpuDecoder> d) {
  // Keep at most a generous bound of idle decoders; more only appear under bursts of user threads.
  Shard& s = shards_[shard];
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.free.size() < 32) s.free.push_back(std::move(d));
}

DecoderPool& DecoderPool::global() {
  static auto* pool = new internal::ForkSafe<DecoderPool>([] { return new DecoderPool(); });
  return pool->get();
}

}  // namespace tilewise::codecs
