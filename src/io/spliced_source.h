// A positional source spliced from pieces of another source and a few bytes of its own (Zeiss CZI: each
// subblock's pixel data behind a small header giving its size and pixel format), so that a format whose
// units need a description of their own still has units that are plain byte ranges.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/source.h"

namespace tilewise::io {

class SplicedFile {
 public:
  explicit SplicedFile(std::shared_ptr<const Source> base) : base_(std::move(base)) {}
  // Appends bytes of the base source; returns their offset in the spliced file.
  uint64_t add_range(uint64_t offset, uint64_t length);
  // Appends bytes of its own; returns their offset.
  uint64_t add_bytes(std::span<const uint8_t> bytes);
  uint64_t size() const { return size_; }
  // The spliced file; its name and is_local_file() are the base's (errors name the real file).
  std::shared_ptr<const Source> build();

  struct Piece {
    uint64_t start = 0, length = 0;
    bool literal = false;
    uint64_t at = 0;  // the base's offset, or the literal's in the literal buffer
  };

 private:
  std::shared_ptr<const Source> base_;
  std::vector<Piece> pieces_;
  std::vector<uint8_t> literals_;
  uint64_t size_ = 0;
};

}  // namespace tilewise::io
