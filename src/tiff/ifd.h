// Ifd: one parsed TIFF image file directory, immutable after TiffFile::parse.
//
// Every field has been read with bounds and overflow checks; the tile/strip tables have exactly
// `chunk_count()` entries. Tile byte ranges themselves are checked against the file when read, so that a
// file with a few damaged tiles still opens and reports the damaged tiles precisely.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilewise::tiff {

// A tag outside the baseline set (>= 32768), kept only where a driver needs vendor tags (NDPI files):
// its field type, value count and payload bytes in the file's byte order.
struct PrivateTag {
  uint16_t tag = 0;
  uint16_t type = 0;
  uint64_t count = 0;
  std::vector<uint8_t> payload;
};

struct Ifd {
  uint64_t offset = 0;        // file offset of this directory
  uint64_t end = 0;           // one past its entry table (and NDPI's 64-bit offset extensions)
  int index = -1;             // position in the main IFD chain; -1 for a SubIFD
  int parent = -1;            // for a SubIFD, the main-chain index of its parent
  int sub_index = -1;         // for a SubIFD, its position in the parent's SubIFDs tag
  bool little_endian = true;  // the file's byte order (for multi-byte samples)

  uint32_t new_subfile_type = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  bool tiled = false;
  // The decode unit: the tile size, or (width, rows per strip) for strip-based images.
  uint32_t chunk_width = 0;
  uint32_t chunk_height = 0;

  uint32_t compression = 1;
  uint32_t photometric = 2;
  bool has_photometric = false;
  uint32_t planar_configuration = 1;
  uint32_t samples_per_pixel = 1;
  std::vector<uint32_t> bits_per_sample{1};
  std::vector<uint32_t> sample_format{1};
  std::vector<uint32_t> extra_samples;
  uint32_t predictor = 1;
  uint32_t orientation = 1;  // 1: rows top to bottom, columns left to right

  std::vector<uint64_t> chunk_offsets;
  std::vector<uint64_t> chunk_byte_counts;
  std::vector<uint8_t> jpeg_tables;
  std::vector<uint8_t> icc_profile;
  std::optional<std::string> xmp;  // XMLPacket (tag 700), up to its first NUL

  // ASCII fields, cut at the first NUL as libtiff does. Bytes are kept as found (not necessarily UTF-8).
  std::optional<std::string> image_description, make, model, software, date_time, artist, host_computer,
      copyright, document_name;
  // RATIONAL fields in double precision, as OpenSlide 4 (libtiff 4's double getters) reports them.
  std::optional<double> x_resolution, y_resolution, x_position, y_position;
  std::optional<uint32_t> resolution_unit;

  std::vector<uint64_t> sub_ifd_offsets;
  std::vector<Ifd> sub_ifds;
  std::vector<PrivateTag> private_tags;  // sorted by tag; see PrivateTag (tiff/private_tags.h reads them)
  // Tags left out because their values are damaged (outside the file, cut short): only tags that pixels and
  // the pyramid do not need (metadata, ICC, vendor tags), each as a message starting "tag N".
  std::vector<std::string> skipped_tags;

  bool is_reduced_resolution() const { return (new_subfile_type & 1u) != 0; }
  uint64_t chunks_across() const { return (uint64_t{width} + chunk_width - 1) / chunk_width; }
  uint64_t chunks_down() const { return (uint64_t{height} + chunk_height - 1) / chunk_height; }
  // Number of tiles or strips, per plane times planes.
  uint64_t chunk_count() const {
    return chunks_across() * chunks_down() * (planar_configuration == 2 ? samples_per_pixel : 1);
  }
};

}  // namespace tilewise::tiff
