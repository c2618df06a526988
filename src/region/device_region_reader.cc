// The read planner for device outputs (ImageView on a CUDA device).
//
// Same plan as the CPU path (region_reader.cc): background outside the level, then the tiles the region
// touches. Tiles the GPU decoders take (JPEG, Aperio JPEG 2000) become jobs for the device's decode lanes
// (codecs/gpu/tile_lanes.h), which merge them with the tiles of every other concurrent read: a tile wholly
// inside the region is decoded in place into the caller's buffer, others into device scratch tiles that are
// cropped into the output afterwards. While the lanes are busy with earlier work, this thread decodes its own
// remaining tiles on the CPU (only the window the region needs) and uploads them; the lanes take the largest
// tiles first and this thread the smallest windows. Other tiles (lossless codecs), and tiles the GPU fails
// on, are decoded on the CPU. The call returns when the output is complete.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

#include "cache/tile_cache.h"
#include "codecs/gpu/device_memory.h"
#include "codecs/gpu/device_tile_cache.h"
#include "codecs/gpu/tile_lanes.h"
#include "region/region_reader.h"
#include "region/tile_fetcher.h"
#include "util/thread_pool.h"

namespace tilewise::region {

namespace gpu = codecs::gpu;

namespace {

struct Rect {
  int64_t x0, y0, x1, y1;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
  int64_t area() const { return (x1 - x0) * (y1 - y0); }
};
Rect intersect(const Rect& a, const Rect& b) {
  return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

// A pooled device buffer, returned when the read ends (after the work queued on `stream`, which reads it).
struct DeviceScratch {
  void* p = nullptr;
  int device = 0;
  void* stream = nullptr;
  ~DeviceScratch() {
    if (!p) return;
    gpu::device_synchronize(stream);
    gpu::device_free(p, device);
  }
};

// The device tile cache entries a read holds: released when the read ends, after the work on `stream` (the
// crops that read them); a reservation the read did not publish is dropped then (an early error).
struct CacheHold {
  gpu::DeviceTileCache* cache = nullptr;
  void* stream = nullptr;
  std::vector<std::pair<gpu::DeviceTileCache::Entry*, bool>> held;  // entry, still to publish
  void publish(gpu::DeviceTileCache::Entry* e, bool ok) {
    for (auto& [entry, pending] : held) {
      if (entry == e && pending) {
        cache->publish(e, ok);
        pending = false;
      }
    }
  }
  ~CacheHold() {
    if (held.empty()) return;
    gpu::device_synchronize(stream);
    for (auto& [entry, pending] : held) {
      if (pending) cache->publish(entry, false);
      cache->release(entry);
    }
  }
};

// TILEWISE_GPU_IN_PLACE=0 decodes every tile into scratch and copies it (for measuring in-place decoding,
// whose strided output may cost the hardware decoder more than the extra device copy).
bool in_place_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TILEWISE_GPU_IN_PLACE");
    return !(v && v[0] == '0');
  }();
  return enabled;
}

struct Item {
  TileRef tile;
  Rect bounds, need;
  bool in_place = false;
  size_t scratch_slot = 0;
  gpu::DeviceTileCache::Entry* cached = nullptr;  // the tile's device cache entry (ready, or reserved)
  uint8_t* cached_pixels = nullptr;
  bool cache_hit = false;  // the entry was ready: nothing to decode
  std::vector<uint8_t> bytes;
};

}  // namespace

Status RegionReader::read_device(const RegionRequest& req) const {
  const formats::LevelModel& level = *req.level;
  const int device = req.out.device.index;
  if (req.width < 0 || req.height < 0) return invalid_argument("region size must not be negative");
  if (req.width == 0 || req.height == 0) return Status();
  if (req.out.channels != 3 || req.out.width < req.width || req.out.height < req.height) {
    return invalid_argument("output buffer is smaller than the region or not a 3-channel buffer");
  }
  TW_RETURN_IF_ERROR(gpu::device_status(device));
  TW_ASSIGN_OR_RETURN(gpu::StreamLease stream_lease, gpu::StreamLease::acquire(device));
  void* stream = stream_lease.get();
  const Rect region{req.x, req.y, req.x + req.width, req.y + req.height};
  const Rect inside = intersect(region, Rect{0, 0, level.info.width, level.info.height});
  const size_t pitch = static_cast<size_t>(req.out.stride);
  auto at = [&](int64_t x, int64_t y) { return req.out.pixel(x - region.x0, y - region.y0); };
  auto fill = [&](const Rect& r) -> Status {
    if (r.empty()) return Status();
    return gpu::device_fill(at(r.x0, r.y0), pitch, static_cast<int32_t>(r.x1 - r.x0), static_cast<int32_t>(r.y1 - r.y0),
                            req.fill.data(), stream);
  };
  if (inside.empty()) {
    TW_RETURN_IF_ERROR(fill(region));
    return gpu::device_synchronize(stream);
  }
  TW_RETURN_IF_ERROR(fill({region.x0, region.y0, region.x1, inside.y0}));
  TW_RETURN_IF_ERROR(fill({region.x0, inside.y1, region.x1, region.y1}));
  TW_RETURN_IF_ERROR(fill({region.x0, inside.y0, inside.x0, inside.y1}));
  TW_RETURN_IF_ERROR(fill({inside.x1, inside.y0, region.x1, inside.y1}));

  const int64_t tw = level.desc.width, th = level.desc.height;
  const int64_t col0 = inside.x0 / tw, col1 = (inside.x1 - 1) / tw;
  const int64_t row0 = inside.y0 / th, row1 = (inside.y1 - 1) / th;
  TileFetcher fetcher(model_);
  const bool gpu_codec = gpu::GpuDecoder::can_decode(level.desc);

  std::vector<Item> gpu_items, cpu_items;
  for (int64_t row = row0; row <= row1; ++row) {
    for (int64_t col = col0; col <= col1; ++col) {
      TileRef tile{&level, req.level_label, col, row};
      const Rect bounds{tile.x0(), tile.y0(), tile.x0() + tile.valid_cols(), tile.y0() + tile.valid_rows()};
      const Rect need = intersect(bounds, inside);
      if (fetcher.is_empty(tile)) {
        TW_RETURN_IF_ERROR(fill(need));
        continue;
      }
      Item item{tile, bounds, need};
      item.in_place = in_place_enabled() && tile.valid_cols() == tw && tile.valid_rows() == th && need.x0 == bounds.x0 &&
                      need.x1 == bounds.x1 && need.y0 == bounds.y0 && need.y1 == bounds.y1;
      (gpu_codec ? gpu_items : cpu_items).push_back(std::move(item));
    }
  }

  // The CPU side: decode only the window the region needs, upload it on `on_stream`. `host` is reused (one
  // upload at a time per stream).
  auto decode_on_cpu = [&](const Item& item, std::vector<uint8_t>& host, void* on_stream) -> Status {
    const int32_t w = static_cast<int32_t>(item.need.x1 - item.need.x0);
    const int32_t h = static_cast<int32_t>(item.need.y1 - item.need.y0);
    host.resize(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
    TW_RETURN_IF_ERROR(fetcher.decode_window(item.tile, ImageView{host.data(), int64_t{w} * 3, w, h, 3, {}},
                                             static_cast<int32_t>(item.need.x0 - item.bounds.x0),
                                             static_cast<int32_t>(item.need.y0 - item.bounds.y0)));
    TW_RETURN_IF_ERROR(gpu::device_copy_2d(at(item.need.x0, item.need.y0), pitch, host.data(),
                                           static_cast<size_t>(w) * 3, w * 3, h, true, on_stream));
    return gpu::device_synchronize(on_stream);
  };
  std::vector<uint8_t> host;

  if (!gpu_items.empty()) {
    // Lanes take jobs from the front: whole tiles first, then cut tiles by decreasing window, so that this
    // thread, assisting from the back, takes the windows the CPU decodes most cheaply.
    std::stable_sort(gpu_items.begin(), gpu_items.end(),
                     [](const Item& a, const Item& b) { return a.need.area() > b.need.area(); });
    const size_t tile_bytes = static_cast<size_t>(tw) * static_cast<size_t>(th) * 3;
    // Cut tiles come from the device tile cache when another read decoded them (hits: no decode), or are
    // decoded into a reserved cache entry, or else into scratch.
    CacheHold hold{req.use_cache && cache::TileCache::global().enabled() ? &gpu::tile_cache(device) : nullptr, stream};
    size_t slots = 0;
    for (Item& item : gpu_items) {
      if (item.in_place) continue;
      if (hold.cache) {
        auto found = hold.cache->acquire(gpu::DeviceTileKey{slide_uid_, req.cache_level, item.tile.index()}, tile_bytes);
        if (found.entry) {
          hold.held.emplace_back(found.entry, !found.ready);
          item.cached = found.entry;
          item.cached_pixels = found.pixels;
          item.cache_hit = found.ready;
          continue;
        }
      }
      item.scratch_slot = slots++;
    }
    // Hits need no decode: they leave the job list (the order of the rest is kept).
    const auto first_hit =
        std::stable_partition(gpu_items.begin(), gpu_items.end(), [](const Item& item) { return !item.cache_hit; });
    std::vector<Item> hits(std::make_move_iterator(first_hit), std::make_move_iterator(gpu_items.end()));
    gpu_items.erase(first_hit, gpu_items.end());
    DeviceScratch scratch{nullptr, device, stream};
    if (slots > 0) {
      TW_ASSIGN_OR_RETURN(scratch.p, gpu::device_malloc(slots * tile_bytes, device));
    }
    std::vector<gpu::LaneJob> jobs(gpu_items.size());
    for (size_t i = 0; i < gpu_items.size(); ++i) {
      Item& item = gpu_items[i];
      TW_ASSIGN_OR_RETURN(item.bytes, fetcher.read_bytes(item.tile, /*splice_tables=*/true));
      jobs[i].cpu_pixels = item.need.area();
      gpu::DeviceTileRequest& r = jobs[i].request;
      r.stream = item.bytes;
      r.compression = level.desc.compression;
      r.width = static_cast<int32_t>(tw);
      r.height = static_cast<int32_t>(th);
      r.color = level.desc.color;
      if (item.in_place) {
        r.out = at(item.bounds.x0, item.bounds.y0);
        r.pitch = pitch;
      } else {
        r.out = item.cached ? item.cached_pixels : static_cast<uint8_t*>(scratch.p) + item.scratch_slot * tile_bytes;
        r.pitch = static_cast<size_t>(tw) * 3;
      }
    }
    TW_ASSIGN_OR_RETURN(gpu::TileLanes * lanes, gpu::TileLanes::get(device));
    // Where the CPU pool outpaces the lanes on these tiles (JPEG 2000 on a many-core host, by the measured
    // speeds), a large region is submitted in parts from the process-wide pool, so that every core assists
    // (each part is its own caller with its own upload stream). Else one caller: for JPEG, cores busy
    // decoding starve the lanes' submission threads (measured: 891 against 2260 MPix/s for a 4096^2 region).
    constexpr size_t kPart = 16;
    const int cpu_threads = internal::global_pool().size() + 1;
    const size_t parts = jobs.size() >= 4 * kPart && lanes->cpu_outpaces_gpu(jobs[0].request, cpu_threads)
                             ? (jobs.size() + kPart - 1) / kPart
                             : 1;
    if (parts == 1) {
      lanes->decode(jobs, [&](size_t i) { return decode_on_cpu(gpu_items[i], host, stream); });
    } else {
      internal::global_pool().parallel_for(static_cast<int64_t>(parts), [&](int64_t p) {
        const size_t first = static_cast<size_t>(p) * jobs.size() / parts;
        const size_t last = static_cast<size_t>(p + 1) * jobs.size() / parts;
        std::span<gpu::LaneJob> part(jobs.data() + first, last - first);
        auto part_stream = gpu::StreamLease::acquire(device);
        std::vector<uint8_t> part_host;
        lanes->decode(part, [&](size_t i) -> Status {
          if (!part_stream.ok()) return part_stream.status();
          return decode_on_cpu(gpu_items[first + i], part_host, part_stream->get());
        });
      });
    }
    // A cut tile decoded on the device (or found in the cache) is cropped into the output.
    auto crop = [&](const Item& item) -> Status {
      const uint8_t* tile_pixels =
          item.cached ? item.cached_pixels : static_cast<uint8_t*>(scratch.p) + item.scratch_slot * tile_bytes;
      const uint8_t* src = tile_pixels + (item.need.y0 - item.bounds.y0) * tw * 3 + (item.need.x0 - item.bounds.x0) * 3;
      return gpu::device_copy_2d(at(item.need.x0, item.need.y0), pitch, src, static_cast<size_t>(tw) * 3,
                                 static_cast<int32_t>((item.need.x1 - item.need.x0) * 3),
                                 static_cast<int32_t>(item.need.y1 - item.need.y0), false, stream);
    };
    for (size_t i = 0; i < gpu_items.size(); ++i) {
      Item& item = gpu_items[i];
      // A reserved cache entry is complete only when the GPU decoded the whole tile into it.
      if (item.cached) hold.publish(item.cached, jobs[i].on_gpu && jobs[i].status.ok());
      if (!jobs[i].on_gpu) {
        if (!jobs[i].status.ok()) return jobs[i].status;  // the CPU decoder's error, with the tile's context
        continue;
      }
      if (!jobs[i].status.ok()) {  // the GPU refused or failed: the CPU decoders take the tile
        cpu_items.push_back(std::move(item));
        continue;
      }
      if (!item.in_place) TW_RETURN_IF_ERROR(crop(item));
    }
    for (const Item& item : hits) TW_RETURN_IF_ERROR(crop(item));
  }

  // Tiles only the CPU decodes (lossless codecs, RGB-component JPEG, GPU failures): in parts on the pool when
  // there are many, each part with its own host buffer and upload stream.
  const size_t cpu_parts = std::min<size_t>(cpu_items.size() / 4, static_cast<size_t>(internal::global_pool().size()) + 1);
  if (cpu_parts <= 1) {
    for (const Item& item : cpu_items) TW_RETURN_IF_ERROR(decode_on_cpu(item, host, stream));
    return gpu::device_synchronize(stream);
  }
  std::mutex error_mutex;
  Status first_error;
  internal::global_pool().parallel_for(static_cast<int64_t>(cpu_parts), [&](int64_t p) {
    Status s;
    auto part_stream = gpu::StreamLease::acquire(device);
    std::vector<uint8_t> part_host;
    if (!part_stream.ok()) s = part_stream.status();
    for (size_t i = static_cast<size_t>(p); s.ok() && i < cpu_items.size(); i += cpu_parts) {
      s = decode_on_cpu(cpu_items[i], part_host, part_stream->get());
    }
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (first_error.ok()) first_error = std::move(s);
    }
  });
  TW_RETURN_IF_ERROR(first_error);
  return gpu::device_synchronize(stream);
}

}  // namespace tilewise::region
