#include "region/alpha_reader.h"

#include <cstring>
#include <vector>

#include "codecs/decoder_pool.h"
#include "region/region_plan.h"
#include "region/tile_fetcher.h"

namespace tilewise::region {

Status read_level_alpha(const formats::SlideModel& model, const formats::LevelModel& level, std::string_view label,
                        int64_t x, int64_t y, int64_t width, int64_t height, uint8_t* out, int64_t stride) {
  if (width < 0 || height < 0 || stride < width) return invalid_argument("alpha output is smaller than the region");
  for (int64_t row = 0; row < height; ++row) std::memset(out + row * stride, 0, static_cast<size_t>(width));
  TW_ASSIGN_OR_RETURN(const RegionPlan plan, plan_region(level, label, x, y, width, height));
  const TileFetcher fetcher(model);
  const int32_t sample = level.info.alpha_sample;
  std::vector<uint8_t> bytes, alpha;
  for (const PlannedTile& t : plan.tiles) {
    if (t.empty) continue;
    uint8_t* dst = out + plan.out_y(t.need.y0) * stride + plan.out_x(t.need.x0);
    if (sample < 0) {  // no alpha samples: every stored pixel is opaque
      for (int64_t row = 0; row < t.need.height(); ++row) {
        std::memset(dst + row * stride, 255, static_cast<size_t>(t.need.width()));
      }
      continue;
    }
    TW_RETURN_IF_ERROR(fetcher.read_bytes_into(t.tile, bytes));
    const int32_t tw = level.desc.width, rows = t.tile.valid_rows();
    alpha.resize(static_cast<size_t>(tw) * rows);
    {
      auto decoder = codecs::DecoderPool::global().acquire();
      Status s = decoder->decode_sample(bytes, level.desc, sample, alpha.data(), tw, rows);
      if (!s.ok()) return s.with_context(fetcher.context(t.tile));
    }
    const uint8_t* src = alpha.data() + (t.need.y0 - t.bounds.y0) * tw + (t.need.x0 - t.bounds.x0);
    for (int64_t row = 0; row < t.need.height(); ++row) {
      std::memcpy(dst + row * stride, src + row * tw, static_cast<size_t>(t.need.width()));
    }
  }
  return Status();
}

}  // namespace tilewise::region
