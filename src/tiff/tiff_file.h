// TiffFile: a classic TIFF or BigTIFF file (either byte order) parsed once into an immutable model.
//
// parse() walks the main IFD chain and every SubIFD (and reads Hamamatsu NDPI's 64-bit variant), refusing loops, offsets outside the file, counts whose
// byte size overflows, and absurd structures, with a Corrupt status naming the file and the IFD. After
// parse() the object is immutable and safe to share between threads without locks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/source.h"
#include "tiff/ifd.h"
#include "tilewise/status.h"

namespace tilewise::tiff {

struct ParseLimits {
  uint32_t max_ifds = 4096;               // main-chain IFDs plus SubIFDs
  uint64_t max_tag_bytes = 256ull << 20;  // one tag's payload
};

class TiffFile {
 public:
  // Returns Unsupported("not a TIFF file") when the header is not a TIFF header, Corrupt on a damaged
  // structure.
  static Result<std::shared_ptr<const TiffFile>> parse(std::shared_ptr<const io::Source> source,
                                                       const ParseLimits& limits = {});

  // True when the first bytes look like a TIFF/BigTIFF header (cheap format sniffing).
  static bool has_tiff_header(const io::Source& source);

  const io::Source& source() const { return *source_; }
  const std::shared_ptr<const io::Source>& source_ptr() const { return source_; }
  const std::string& name() const { return source_->name(); }
  bool big_tiff() const { return big_tiff_; }
  // Hamamatsu NDPI: classic TIFF with 64-bit IFD links and implied high offset bits (ifd_parser.h).
  bool ndpi() const { return ndpi_; }
  bool little_endian() const { return little_endian_; }
  const std::vector<Ifd>& ifds() const { return ifds_; }
  // The bytes of the file's own structure, sorted by offset: the header and every directory's entry table.
  // No image data lies there: a tile or strip offset pointing into them is damage, not pixels.
  const std::shared_ptr<const std::vector<io::ByteRange>>& structure() const { return structure_; }

 private:
  TiffFile() = default;
  std::shared_ptr<const io::Source> source_;
  bool big_tiff_ = false;
  bool ndpi_ = false;
  bool little_endian_ = true;
  std::vector<Ifd> ifds_;
  std::shared_ptr<const std::vector<io::ByteRange>> structure_;
  friend class IfdParser;
};

}  // namespace tilewise::tiff
