// libFuzzer target: every CPU decoder. The first bytes choose the codec, the tile geometry and (for JPEG)
// a split point between JPEGTables and tile data; the rest is the encoded chunk. Both whole-tile and
// window decoding are exercised; a JPEG is also walked by the MCU index (codecs/jpeg/mcu_index.h) and
// resumed at each checkpoint it finds, as an NDPI unit's windows are.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "codecs/cpu/cpu_decoder.h"
#include "codecs/jpeg/mcu_index.h"

using namespace tilewise::codecs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  static CpuDecoder decoder;  // reused across inputs, as workers reuse theirs
  TileDesc d;
  const uint8_t kind = data[0] % 6;
  d.compression = kind == 0 ? Compression::kJpeg : kind == 1 ? Compression::kJpeg2000 : kind == 2 ? Compression::kDeflate
                : kind == 3 ? Compression::kLzw : kind == 4 ? Compression::kZstd : Compression::kNone;
  d.width = 1 + data[1] % 128;
  d.height = 1 + data[2] % 128;
  const uint8_t flags = data[3];
  d.samples_per_pixel = (flags & 3) == 0 ? 1 : (flags & 3) == 1 ? 3 : (flags & 3) == 2 ? 4 : 2;
  d.bits_per_sample = (flags & 4) && kind >= 2 ? 16 : 8;
  d.color = (flags & 8) ? ColorSpace::kYCbCr : (d.samples_per_pixel >= 3 ? ColorSpace::kRgb : ColorSpace::kMinIsBlack);
  if (kind >= 2 && d.color == ColorSpace::kYCbCr) d.color = ColorSpace::kRgb;
  d.predictor = (flags & 16) ? 2 : 1;
  d.big_endian = (flags & 32) != 0;
  const size_t split = kind == 0 ? std::min<size_t>(data[4] * 4u, size - 5) : 0;
  d.jpeg_tables = std::span<const uint8_t>(data + 5, split);
  std::span<const uint8_t> payload(data + 5 + split, size - 5 - split);
  if (!CpuDecoder::supports(d).ok()) return 0;
  std::vector<uint8_t> out(static_cast<size_t>(d.width) * d.height * 3);
  (void)decoder.decode(payload, d, tilewise::ImageView{out.data(), d.width * 3, d.width, d.height, 3, {}});
  const int32_t x = data[4] % d.width, y = data[3] % d.height;
  const int32_t w = std::max(1, (d.width - x) / 2), h = std::max(1, (d.height - y) / 2);
  (void)decoder.decode_window(payload, d, tilewise::ImageView{out.data(), w * 3, w, h, 3, {}}, x, y);
  if (kind == 0) {
    auto layout = parse_entropy_layout(payload);
    if (layout.ok() && payload.size() > (*layout)->header_end) {
      const EntropyLayout& l = **layout;
      const auto entropy = payload.subspan(l.header_end);
      McuIndex index;
      const int64_t mcus = 1 + data[1] % 64;
      (void)extend_mcu_index(l, entropy, mcus, SIZE_MAX, index);
      std::vector<uint8_t> stream;
      for (size_t k = 1; k + 1 < index.points.size(); ++k) {
        if (!resume_stream(l, payload, entropy, index.points[k], &index.points[k + 1], kMcuIndexSpacing, stream).ok()) continue;
        TileDesc rd = d;
        rd.color = ColorSpace::kYCbCr;
        rd.width = (1 + kMcuIndexSpacing) * l.mcu_width;
        rd.height = l.mcu_height;
        std::vector<uint8_t> px(static_cast<size_t>(rd.width) * rd.height * 3);
        (void)decoder.decode(stream, rd, tilewise::ImageView{px.data(), rd.width * 3, rd.width, rd.height, 3, {}});
      }
    }
  }
  return 0;
}
