#include "formats/drivers/olympus_ets.h"

#include <cstring>
#include <string>

namespace tilewise::formats::olympus {
namespace {

template <typename T>
T at(const std::vector<uint8_t>& b, size_t p) {
  T v;
  std::memcpy(&v, b.data() + p, sizeof(T));
  return v;
}

}  // namespace

Result<Ets> read_ets(const io::Source& source) {
  const uint64_t size = source.size();
  if (size < 64) return corrupt("an ETS file of " + std::to_string(size) + " bytes has no SIS header");
  std::vector<uint8_t> sis(64);
  TW_RETURN_IF_ERROR(source.pread(sis, 0));
  if (std::memcmp(sis.data(), "SIS", 3) != 0 || at<uint32_t>(sis, 4) != 64) return corrupt("no SIS header");
  Ets e;
  const uint32_t coords = at<uint32_t>(sis, 12);
  const uint64_t header_pos = at<uint64_t>(sis, 16);
  const uint64_t table_pos = at<uint64_t>(sis, 32);
  const uint32_t count = at<uint32_t>(sis, 40);
  if (coords < 2 || coords > 16) return corrupt("tiles of " + std::to_string(coords) + " coordinates");
  if (header_pos > size || size - header_pos < 228) return corrupt("the ETS header lies past the end of the file");
  std::vector<uint8_t> h(228);
  TW_RETURN_IF_ERROR(source.pread(h, header_pos));
  if (std::memcmp(h.data(), "ETS", 3) != 0) return corrupt("no ETS header at " + std::to_string(header_pos));
  e.coords = static_cast<int32_t>(coords);
  e.sample_type = at<int32_t>(h, 8);
  e.samples = at<int32_t>(h, 12);
  e.color_space = at<int32_t>(h, 16);
  e.codec = at<int32_t>(h, 20);
  e.tile_width = at<int32_t>(h, 28);
  e.tile_height = at<int32_t>(h, 32);
  std::memcpy(e.background.data(), h.data() + 40 + 17 * 4, e.background.size());
  e.pyramid = at<uint32_t>(h, 40 + 17 * 4 + 40 + 4) != 0;
  if (e.tile_width < 1 || e.tile_height < 1 || e.tile_width > 65536 || e.tile_height > 65536) {
    return corrupt("tiles of " + std::to_string(e.tile_width) + "x" + std::to_string(e.tile_height) + " pixels");
  }
  const uint64_t entry = 4 + 4 * uint64_t{coords} + 16;
  if (table_pos > size || (size - table_pos) / entry < count) {
    return corrupt("a table of " + std::to_string(count) + " tiles runs past the end of the file");
  }
  std::vector<uint8_t> table(entry * count);
  TW_RETURN_IF_ERROR(source.pread(table, table_pos));
  e.coord.resize(size_t{coords} * count);
  e.offsets.resize(count);
  e.lengths.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t p = entry * i;
    std::memcpy(e.coord.data() + size_t{coords} * i, table.data() + p + 4, 4 * size_t{coords});
    e.offsets[i] = at<uint64_t>(table, p + 4 + 4 * coords);
    e.lengths[i] = at<uint32_t>(table, p + 12 + 4 * coords);
    if (e.offsets[i] > size || size - e.offsets[i] < e.lengths[i]) {
      return corrupt("tile " + std::to_string(i) + " (" + std::to_string(e.lengths[i]) + " bytes at " +
                     std::to_string(e.offsets[i]) + ") lies past the end of the file");
    }
  }
  return e;
}

}  // namespace tilewise::formats::olympus
