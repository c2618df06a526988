// The one device read path (region_reader.h): regions of one level, planned as one batch.
//
// 1. Each region's background and empty tiles are filled.
// 2. The tiles of all regions are deduplicated: a tile two patches of a batch touch (or two parts of one
//    region of a positioned level show) is decoded once.
// 3. Each distinct tile is a device tile cache hit, or is decoded by the lanes (tile_lanes.h) - in place
//    when exactly one region needs it whole, else into a cache reservation or scratch (tile_hold.h).
//    All of the batch's tiles are queued at once, largest CPU decode first, so the lanes make full-size
//    nvImageCodec batches (a region at a time gave them 4-6 tiles per call) and the calling thread, which
//    assists from the back, takes the cheapest: a tile only one region needs is decoded on the CPU just for
//    that region's window, straight into its output; a shared one is decoded whole into its slot.
// 4. Every region is cut out of the slots by one DeviceOps::copy_batch (one kernel launch for hundreds of
//    crops), and the stream is synchronised once.
// A tile that fails on the GPU is decoded on the CPU for each region that needs it; a tile that fails there
// too fails only the regions that need it. Tiles of a codec no GPU decoder takes are decoded on the CPU and
// uploaded, region by region. Regions are taken in groups whose distinct tiles fit in kGroupBytes of
// scratch, so that device memory stays bounded for any batch.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "cache/tile_cache.h"
#include "gpu/compose.h"
#include "gpu/device_read.h"
#include "gpu/region_reader.h"
#include "gpu/tile_hold.h"
#include "util/thread_pool.h"

namespace tilewise::gpu {

namespace {

constexpr size_t kGroupBytes = size_t{256} << 20;

// What one region takes from one distinct tile.
struct Piece {
  size_t read;      // index into the batch's reads
  DeviceTile tile;  // its planned tile (need: the region's window)
  bool served = false;  // already written into the region's output (in place or by a CPU decode)
};

// The distinct tiles of a group of regions, decoded and cut out together.
class GroupRead {
 public:
  GroupRead(DeviceContext& context, Stream stream, const std::vector<DeviceRead>& reads, uint64_t slide_uid,
            std::vector<Status>& statuses)
      : context_(context), stream_(stream), reads_(reads), slide_uid_(slide_uid), statuses_(statuses) {}

  // Adds the non-empty tiles of read r.
  void add(size_t r) {
    for (const region::PlannedTile& t : reads_[r].plan.tiles) {
      if (t.empty) continue;
      auto [it, inserted] = index_.emplace(t.tile.index(), tiles_.size());
      if (inserted) {
        tiles_.push_back(DeviceTile{t});
        tiles_.back().planned.need = t.bounds;  // decoded whole: several regions may share it
        pieces_of_.emplace_back();
      }
      pieces_of_[it->second].push_back(pieces_.size());
      pieces_.push_back(Piece{r, DeviceTile{t}});
    }
  }
  size_t distinct_tiles() const { return tiles_.size(); }

  // `spread`: one large region, dealt to the lanes in one round of large calls (decode_on_lanes).
  Status run(bool caching, bool spread) {
    if (tiles_.empty()) return Status();
    const DeviceRead& any = reads_[pieces_.front().read];
    for (size_t i = 0; i < tiles_.size(); ++i) {
      const region::PlannedTile& only = pieces_[pieces_of_[i].front()].tile.planned;
      tiles_[i].in_place = single(i) && context_.in_place() && only.whole && !only.padded_rows;
    }
    TileHold hold(context_.ops(), stream_, any.tile_bytes(), caching ? context_.tile_cache() : nullptr);
    TW_RETURN_IF_ERROR(hold.reserve(tiles_, slide_uid_, region::tile_cache_level(any.request)));

    // The tiles to decode (not cache hits), their bytes read on the pool.
    std::vector<size_t> todo;
    for (size_t i = 0; i < tiles_.size(); ++i) {
      if (!tiles_[i].cache_hit) todo.push_back(i);
    }
    // Lanes take jobs from the front, the assisting caller from the back: the largest CPU decodes first.
    std::stable_sort(todo.begin(), todo.end(), [&](size_t a, size_t b) { return cpu_pixels(a) > cpu_pixels(b); });
    std::vector<int64_t> units;
    for (size_t i : todo) units.push_back(tiles_[i].planned.tile.index());
    HostCost* cost = &context_.host_cost();
    {
      StageClock clock(cost, HostStage::kRead);
      region::prefetch_units(*any.request.level, units);  // remote sources: the batch's bytes together
    }
    std::vector<LaneJob> all_jobs(todo.size());
    std::vector<Status> read_status(todo.size());
    internal::global_pool().parallel_for(static_cast<int64_t>((todo.size() + kReadChunk - 1) / kReadChunk),
                                         [&](int64_t c) {
                                           StageClock clock(cost, HostStage::kRead);
                                           const size_t last = std::min(todo.size(), (static_cast<size_t>(c) + 1) * kReadChunk);
                                           for (size_t j = static_cast<size_t>(c) * kReadChunk; j < last; ++j) {
                                             read_status[j] = prepare_job(todo[j], hold, all_jobs[j]);
                                           }
                                         });
    // A tile whose bytes cannot be read fails the regions that need it; the others go on.
    std::vector<LaneJob> jobs;
    std::vector<size_t> job_tile;
    for (size_t j = 0; j < todo.size(); ++j) {
      if (!read_status[j].ok()) {
        hold.publish(tiles_[todo[j]], false);
        fail_tile(todo[j], read_status[j]);
        continue;
      }
      jobs.push_back(std::move(all_jobs[j]));
      job_tile.push_back(todo[j]);
    }
    std::vector<char> whole_on_cpu(jobs.size(), 0);  // char, not bool: assisting threads write their own
    if (!jobs.empty()) {
      TW_ASSIGN_OR_RETURN(TileLanes * lanes, context_.lanes());
      decode_on_lanes(context_, *lanes, any.request.level->desc, jobs,
                      [&](size_t j, std::vector<uint8_t>& host, Stream s) -> Status {
                        TW_ASSIGN_OR_RETURN(whole_on_cpu[j], assist(job_tile[j], hold, host, s));
                        return Status();
                      },
                      spread);
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      const size_t i = job_tile[j];
      const LaneJob& job = jobs[j];
      // A reserved cache entry is complete when the whole tile was decoded into it, on the GPU or the CPU.
      hold.publish(tiles_[i], job.status.ok() && (job.on_gpu || whole_on_cpu[j]));
      if (job.status.ok()) continue;
      if (job.on_gpu) {
        fall_back(i);  // the GPU backend refused or failed the tile
      } else {
        fail_tile(i, job.status);  // the CPU decoder's error, with the tile's context
      }
    }

    decode_fallbacks();

    StageClock clock(cost, HostStage::kCompose);
    std::vector<DeviceCopy> crops;
    for (size_t i = 0; i < tiles_.size(); ++i) {
      if (tiles_[i].in_place) continue;
      for (size_t k : pieces_of_[i]) {
        const Piece& p = pieces_[k];
        if (p.served || !statuses_[reads_[p.read].request_index].ok()) continue;
        crops.push_back(crop_of(reads_[p.read], p.tile, hold.pixels(tiles_[i])));
      }
    }
    return context_.ops().copy_batch(crops, stream_);  // the hold synchronises the stream before it goes
  }

 private:
  static constexpr size_t kReadChunk = 16;

  bool single(size_t i) const { return pieces_of_[i].size() == 1; }

  // What an assisting CPU decode of distinct tile i produces: a single region's window, else the whole tile.
  int64_t cpu_pixels(size_t i) const {
    return single(i) ? pieces_[pieces_of_[i].front()].tile.window_pixels() : tiles_[i].planned.bounds.area();
  }

  Status prepare_job(size_t i, const TileHold& hold, LaneJob& job) {
    return make_lane_job(reads_[pieces_[pieces_of_[i].front()].read], hold, tiles_[i], cpu_pixels(i), job);
  }

  // The CPU decode of distinct tile i for busy lanes: for a single region, only its window, straight into
  // its output; for several, the whole tile into its slot. True when the whole tile went into the slot.
  Result<char> assist(size_t i, const TileHold& hold, std::vector<uint8_t>& host, Stream s) {
    if (single(i)) {
      Piece& p = pieces_[pieces_of_[i].front()];
      TW_RETURN_IF_ERROR(upload_cpu_window(reads_[p.read], p.tile, host, s, tiles_[i].bytes));
      p.served = true;
      return char{0};
    }
    const DeviceRead& read = reads_[pieces_[pieces_of_[i].front()].read];
    TW_RETURN_IF_ERROR(upload_cpu_tile(read, tiles_[i], hold.pixels(tiles_[i]), host, s, tiles_[i].bytes));
    return char{1};
  }

  // Tile i failed on the GPU: each region that needs it gets its window from the CPU decoder.
  void fall_back(size_t i) {
    for (size_t k : pieces_of_[i]) {
      Piece& p = pieces_[k];
      p.served = true;
      fallback_[p.read].push_back(p.tile);
    }
  }
  // The fallbacks' CPU decodes, each region's on the pool (upload_cpu_tiles); a failure fails its region.
  void decode_fallbacks() {
    for (auto& [r, tiles] : fallback_) {
      Status s = upload_cpu_tiles(reads_[r], tiles);
      if (!s.ok()) fail_read(r, s);
    }
    fallback_.clear();
  }

  void fail_tile(size_t i, const Status& s) {
    for (size_t k : pieces_of_[i]) fail_read(pieces_[k].read, s);
  }
  void fail_read(size_t r, const Status& s) {
    Status& status = statuses_[reads_[r].request_index];
    if (status.ok()) status = s;
  }

  DeviceContext& context_;
  Stream stream_;
  const std::vector<DeviceRead>& reads_;
  uint64_t slide_uid_;
  std::vector<Status>& statuses_;
  std::unordered_map<int64_t, size_t> index_;  // tile index -> tiles_
  std::vector<DeviceTile> tiles_;               // the distinct tiles, decoded whole
  std::vector<std::vector<size_t>> pieces_of_;  // per distinct tile: its pieces
  std::vector<Piece> pieces_;
  std::map<size_t, std::vector<DeviceTile>> fallback_;  // per read: its pieces the GPU failed on
};

}  // namespace

std::vector<Status> DeviceRegionReader::read_batch(std::span<const region::RegionRequest> requests,
                                                   DeviceContext* given) const {
  std::vector<Status> statuses(requests.size());
  if (requests.empty()) return statuses;
  const region::RegionRequest& first = requests.front();
  for (const region::RegionRequest& r : requests) {
    if (r.level != first.level || r.out.device.index != first.out.device.index || r.out.device.is_cpu() ||
        r.out.is_rgb8() != first.out.is_rgb8()) {
      statuses.assign(requests.size(),
                      invalid_argument("a batch read takes regions of one level into one device, all RGB or all samples"));
      return statuses;
    }
  }
  DeviceContext* context = given;
  if (!context) {
    auto found = device_context(first.out.device.index);
    if (!found.ok()) return std::vector<Status>(requests.size(), found.status());
    context = *found;
  }
  std::vector<region::RegionPlan> plans(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const region::RegionRequest& req = requests[i];
    auto plan = region::plan_region(*req.level, req.level_label, req.x, req.y, req.width, req.height);
    if (plan.ok()) {
      plans[i] = std::move(plan).value();
    } else {
      statuses[i] = plan.status();
    }
  }
  return read_planned(requests, plans, *context, /*large=*/false, std::move(statuses));
}

std::vector<Status> DeviceRegionReader::read_planned(std::span<const region::RegionRequest> requests,
                                                     std::span<const region::RegionPlan> plans, DeviceContext& context,
                                                     bool large, std::vector<Status> statuses) const {
  auto fail_all = [&](const Status& s) {
    for (Status& st : statuses) {
      if (st.ok()) st = s;
    }
    return statuses;
  };
  DeviceOps& ops = context.ops();
  auto stream = StreamLease::acquire(ops);
  if (!stream.ok()) return fail_all(stream.status());
  const region::TileFetcher fetcher(model_);

  // Checks and fills; the regions that pass are read below.
  std::vector<DeviceRead> reads;
  reads.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const region::RegionRequest& req = requests[i];
    if (!statuses[i].ok() || plans[i].region.empty()) continue;
    statuses[i] = check_output(req);
    if (!statuses[i].ok()) continue;
    reads.push_back(DeviceRead{context, req, plans[i], fetcher, stream->get(), i});
    const DeviceRead& read = reads.back();
    auto fill = [&](const region::Rect& r) {  // the RGB rendering's background, or samples of 0
      if (!req.out.is_rgb8()) {
        return ops.clear(read.at(r.x0, r.y0), read.pitch(), static_cast<size_t>(r.width()) * read.pixel_bytes(),
                         static_cast<int32_t>(r.height()), read.stream);
      }
      return ops.fill(read.at(r.x0, r.y0), read.pitch(), static_cast<int32_t>(r.width()),
                      static_cast<int32_t>(r.height()), req.fill.data(), read.stream);
    };
    for (const region::Rect& band : read.plan.background) {
      if (statuses[i].ok()) statuses[i] = fill(band);
    }
    for (const region::PlannedTile& t : read.plan.tiles) {
      if (t.empty && statuses[i].ok()) statuses[i] = fill(t.need);
    }
  }
  if (!reads.empty() && !context.can_decode_into(requests.front().level->desc, requests.front().out).ok()) {
    // A codec the lanes do not take: each region's windows decoded on the CPU and uploaded.
    for (const DeviceRead& read : reads) {
      std::vector<DeviceTile> tiles;
      std::vector<int64_t> units;
      for (const region::PlannedTile& t : read.plan.tiles) {
        if (t.empty) continue;
        tiles.push_back(DeviceTile{t});
        units.push_back(t.tile.index());
      }
      region::prefetch_units(*read.request.level, units);  // remote sources: the region's bytes together
      Status& status = statuses[read.request_index];
      if (status.ok()) status = upload_cpu_tiles(read, tiles);
    }
    reads.clear();
  }
  const bool caching = !reads.empty() && reads.front().request.use_cache && cache::TileCache::global().enabled();
  const size_t max_tiles = reads.empty() ? 1 : std::max<size_t>(1, kGroupBytes / reads.front().tile_bytes());
  for (size_t r = 0; r < reads.size();) {
    GroupRead group(context, stream->get(), reads, slide_uid_, statuses);
    // At least one region per group; more while the distinct tiles fit the scratch budget.
    do {
      group.add(r++);
    } while (r < reads.size() && group.distinct_tiles() + reads[r].plan.tiles.size() <= max_tiles);
    Status s = group.run(caching, large);
    if (!s.ok()) return fail_all(s);
  }
  Status s;
  {
    StageClock clock(&context.host_cost(), HostStage::kCompose);
    s = ops.synchronize(stream->get());
  }
  if (!s.ok()) return fail_all(s);
  return statuses;
}

}  // namespace tilewise::gpu
