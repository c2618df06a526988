// OpenSlide's quickhash-1: a SHA-256 over the raw tile bytes of the lowest-resolution level, then, for each
// of the TIFF string tags ImageDescription, Make, Model, Software, DateTime, Artist, HostComputer,
// Copyright and DocumentName of the property directory, "tiff.<Tag>\0<value>\0" (an absent tag hashes as an
// empty string). When the level's tiles exceed 5 MiB OpenSlide computes no hash, and neither does this.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "io/source.h"
#include "tiff/tiff_file.h"
#include "tilewise/status.h"

namespace tilewise::formats {

// The hex digest, nullopt when the level is too large to hash; an error when its bytes cannot be read.
Result<std::optional<std::string>> quickhash1(const tiff::TiffFile& tiff, const tiff::Ifd& lowest_level,
                                              const tiff::Ifd& property_ifd);

// quickhash-1 of formats OpenSlide hashes whole files of (Hamamatsu VMS: the index file, then the map): the
// SHA-256 of the files' bytes, in order.
Result<std::string> quickhash1_of_files(std::span<const io::Source* const> files);

// OpenSlide's quickhash-1 digest fed piece by piece (formats that hash database rows: Sakura).
class Quickhash {
 public:
  Quickhash();
  ~Quickhash();
  Quickhash(const Quickhash&) = delete;
  Quickhash& operator=(const Quickhash&) = delete;
  void update(const void* data, size_t size);
  std::string hex();  // once, at the end

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The SHA-256 of byte ranges of files, in order (MIRAX: Slidedat.ini, then the lowest level's images).
struct HashedRange {
  const io::Source* source;
  uint64_t offset, length;
};
Result<std::string> quickhash1_of_ranges(std::span<const HashedRange> ranges);

// quickhash-1 of formats OpenSlide hashes one string of (DICOM: the Series Instance UID): the SHA-256 of
// the string and its terminating NUL.
std::string quickhash1_of_string(const std::string& s);

}  // namespace tilewise::formats
