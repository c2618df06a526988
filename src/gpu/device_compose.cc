#include "gpu/device_compose.h"

#include <algorithm>
#include <mutex>

#include "util/thread_pool.h"

namespace tilewise::gpu {

Status crop_into_output(const DeviceRead& read, const DeviceTile& tile, const uint8_t* tile_pixels) {
  const region::Rect& need = tile.planned.need;
  const region::Rect& bounds = tile.planned.bounds;
  const int64_t tw = read.request.level->desc.width;
  const uint8_t* src = tile_pixels + (need.y0 - bounds.y0) * tw * 3 + (need.x0 - bounds.x0) * 3;
  return read.context.ops().copy_2d(read.at(need.x0, need.y0), read.pitch(), src, static_cast<size_t>(tw) * 3,
                                    static_cast<int32_t>(need.width() * 3), static_cast<int32_t>(need.height()),
                                    /*src_on_host=*/false, read.stream);
}

Status upload_cpu_window(const DeviceRead& read, const DeviceTile& tile, std::vector<uint8_t>& host, Stream stream) {
  const region::Rect& need = tile.planned.need;
  const region::Rect& bounds = tile.planned.bounds;
  const int32_t w = static_cast<int32_t>(need.width());
  const int32_t h = static_cast<int32_t>(need.height());
  host.resize(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  TW_RETURN_IF_ERROR(read.fetcher.decode_window(tile.planned.tile, ImageView{host.data(), int64_t{w} * 3, w, h, 3, {}},
                                                static_cast<int32_t>(need.x0 - bounds.x0),
                                                static_cast<int32_t>(need.y0 - bounds.y0)));
  DeviceOps& ops = read.context.ops();
  TW_RETURN_IF_ERROR(ops.copy_2d(read.at(need.x0, need.y0), read.pitch(), host.data(), static_cast<size_t>(w) * 3,
                                 w * 3, h, /*src_on_host=*/true, stream));
  return ops.synchronize(stream);
}

Status upload_cpu_tiles(const DeviceRead& read, const std::vector<DeviceTile>& tiles) {
  internal::ThreadPool& pool = internal::global_pool();
  const size_t parts = std::min<size_t>(tiles.size() / 4, static_cast<size_t>(pool.size()) + 1);
  if (parts <= 1) {
    std::vector<uint8_t> host;
    for (const DeviceTile& t : tiles) TW_RETURN_IF_ERROR(upload_cpu_window(read, t, host, read.stream));
    return Status();
  }
  std::mutex error_mutex;
  Status first_error;
  pool.parallel_for(static_cast<int64_t>(parts), [&](int64_t p) {
    Status s;
    auto stream = StreamLease::acquire(read.context.ops());
    std::vector<uint8_t> host;
    if (!stream.ok()) s = stream.status();
    for (size_t i = static_cast<size_t>(p); s.ok() && i < tiles.size(); i += parts) {
      s = upload_cpu_window(read, tiles[i], host, stream->get());
    }
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (first_error.ok()) first_error = std::move(s);
    }
  });
  return first_error;
}

}  // namespace tilewise::gpu
