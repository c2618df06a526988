// A narrow, bounds-checked reader of DICOM Part 10 files: the subset a whole-slide image needs.
//
// Why not DCMTK (in Debian) or libdicom (OpenSlide's, not in Debian 12), decided by measurement: DCMTK
// 3.6.7's DcmFileFormat::loadFile (values over 4 KiB left on disk) then the frame positions took 57 ms for
// the level-0 instance of bench_dicom.py's TILED_SPARSE series (6,400 per-frame items) and 9.9 ms for the
// TILED_FULL one (it walks the pixel data's items); this reader takes 1.1 ms and 0.06 ms, offset tables
// included (2 cores, page cache warm; bench/RESULTS.md, "2 cores: DICOM WSI"). Beyond speed, a WSI reader needs the file meta,
// the dataset up to Pixel Data (with sequences), the per-frame positions of sparse files and where each
// frame's bytes lie - nothing of DICOM networking, character-set conversion or pixel codecs. DCMTK's
// DcmFileFormat builds an object per element and per-frame item (a 100,000-frame sparse file makes millions
// of them), loads through its own stream layer rather than our sources (HTTP, memory), and would add ~20 MB
// of libraries to the wheel. This reader keeps the elements it is asked to keep as raw values, discards the
// per-frame groups after extracting positions, never reads Pixel Data at open, and checks every length
// against the file and its enclosing item (docs/hardening.md; fuzzed by tests/fuzz/fuzz_dicom.cc).
//
// Encodings: explicit VR little endian (every WSI transfer syntax) and implicit VR little endian (VRs from
// the data dictionary); big-endian and deflated datasets are refused as Unsupported.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/source.h"
#include "tilewise/status.h"

namespace tilewise::dicom {

constexpr uint32_t tag(uint16_t group, uint16_t element) { return uint32_t{group} << 16 | element; }

struct DataSet;

struct Element {
  uint32_t tag = 0;
  std::array<char, 2> vr{'U', 'N'};
  std::vector<uint8_t> value;  // as stored (little endian); empty for a sequence or a value not kept
  std::vector<DataSet> items;  // the items of a sequence (VR SQ)
  bool is_sequence() const { return vr[0] == 'S' && vr[1] == 'Q'; }
  std::string_view vr_view() const { return {vr.data(), 2}; }
};

struct DataSet {
  std::vector<Element> elements;  // in file order (ascending tags)
  const Element* find(uint32_t t) const;
  // The first value of a string element, trailing spaces and NULs removed; nullopt when absent.
  std::optional<std::string> string(uint32_t t, size_t index = 0) const;
  // The first value of an integer element (US, UL, SS, SL, UV, SV) or of an IS string.
  std::optional<int64_t> integer(uint32_t t) const;
  // The first item of a sequence, or nullptr.
  const DataSet* item(uint32_t sequence, size_t index = 0) const;
};

// Values of a string element: the backslash-separated values of AE, CS, DS, DT, PN, SH, TM, UI and UC
// elements, the whole value of the others (as libdicom reads them); each with trailing padding (spaces,
// NULs) removed. An empty element has one empty value.
std::vector<std::string> string_values(const Element& e);
// The same values as libdicom, and so OpenSlide's `dicom.*` properties, give them: one trailing whitespace
// character (the padding to even length) removed from the element (none from UI), the value cut at its first
// NUL, then split as above; DS and IS values trimmed of spaces at both ends, the others kept as stored.
std::vector<std::string> stored_string_values(const Element& e);
// Values of a binary numeric element as doubles (FL, FD) or integers (US, SS, UL, SL, UV, SV).
std::vector<double> float_values(const Element& e);
std::vector<int64_t> integer_values(const Element& e);

// The dictionary keyword of a standard tag (empty for private and unknown tags), and its VR ("UN" if unknown).
std::string_view keyword(uint32_t tag);
std::string_view dictionary_vr(uint32_t tag);

// Where Pixel Data lies: its value's offset and length (encapsulated: undefined length, the items follow).
struct PixelData {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool encapsulated = false;
};

// One frame's place, from the per-frame groups: its position in the total pixel matrix (1-based pixels, as
// stored), its focal plane (Z Offset in Slide Coordinate System, micrometres) and its optical path (an index
// into File::frame_optical_paths).
struct FramePosition {
  static constexpr uint16_t kNoPath = 0xFFFF;
  int64_t column = 0;
  int64_t row = 0;
  double z_offset = 0;
  uint16_t optical_path = kNoPath;
  bool has_position = false;
  bool has_z = false;
};

struct File {
  DataSet meta;     // group 0002
  DataSet dataset;  // everything before Pixel Data except the per-frame functional groups
  std::string transfer_syntax;
  std::optional<PixelData> pixel_data;
  std::vector<FramePosition> frame_positions;  // per frame, when the file has per-frame functional groups
  std::vector<std::string> frame_optical_paths;  // the Optical Path Identifiers the per-frame groups name
};

struct ParseLimits {
  uint32_t max_depth = 12;                 // nested sequences
  uint64_t max_value_bytes = 64ull << 20;  // a kept value larger than this is refused
  uint64_t max_frames = 4'000'000;         // per-frame items
};

// True when the source starts with a 128-byte preamble and "DICM".
bool has_part10_header(const io::Source& source);

// Reads the file meta and the dataset up to Pixel Data. With `meta_only`, stops after the file meta.
Result<File> parse(const io::Source& source, bool meta_only = false, const ParseLimits& limits = {});

// A frame's bytes: one fragment's value (`items` false), or a run of items whose values, concatenated,
// are the frame (`items` true: the range starts at an item tag).
struct FrameRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool items = false;
};

// Locates `frames` frames of encapsulated pixel data: through the Extended Offset Table (exact ranges of
// one fragment each), the Basic Offset Table (each frame the run of items up to the next; a sample of
// fragment headers is checked), or else a walk over every fragment.
Result<std::vector<FrameRange>> locate_frames(const io::Source& source, const File& file, uint64_t frames);

// Replaces the items in `bytes` (a FrameRange with items set) by their values, concatenated: the frame's
// codestream. Stops at a sequence delimiter.
Status join_items(std::vector<uint8_t>& bytes);

}  // namespace tilewise::dicom
