#include "gpu/device_context.h"

#include <map>
#include <memory>
#include <mutex>

#include "codecs/nvimgcodec/nvimgcodec_decoder.h"
#include "gpu/cuda_ops.h"
#include "util/fork_safe.h"
#include "util/settings.h"

namespace tilewise::gpu {

namespace {

class CudaContext final : public DeviceContext {
 public:
  explicit CudaContext(int device)
      : device_(device),
        ops_(cuda_ops(device)),
        scheduler_(device_scheduler(device)),
        cache_(static_cast<size_t>(internal::settings().gpu_tile_cache_bytes),
               [this](size_t bytes) -> void* {
                 auto p = ops_.allocate(bytes);
                 return p.ok() ? *p : nullptr;
               },
               [this](void* p) { ops_.release(p); }) {}

  DeviceOps& ops() override { return ops_; }
  Status can_decode(const codecs::TileDesc& desc) const override { return codecs::nvimgcodec::supports(desc); }
  Status can_decode_samples(const codecs::TileDesc& desc) const override {
    return codecs::nvimgcodec::supports_samples(desc);
  }
  DeviceTileCache* tile_cache() override { return &cache_; }
  Scheduler& scheduler() override { return scheduler_; }

  Result<TileLanes*> lanes() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lanes_) return lanes_.get();
    const int count = internal::settings().gpu_lanes;
    std::vector<std::unique_ptr<codecs::Decoder>> decoders;
    for (int i = 0; i < count; ++i) {
      TW_ASSIGN_OR_RETURN(auto decoder, codecs::nvimgcodec::create_decoder(device_));
      decoders.push_back(std::move(decoder));
    }
    LaneOptions options = TileLanes::options_from_settings(count);
    options.host_cost = &host_cost();
    lanes_ = TileLanes::make(std::move(decoders), options, &scheduler());
    return lanes_.get();
  }

  // For statistics and shutdown: the lanes if started.
  TileLanes* started_lanes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return lanes_.get();
  }

 private:
  const int device_;
  DeviceOps& ops_;
  Scheduler& scheduler_;
  DeviceTileCache cache_;
  std::mutex mutex_;
  std::unique_ptr<TileLanes> lanes_;
};

struct Registry {
  std::mutex mutex;
  std::map<int, std::unique_ptr<CudaContext>> contexts;
};

internal::ForkSafe<Registry>& registry() {
  static auto* r = new internal::ForkSafe<Registry>([] {
    auto* reg = new Registry();
    // The lanes (and their decoders) stop before the nvImageCodec instance is destroyed at exit.
    codecs::nvimgcodec::at_shutdown([] {
      Registry* g = registry().peek();
      if (!g) return;
      std::lock_guard<std::mutex> lock(g->mutex);
      for (auto& [device, context] : g->contexts) {
        if (TileLanes* lanes = context->started_lanes()) lanes->stop();
      }
    });
    return reg;
  });
  return *r;
}

CudaContext* find(int device) {
  Registry* r = registry().peek();
  if (!r) return nullptr;
  std::lock_guard<std::mutex> lock(r->mutex);
  auto it = r->contexts.find(device);
  return it == r->contexts.end() ? nullptr : it->second.get();
}

}  // namespace

Result<DeviceContext*> device_context(int device) {
  Registry& r = registry().get();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& slot = r.contexts[device];
  if (!slot) {
    // Checked once per device and process: a context exists only for a device that could be used.
    Status usable = device_status(device);
    if (!usable.ok()) {
      r.contexts.erase(device);
      return usable;
    }
    slot = std::make_unique<CudaContext>(device);
  }
  return static_cast<DeviceContext*>(slot.get());
}

LaneStats lane_stats(int device) {
  CudaContext* c = find(device);
  TileLanes* lanes = c ? c->started_lanes() : nullptr;
  return lanes ? lanes->stats() : LaneStats{};
}

DeviceTileCache::Stats tile_cache_stats(int device) {
  CudaContext* c = find(device);
  return c ? c->tile_cache()->stats() : DeviceTileCache::Stats{};
}

HostCostSnapshot host_cost_stats(int device) {
  CudaContext* c = find(device);
  return c ? c->host_cost().snapshot() : HostCostSnapshot{};
}

}  // namespace tilewise::gpu
