// TiffBuilder: writes small classic or BigTIFF files (either byte order) in memory, for crafting good and
// deliberately broken inputs in tests. Data blocks are appended after the header; IFDs are written last,
// so tests can point tags anywhere (including outside the file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tilewise::testing {

struct TagSpec {
  uint16_t tag;
  uint16_t type;
  uint64_t count;
  std::vector<uint8_t> data;  // raw bytes in the file's byte order, count * type size long
  // When set, the entry's value field holds this offset instead of inline data or an appended block.
  bool raw_offset = false;
  uint64_t offset = 0;
};

class TiffBuilder {
 public:
  TiffBuilder(bool big_tiff = false, bool little_endian = true);

  // Appends bytes to the file body and returns their offset.
  uint64_t append(const std::vector<uint8_t>& bytes);

  // Helpers encoding values in the file's byte order.
  TagSpec shorts(uint16_t tag, const std::vector<uint16_t>& v) const;
  TagSpec longs(uint16_t tag, const std::vector<uint32_t>& v) const;
  TagSpec long8s(uint16_t tag, const std::vector<uint64_t>& v) const;
  TagSpec ascii(uint16_t tag, const std::string& s) const;
  TagSpec bytes(uint16_t tag, const std::vector<uint8_t>& v) const;
  TagSpec rational(uint16_t tag, uint32_t num, uint32_t den) const;
  TagSpec offsets(uint16_t tag, const std::vector<uint64_t>& v) const;  // LONG or LONG8 by file kind

  // Adds an IFD with these tags (sorted by tag number when written). Returns its index.
  int add_ifd(std::vector<TagSpec> tags);
  // Makes IFD `from` point to IFD `to` as its next IFD (default: the chain in order of addition).
  void set_next(int from, int to);
  // Lists `children` in a SubIFDs tag of `parent`; children leave the main chain.
  void set_sub_ifds(int parent, std::vector<int> children);

  // Convenience: an uncompressed RGB tiled image whose pixel (x, y) = pattern(x, y); returns tags.
  std::vector<TagSpec> rgb_tiled_image(uint32_t width, uint32_t height, uint32_t tile_w, uint32_t tile_h,
                                       uint32_t new_subfile_type = 0);
  static void pattern(uint32_t x, uint32_t y, uint8_t rgb[3]);

  std::vector<uint8_t> finish();

 private:
  void put(std::vector<uint8_t>& out, uint64_t v, int bytes) const;
  bool big_;
  bool le_;
  std::vector<uint8_t> body_;
  std::vector<std::vector<TagSpec>> ifds_;
  std::vector<int> next_;
  std::vector<std::vector<int>> children_;
  std::vector<bool> is_child_;
};

}  // namespace tilewise::testing
