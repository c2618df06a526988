// TiledTiffWriter: a tiled BigTIFF written front to back as its tiles come. Directories are either in the
// main chain, in the order they were added (a generic pyramid: level 0 first, the reduced levels marked
// NewSubfileType 1, the layout OpenSlide reads as generic-tiff), or SubIFDs of a directory of the chain
// (an OME-TIFF plane's pyramid: the plane in the chain, its reduced levels below it).
//
// The file is written under a partial name beside the output (write/partial_name.h) and renamed to the
// output by finish(); a writer destroyed before finish() removes it, so a failed conversion never leaves a
// file that looks complete.
//
// Thread behaviour: one thread calls a writer's methods (tiles are encoded in parallel by the caller and
// handed over in any order).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tilewise/status.h"
#include "write/tile_sink.h"

namespace tilewise::write {

class TiledTiffWriter final : public TileSink {
 public:
  // Creates the temporary file beside `path`.
  static Result<TiledTiffWriter> create(const std::string& path);
  TiledTiffWriter(TiledTiffWriter&& other) noexcept;
  TiledTiffWriter& operator=(TiledTiffWriter&&) = delete;
  ~TiledTiffWriter() override;

  // Declares the next directory; its index is returned. A SubIFD's parent must be a directory of the main
  // chain added before it (else finish() fails).
  int add_level(LevelSpec level) override;
  // Moves main-chain directory `directory` to just after `anchor` in the chain (directories are chained in
  // the order added; an Aperio thumbnail, made last, goes second).
  void place_after(int directory, int anchor);
  // Appends tile `index` (row-major in the level's grid) of `level` - a stripped image's one strip: index
  // 0. Each tile is written once.
  Status write_tile(int level, int64_t index, std::span<const uint8_t> bytes) override;
  // Writes the directories (every tile of every level must have been written), flushes and renames the
  // file to the output path.
  Status finish();
  // The bytes written so far.
  uint64_t size() const { return end_; }

 private:
  TiledTiffWriter(std::FILE* file, std::string path, std::string temp) : file_(file), path_(std::move(path)), temp_(std::move(temp)) {}
  Status append(std::span<const uint8_t> bytes);
  Status write_directories();
  // Directory i (its out-of-line values, then itself, next offset 0); its offset.
  Result<uint64_t> write_directory(size_t i, const std::vector<uint64_t>& sub_ifds);
  Status fail(const std::string& what) const;

  struct Level {
    LevelSpec desc;
    std::vector<uint64_t> offsets, counts;
  };
  std::FILE* file_ = nullptr;
  std::string path_, temp_;
  uint64_t end_ = 0;  // where the next bytes go
  std::vector<Level> levels_;
  std::string misuse_;  // a wrong add_level, reported by finish()
  std::vector<int> chain_;  // the main chain's directories in file order
  bool finished_ = false;
};

}  // namespace tilewise::write
