// IfdParser: reads one IFD's entries and turns the tags tilewise uses into an Ifd. Internal to the tiff
// layer; TiffFile::parse drives it over the IFD chain and SubIFDs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/source.h"
#include "tiff/ifd.h"
#include "tiff/tiff_file.h"
#include "tilewise/status.h"

namespace tilewise::tiff {

struct RawEntry {
  uint16_t tag;
  uint16_t type;
  uint64_t count;
  uint8_t value[8];      // the value/offset field (4 or 8 bytes; NDPI: widened to 8 with its high half)
  int inline_bytes;      // how many bytes of `value` hold an inline value
  uint64_t data_offset;  // where an out-of-line payload is
};

// NDPI: classic TIFF whose offsets may pass 4 GiB. Its next-IFD links are 8 bytes, and after each
// directory's next link come the high 32 bits of every entry's value/offset field (4 bytes per entry, in
// entry order): offsets to tag data, and single LONG values such as a strip's offset, are those halves
// joined (as OpenSlide 4.0.1 and tifffile read it). NDPI's vendor tags are kept (Ifd::private_tags).

class IfdParser {
 public:
  IfdParser(const io::Source& source, bool little_endian, bool big_tiff, const ParseLimits& limits,
            bool ndpi = false)
      : source_(source), little_endian_(little_endian), big_tiff_(big_tiff), ndpi_(ndpi), limits_(limits) {}

  // Parses the IFD at `offset`; `next` receives the offset of the following IFD in its chain (0 = end).
  Result<Ifd> parse(uint64_t offset, uint64_t* next) const;

  uint64_t read_uint(const uint8_t* p, int bytes) const;

 private:
  Result<std::vector<uint8_t>> payload(const RawEntry& e) const;
  Result<std::vector<uint64_t>> uints(const RawEntry& e) const;
  Result<uint64_t> first_uint(const RawEntry& e) const;
  Result<std::string> ascii(const RawEntry& e) const;
  Result<double> rational_as_double(const RawEntry& e) const;
  Status apply(const RawEntry& e, Ifd& ifd) const;
  Status finish(Ifd& ifd) const;

  const io::Source& source_;
  bool little_endian_;
  bool big_tiff_;
  bool ndpi_;
  ParseLimits limits_;
};

}  // namespace tilewise::tiff
