#include "gpu/compose.h"

#include <algorithm>
#include <functional>
#include <mutex>

#include "util/thread_pool.h"

namespace tilewise::gpu {

DeviceCopy crop_of(const DeviceRead& read, const DeviceTile& tile, const uint8_t* tile_pixels) {
  const region::Rect& need = tile.planned.need;
  const region::Rect& bounds = tile.planned.bounds;
  const int64_t tw = read.request.level->desc.width;
  const int64_t px = static_cast<int64_t>(read.pixel_bytes());
  const uint8_t* src = tile_pixels + (need.y0 - bounds.y0) * tw * px + (need.x0 - bounds.x0) * px;
  return DeviceCopy{read.at(need.x0, need.y0), src, read.pitch(), static_cast<size_t>(tw * px),
                    static_cast<int32_t>(need.width() * px), static_cast<int32_t>(need.height())};
}

Status make_lane_job(const DeviceRead& read, const TileHold& hold, DeviceTile& t, int64_t cpu_pixels, LaneJob& job) {
  TW_ASSIGN_OR_RETURN(t.bytes, read.fetcher.read_bytes(t.planned.tile, /*splice_tables=*/true));
  const codecs::TileDesc& desc = read.request.level->desc;
  job.cpu_pixels = cpu_pixels;
  codecs::DecodeRequest& r = job.request;
  r.data = t.bytes;
  r.desc = &desc;
  r.out = read.request.out;
  r.out.width = desc.width;
  r.out.height = desc.height;
  if (t.in_place) {
    r.out.data = read.at(t.planned.bounds.x0, t.planned.bounds.y0);
  } else {
    r.out.data = hold.pixels(t);
    r.out.stride = int64_t{desc.width} * static_cast<int64_t>(read.pixel_bytes());
  }
  return Status();
}

namespace {

// A packed host view of `width` x `height` pixels like the read's output (RGB, or the level's samples) over
// `host`.
ImageView host_view(const DeviceRead& read, std::vector<uint8_t>& host, int32_t width, int32_t height) {
  const ImageView& out = read.request.out;
  return ImageView{host.data(), int64_t{width} * static_cast<int64_t>(out.pixel_bytes()), width, height, out.channels,
                   {}, out.sample_bytes};
}

// Runs part(p) for each p in [0, parts) as its own task on the decode pool; returns the first error.
Status parallel_parts(size_t parts, const std::function<Status(size_t)>& part) {
  std::mutex error_mutex;
  Status first_error;
  internal::global_pool().parallel_for(static_cast<int64_t>(parts), [&](int64_t p) {
    Status s = part(static_cast<size_t>(p));
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (first_error.ok()) first_error = std::move(s);
    }
  });
  return first_error;
}

}  // namespace

Status upload_cpu_tile(const DeviceRead& read, const DeviceTile& tile, uint8_t* dst, std::vector<uint8_t>& host,
                       Stream stream, std::span<const uint8_t> bytes) {
  const int32_t tw = read.request.level->desc.width;
  const int32_t rows = tile.planned.tile.valid_rows();
  const size_t row = static_cast<size_t>(tw) * read.pixel_bytes();
  host.resize(row * static_cast<size_t>(rows));
  const ImageView view = host_view(read, host, tw, rows);
  TW_RETURN_IF_ERROR(bytes.empty() ? read.fetcher.decode(tile.planned.tile, view)
                                   : read.fetcher.decode(tile.planned.tile, bytes, view));
  DeviceOps& ops = read.context.ops();
  TW_RETURN_IF_ERROR(ops.copy_2d(dst, row, host.data(), row, static_cast<int32_t>(row), rows, /*src_on_host=*/true,
                                 stream));
  return ops.synchronize(stream);
}

void decode_on_lanes(DeviceContext& context, TileLanes& lanes, const codecs::TileDesc& desc, std::span<LaneJob> jobs,
                     const CpuAssist& assist, bool spread) {
  constexpr size_t kPart = 16;
  internal::ThreadPool& pool = internal::global_pool();
  const int cpu_threads = pool.size() + 1;
  size_t per_call = 0;
  if (spread && jobs.size() >= 2 * kSpreadTiles) {
    // One call per lane, each of at least kSpreadTiles: every call pays a fixed latency, so one region's
    // tiles go in one round of large calls (bench/RESULTS.md, "One region in one round of large calls").
    const size_t lane_count = static_cast<size_t>(std::max(1, lanes.lane_count()));
    per_call = std::max((jobs.size() + lane_count - 1) / lane_count, kSpreadTiles);
  }
  size_t parts = 1;
  if (per_call > 0) {
    // one caller: the lanes take the whole list in one round
  } else if (jobs.size() >= 4 * kPart && lanes.cpu_outpaces_gpu(desc, cpu_threads)) {
    parts = (jobs.size() + kPart - 1) / kPart;
  }
  if (parts == 1) {
    auto stream = StreamLease::acquire(context.ops());
    std::vector<uint8_t> host;
    lanes.decode(
        jobs,
        [&](size_t i) -> Status {
          if (!stream.ok()) return stream.status();
          return assist(i, host, stream->get());
        },
        per_call);
    return;
  }
  pool.parallel_for(static_cast<int64_t>(parts), [&](int64_t p) {
    const size_t first = static_cast<size_t>(p) * jobs.size() / parts;
    const size_t last = static_cast<size_t>(p + 1) * jobs.size() / parts;
    auto stream = StreamLease::acquire(context.ops());
    std::vector<uint8_t> host;
    lanes.decode(jobs.subspan(first, last - first), [&](size_t i) -> Status {
      if (!stream.ok()) return stream.status();
      return assist(first + i, host, stream->get());
    });
  });
}

Status upload_cpu_window(const DeviceRead& read, const DeviceTile& tile, std::vector<uint8_t>& host, Stream stream,
                         std::span<const uint8_t> bytes) {
  const region::Rect& need = tile.planned.need;
  const region::Rect& bounds = tile.planned.bounds;
  const int32_t w = static_cast<int32_t>(need.width());
  const int32_t h = static_cast<int32_t>(need.height());
  host.resize(static_cast<size_t>(w) * static_cast<size_t>(h) * read.pixel_bytes());
  const ImageView view = host_view(read, host, w, h);
  const auto x = static_cast<int32_t>(need.x0 - bounds.x0), y = static_cast<int32_t>(need.y0 - bounds.y0);
  const size_t row = static_cast<size_t>(w) * read.pixel_bytes();
  TW_RETURN_IF_ERROR(bytes.empty() ? read.fetcher.decode_window(tile.planned.tile, view, x, y)
                                   : read.fetcher.decode_window(tile.planned.tile, bytes, view, x, y));
  DeviceOps& ops = read.context.ops();
  TW_RETURN_IF_ERROR(ops.copy_2d(read.at(need.x0, need.y0), read.pitch(), host.data(), row, static_cast<int32_t>(row), h,
                                 /*src_on_host=*/true, stream));
  return ops.synchronize(stream);
}

Status upload_cpu_tiles(const DeviceRead& read, const std::vector<DeviceTile>& tiles) {
  const size_t parts = std::min<size_t>(tiles.size() / 4, static_cast<size_t>(internal::global_pool().size()) + 1);
  if (parts <= 1) {
    std::vector<uint8_t> host;
    for (const DeviceTile& t : tiles) TW_RETURN_IF_ERROR(upload_cpu_window(read, t, host, read.stream));
    return Status();
  }
  return parallel_parts(parts, [&](size_t p) -> Status {
    TW_ASSIGN_OR_RETURN(StreamLease stream, StreamLease::acquire(read.context.ops()));
    std::vector<uint8_t> host;
    for (size_t i = p; i < tiles.size(); i += parts) TW_RETURN_IF_ERROR(upload_cpu_window(read, tiles[i], host, stream.get()));
    return Status();
  });
}

}  // namespace tilewise::gpu
