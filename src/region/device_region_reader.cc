// The read planner for device outputs (ImageView on a CUDA device).
//
// Same plan as the CPU path (region_reader.cc): background outside the level, then the tiles the region
// touches. JPEG tiles the GPU decoder takes are decoded by nvImageCodec, in place when the tile lies wholly
// inside the region, else into a device scratch tile that is then cropped into the output (a device-to-
// device 2-D copy). Other tiles, and tiles the GPU fails on, are decoded on the CPU (only the window the
// region needs) and uploaded. The call returns when the output is complete.
#include <algorithm>
#include <cstring>

#include "codecs/decoder_pool.h"
#include "codecs/gpu/gpu_decoder.h"
#include "region/region_reader.h"
#include "region/tile_fetcher.h"

namespace tilewise::region {

namespace gpu = codecs::gpu;

namespace {

struct Rect {
  int64_t x0, y0, x1, y1;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};
Rect intersect(const Rect& a, const Rect& b) {
  return {std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
}

// A device buffer released when the read ends.
struct DeviceScratch {
  void* p = nullptr;
  int device = 0;
  ~DeviceScratch() { gpu::device_free(p, device); }
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
  TW_ASSIGN_OR_RETURN(auto decoder, gpu::GpuDecoderPool::acquire(device));
  void* stream = decoder->stream();
  const Rect region{req.x, req.y, req.x + req.width, req.y + req.height};
  const Rect inside = intersect(region, Rect{0, 0, level.info.width, level.info.height});
  auto fill = [&](const Rect& r) -> Status {
    if (r.empty()) return Status();
    return gpu::device_fill(req.out.pixel(r.x0 - region.x0, r.y0 - region.y0), static_cast<size_t>(req.out.stride),
                            static_cast<int32_t>(r.x1 - r.x0), static_cast<int32_t>(r.y1 - r.y0), req.fill.data(), stream);
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

  struct Item {
    TileRef tile;
    Rect bounds, need;
    std::vector<uint8_t> bytes;
    bool in_place;
    size_t scratch_slot;
  };
  std::vector<Item> gpu_items;
  std::vector<Item> cpu_items;
  for (int64_t row = row0; row <= row1; ++row) {
    for (int64_t col = col0; col <= col1; ++col) {
      TileRef tile{&level, req.level_label, col, row};
      const Rect bounds{tile.x0(), tile.y0(), tile.x0() + tile.valid_cols(), tile.y0() + tile.valid_rows()};
      const Rect need = intersect(bounds, inside);
      if (fetcher.is_empty(tile)) {
        TW_RETURN_IF_ERROR(fill(need));
        continue;
      }
      Item item{tile, bounds, need, {}, false, 0};
      if (!gpu_codec) {
        cpu_items.push_back(std::move(item));
        continue;
      }
      TW_ASSIGN_OR_RETURN(item.bytes, fetcher.read_bytes(tile, /*splice_tables=*/true));
      item.in_place = tile.valid_cols() == tw && tile.valid_rows() == th && need.x0 == bounds.x0 &&
                      need.x1 == bounds.x1 && need.y0 == bounds.y0 && need.y1 == bounds.y1;
      gpu_items.push_back(std::move(item));
    }
  }

  // GPU decodes: in place, or into scratch tiles.
  DeviceScratch scratch{nullptr, device};
  const size_t tile_bytes = static_cast<size_t>(tw) * static_cast<size_t>(th) * 3;
  size_t slots = 0;
  for (Item& item : gpu_items) {
    if (!item.in_place) item.scratch_slot = slots++;
  }
  if (slots > 0) {
    TW_ASSIGN_OR_RETURN(scratch.p, gpu::device_malloc(slots * tile_bytes, device));
  }
  std::vector<gpu::DeviceTileRequest> requests;
  for (const Item& item : gpu_items) {
    gpu::DeviceTileRequest r;
    r.stream = item.bytes;
    r.width = static_cast<int32_t>(tw);
    r.height = static_cast<int32_t>(th);
    r.color = level.desc.color;
    if (item.in_place) {
      r.out = req.out.pixel(item.bounds.x0 - region.x0, item.bounds.y0 - region.y0);
      r.pitch = static_cast<size_t>(req.out.stride);
    } else {
      r.out = static_cast<uint8_t*>(scratch.p) + item.scratch_slot * tile_bytes;
      r.pitch = static_cast<size_t>(tw) * 3;
    }
    requests.push_back(r);
  }
  std::vector<Status> statuses(requests.size());
  decoder->decode_batch(requests, statuses);
  for (size_t i = 0; i < gpu_items.size(); ++i) {
    Item& item = gpu_items[i];
    if (!statuses[i].ok()) {  // the GPU refused or failed: the CPU decoders take the tile
      cpu_items.push_back(std::move(item));
      continue;
    }
    if (!item.in_place) {
      const uint8_t* src = static_cast<uint8_t*>(scratch.p) + item.scratch_slot * tile_bytes +
                           (item.need.y0 - item.bounds.y0) * tw * 3 + (item.need.x0 - item.bounds.x0) * 3;
      TW_RETURN_IF_ERROR(gpu::device_copy_2d(req.out.pixel(item.need.x0 - region.x0, item.need.y0 - region.y0),
                                             static_cast<size_t>(req.out.stride), src, static_cast<size_t>(tw) * 3,
                                             static_cast<int32_t>((item.need.x1 - item.need.x0) * 3),
                                             static_cast<int32_t>(item.need.y1 - item.need.y0), false, stream));
    }
  }

  // CPU decodes of the windows, uploaded.
  std::vector<uint8_t> host;
  for (const Item& item : cpu_items) {
    const int32_t w = static_cast<int32_t>(item.need.x1 - item.need.x0);
    const int32_t h = static_cast<int32_t>(item.need.y1 - item.need.y0);
    host.resize(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
    TW_RETURN_IF_ERROR(fetcher.decode_window(item.tile, ImageView{host.data(), int64_t{w} * 3, w, h, 3, {}},
                                             static_cast<int32_t>(item.need.x0 - item.bounds.x0),
                                             static_cast<int32_t>(item.need.y0 - item.bounds.y0)));
    TW_RETURN_IF_ERROR(gpu::device_copy_2d(req.out.pixel(item.need.x0 - region.x0, item.need.y0 - region.y0),
                                           static_cast<size_t>(req.out.stride), host.data(), static_cast<size_t>(w) * 3,
                                           w * 3, h, true, stream));
    TW_RETURN_IF_ERROR(gpu::device_synchronize(stream));  // `host` is reused by the next item
  }
  return gpu::device_synchronize(stream);
}

}  // namespace tilewise::region
