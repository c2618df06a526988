// TileFetcher: reads one unit's stream (formats/unit_stream.h) and decodes it with a leased CPU decoder; a
// window of a JPEG unit from an MCU checkpoint where the index has one (codecs/jpeg/).
//
// Thread behaviour: stateless apart from the immutable model; call from any thread. Errors carry the
// context "<file>: level L tile (col,row) at offset O".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/slide_model.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::region {

struct TileRef {
  const formats::LevelModel* level;
  std::string_view level_label;  // "level 2" or "associated image label"; owned by the region request
  int64_t col;
  int64_t row;
  int64_t index() const { return row * level->tiles_across + col; }
  int64_t x0() const { return col * level->desc.width; }
  int64_t y0() const { return row * level->desc.height; }
  // Rows of this tile that lie inside the level (edge tiles and the last strip are shorter; a positioned
  // level's units are whole).
  int32_t valid_rows() const;
  int32_t valid_cols() const;
};

// A hint that the bytes of these units of `level` are about to be read: remote sources fetch them together
// (io::Source::prefetch), grouped by the source they lie in; local ones return at once.
void prefetch_units(const formats::LevelModel& level, std::span<const int64_t> units);

// True when windows of `unit` of `level` may be decoded from checkpoints (a restart-interval JPEG unit whose
// stream the index can walk, the index on): a window then costs about its own width, not the unit's.
bool windows_use_checkpoints(const formats::LevelModel& level, int64_t unit);

class TileFetcher {
 public:
  explicit TileFetcher(const formats::SlideModel& model) : model_(model) {}

  // The tile's encoded bytes (formats::read_unit); for JPEG with shared tables, a complete stream with the
  // tables spliced in (for decoders that cannot be primed with tables, such as nvImageCodec) when
  // `splice_tables` is set. Decoded with the level's description: levels whose units carry their own
  // (formats::units_share_desc false) are decoded only by the two calls that read their bytes themselves.
  Result<std::vector<uint8_t>> read_bytes(const TileRef& tile, bool splice_tables = false) const;
  // The same into `bytes` (resized; its capacity reused).
  Status read_bytes_into(const TileRef& tile, std::vector<uint8_t>& bytes, bool splice_tables = false) const;
  std::string context(const TileRef& tile) const;

  // Decodes the tile's first out.height rows into out (out.width == tile width).
  Status decode(const TileRef& tile, const ImageView& out) const;
  // Decodes the window of out's size at (x, y) of the tile (of an uncompressed tile, only its rows are read).
  Status decode_window(const TileRef& tile, const ImageView& out, int32_t x, int32_t y) const;
  // The same two from the tile's bytes already read (read_bytes', tables spliced in or not), not read again;
  // InternalError for a level whose units carry their own descriptions.
  Status decode(const TileRef& tile, std::span<const uint8_t> bytes, const ImageView& out) const;
  Status decode_window(const TileRef& tile, std::span<const uint8_t> bytes, const ImageView& out, int32_t x,
                       int32_t y) const;

 private:
  // Reads the tile's bytes and runs `decode(decoder, bytes, desc)` with a leased decoder, adding the context.
  template <typename Fn>
  Status with_tile_bytes(const TileRef& tile, Fn&& decode) const;
  // Runs `decode(decoder, bytes, desc)` with a leased decoder, adding the context to an error.
  template <typename Fn>
  Status with_decoder(const TileRef& tile, std::span<const uint8_t> bytes, const codecs::TileDesc& desc,
                      Fn&& decode) const;
  Status shared_desc(const TileRef& tile) const;
  // Full-width rows from `row` of an uncompressed unit whose samples the view takes as stored, read straight
  // into it (formats::read_unit_rows_into); nullopt for other units and views.
  std::optional<Status> read_stored(const TileRef& tile, const ImageView& out, int32_t row) const;
  // The window read from the rows it needs of an uncompressed unit (formats::read_unit_rows); nullopt for
  // other units.
  std::optional<Status> decode_rows(const TileRef& tile, const ImageView& out, int32_t x, int32_t y) const;
  const formats::SlideModel& model_;
};

}  // namespace tilewise::region
