// OmeZarrWriter: an image's pyramids as an OME-Zarr 0.5 group (Zarr v3) in a folder.
//
// The group's zarr.json carries the NGFF metadata under "ome": one multiscales entry (axes t, c, z, y, x -
// y and x in micrometres when the pixel size is known - and each level's scale) and "omero" (each
// channel's label, colour and display window). Each level is an array "0", "1", ... of shape
// (T, C, Z, height, width) at the image's own sample type, stored in square shards of about 4,096 pixels
// along y and x (at most 64 tiles, and no more than the level has), each tile one inner chunk - one plane's tile,
// or an RGB tile's three channels - coded as the TileCoding gives it (write/tile_encoder.h, zarr_chunk:
// zstd, gzip or raw), the shard's index of (offset, length) pairs at its end. Edge tiles are whole chunks
// (their pixels past the image repeat its edge); chunks wholly outside the image are absent.
//
// Streaming: a level's tiles come in row-major order (PyramidWriter gives them so), one plane's pyramid
// at a time (begin_plane()); each shard file of the current shard row is appended to as its tiles come
// and its index written when the row of shards is complete, so memory holds only the open shards' indices.
// The folder is written under a partial name (write/partial_name.h) and renamed by finish().
//
// Thread behaviour: one thread calls a writer's methods.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tilewise/types.h"
#include "write/downsample.h"
#include "write/partial_name.h"
#include "write/tile_encoder.h"
#include "write/tile_sink.h"

namespace tilewise::write {

// What the group describes.
struct OmeZarrImage {
  std::string name;                  // the multiscales' and omero's name
  std::string creator;               // "tilewise <version>"
  int32_t t = 1, c = 1, z = 1;
  bool rgb = false;                  // c is 3: each tile's interleaved R, G, B stored as channels 0-2 of one chunk
  SampleType type = SampleType::kUint8;
  std::optional<std::pair<double, double>> mpp;  // level 0's micrometres per pixel (x, y)
  double z_spacing = 0;                          // micrometres between focal planes (0: not known)
  std::vector<ChannelInfo> channels;             // labels and colours (rgb: not used)
  TileCoding coding;                             // the chunks' codec (zstd, deflate as gzip, none)
  Downsample filter = Downsample::kMean;         // how each level was made (the multiscales' type)
};

class OmeZarrWriter final : public TileSink {
 public:
  // Creates the partial folder beside `folder`; InvalidArgument when `folder` exists and is not empty or
  // the coding is not one Zarr chunks take.
  static Result<OmeZarrWriter> create(const std::string& folder, OmeZarrImage image);
  OmeZarrWriter(OmeZarrWriter&& other) noexcept = default;
  OmeZarrWriter& operator=(OmeZarrWriter&&) = delete;
  ~OmeZarrWriter() override;

  // The plane whose pyramid comes next (an RGB image: the one plane, 0, 0, 0). Its levels are added
  // again (add_level) and must be those of the first plane.
  void begin_plane(int32_t c, int32_t z, int32_t t) override;
  int add_level(LevelSpec level) override;
  // Appends tile `index` of the current plane's `level` to its shard; tiles must come in index order.
  Status write_tile(int level, int64_t index, std::span<const uint8_t> bytes) override;
  // Writes the metadata of the group and its arrays, and renames the folder to the output.
  Status finish();

 private:
  struct Shard {
    std::FILE* file = nullptr;
    std::string path;
    uint64_t size = 0;
    std::vector<uint64_t> index;  // (offset, length) of each inner chunk, row-major; ~0 for an absent one
  };
  struct Level {
    LevelSpec spec;
    int32_t shard_tiles = 1;        // tiles along each side of a shard
    int64_t next = 0;               // the next tile index of the current plane
    int64_t shard_row = -1;         // of the open shards
    std::vector<Shard> shards;      // the current row of shards, one per shard column
  };
  OmeZarrWriter(PartialFolder folder, OmeZarrImage image);
  Status open_shard_row(size_t k, int64_t shard_row);  // of level k, in the current plane
  Status close_shards(Level& level);
  std::string array_json(const Level& level) const;
  std::string group_json() const;

  PartialFolder folder_;
  OmeZarrImage image_;
  int32_t plane_c_ = 0, plane_z_ = 0, plane_t_ = 0;
  size_t plane_levels_ = 0;          // levels added for the current plane
  std::vector<Level> levels_;
  Status error_;                     // the first misuse of add_level
};

}  // namespace tilewise::write
