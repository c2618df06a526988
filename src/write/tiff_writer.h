// TiledTiffWriter: a tiled BigTIFF written front to back as its tiles come. Directories are either in the
// main chain, in the order they were added (a generic pyramid: level 0 first, the reduced levels marked
// NewSubfileType 1, the layout OpenSlide reads as generic-tiff), or SubIFDs of a directory of the chain
// (an OME-TIFF plane's pyramid: the plane in the chain, its reduced levels below it).
//
// The file is written under a temporary name beside the output (".NAME.partial-PID") and renamed to the
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

namespace tilewise::write {

// One level's directory: its size, tiles, how they are coded, and the tags that go with it.
struct TiffLevel {
  int64_t width = 0, height = 0;
  int32_t tile = 256;
  uint16_t samples = 3;       // SamplesPerPixel, interleaved
  uint16_t bits = 8;          // BitsPerSample of each
  uint16_t sample_format = 1; // SampleFormat: 1 unsigned, 2 signed, 3 float
  uint16_t compression = 1;   // TIFF Compression: 1 none, 7 JPEG, 8 deflate
  uint16_t photometric = 2;   // 1 min-is-black; 2 RGB; 6 YCbCr (JPEG tiles coded as YCbCr)
  uint16_t ycbcr_subsampling = 2;  // YCbCr: 2 (4:2:0) or 1 (4:4:4)
  bool reduced = false;       // NewSubfileType 1: a lower level of the pyramid
  std::string description;    // ImageDescription, when not empty
  std::optional<std::pair<double, double>> pixels_per_cm;  // XResolution, YResolution (ResolutionUnit cm)
  std::vector<uint8_t> icc_profile;                      // InterColorProfile, when not empty
  int parent = -1;            // the directory (add_level's index) whose SubIFD this is; -1: the main chain
  int64_t tiles_across() const { return (width + tile - 1) / tile; }
  int64_t tiles_down() const { return (height + tile - 1) / tile; }
};

class TiledTiffWriter {
 public:
  // Creates the temporary file beside `path`.
  static Result<TiledTiffWriter> create(const std::string& path);
  TiledTiffWriter(TiledTiffWriter&& other) noexcept;
  TiledTiffWriter& operator=(TiledTiffWriter&&) = delete;
  ~TiledTiffWriter();

  // Declares the next directory; its index is returned. A SubIFD's parent must be a directory of the main
  // chain added before it (else finish() fails).
  int add_level(TiffLevel level);
  // Appends tile `index` (row-major in the level's grid) of `level`. Each tile is written once.
  Status write_tile(int level, int64_t index, std::span<const uint8_t> bytes);
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
    TiffLevel desc;
    std::vector<uint64_t> offsets, counts;
  };
  std::FILE* file_ = nullptr;
  std::string path_, temp_;
  uint64_t end_ = 0;  // where the next bytes go
  std::vector<Level> levels_;
  std::string misuse_;  // a wrong add_level, reported by finish()
  bool finished_ = false;
};

}  // namespace tilewise::write
