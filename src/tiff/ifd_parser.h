// IfdParser: reads one IFD's entries and turns the tags tilewise uses into an Ifd. Internal to the tiff
// layer; TiffFile::parse drives it over the IFD chain and SubIFDs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
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
  uint8_t value[8];      // the inline value/offset field as stored (4 or 8 bytes used)
  uint64_t data_offset;  // where an out-of-line payload is (for NDPI, with its implied high bits)
};

// NDPI: classic TIFF whose offsets may pass 4 GiB. Its next-IFD links are 8 bytes; 32-bit offsets to tag
// data get their implied high bits back (fix_ndpi_offset); NDPI's vendor tags are kept (Ifd::private_tags).
// A tag whose 32-bit offset equals its fixed offset in the first directory points to that same data (OpenSlide's rule).
using OffsetMap = std::vector<std::pair<uint16_t, uint64_t>>;  // tag -> fixed data offset, first IFD

// The largest offset with these low 32 bits that lies below the directory at dir_offset (OpenSlide's
// heuristic: a directory follows the data it describes).
uint64_t fix_ndpi_offset(uint64_t dir_offset, uint64_t offset);

class IfdParser {
 public:
  IfdParser(const io::Source& source, bool little_endian, bool big_tiff, const ParseLimits& limits,
            bool ndpi = false)
      : source_(source), little_endian_(little_endian), big_tiff_(big_tiff), ndpi_(ndpi), limits_(limits) {}

  // Parses the IFD at `offset`; `next` receives the offset of the following IFD in its chain (0 = end).
  // NDPI: `first` holds the first directory's fixed data offsets (nullptr while parsing it), and
  // `fixed` (when set) receives this directory's.
  Result<Ifd> parse(uint64_t offset, uint64_t* next, const OffsetMap* first = nullptr, OffsetMap* fixed = nullptr) const;

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
