// BatchTiles: the tiles that several regions of one HostRegionReader::read_batch call cut, each decoded
// once for the call and copied from there by every region that needs it.
//
// Neighbouring patches of a tiling share tiles: four 256-pixel patches share each 1,024 x 8 NDPI unit, two
// or four patches share a tile of any format when they are not aligned to it. Through the tile cache each
// use costs a lookup, and the first an allocation of fresh pages and an insertion; here a tile lives only
// from its first use in the call to its last (at most the tiles of the regions in between), in buffers
// reused across tiles, and the cache is not touched. Tiles one region alone cuts are not held here.
//
// Not thread-safe: read_batch uses it only when every region of the call is read on the calling thread
// (ReadOptions::threads == 1, as loader workers that fill the cores read).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::region {

class BatchTiles {
 public:
  // At most this many bytes of tiles are held for a call; tiles beyond it are read as if one region cut
  // them (through the cache), so a shuffled batch over a small area cannot hold hundreds of tiles at once.
  static constexpr uint64_t kMaxBytes = 64ull << 20;

  // Counts one region's cut of tile `index` (before any use); `tile_bytes`: its decoded size.
  void add_use(int64_t index, uint64_t tile_bytes);
  // Whether more than one region cuts the tile.
  bool shared(int64_t index) const;
  // The tile's pixels (width x height pixels of `like`'s channels and sample size, rows packed), decoded by
  // `decode` at its first use; the decode's error at every use when it failed. Each use must be followed by
  // done().
  Result<const uint8_t*> use(int64_t index, int32_t width, int32_t height, const ImageView& like,
                             const std::function<Status(const ImageView&)>& decode);
  // Ends one use; after the tile's last its buffer serves the next tile.
  void done(int64_t index);

 private:
  struct Slot {
    int uses = 0;
    int ended = 0;
    bool decoded = false;
    Status status;
    std::vector<uint8_t> pixels;
  };
  std::unordered_map<int64_t, Slot> slots_;
  std::vector<std::vector<uint8_t>> spare_;
  uint64_t shared_bytes_ = 0;  // of the tiles cut more than once
};

}  // namespace tilewise::region
