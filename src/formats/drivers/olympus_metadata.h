// The metadata stream of an Olympus/Evident cellSens .vsi file: the tag volumes that follow its 8-byte TIFF
// header, and the stacks they describe.
//
// A volume is a 24-byte header (size 24, magic 21321, the offset of its first field from the header, the
// field count in the low 28 bits of its flags) and a chain of fields, each (field type, tag, the next field's
// offset from the volume's header - 0 for the last -, data size), a second tag when the field type's bit 27 is
// set, then its data. Bit 28 marks an extended field whose data is a nested volume (types 1 and 2) or a run of
// volumes (type 0); bit 30 a value held in the data size itself. Other fields are values: integers, doubles,
// rectangles, UTF-16 strings.
//
// The stacks: the collection volume (2000) holds one multidimensional image volume (2001) per stack: its
// properties (2005: name 2030, type 2074 - 0 an image, 1 the overview, others masks and maps -, calibration
// 2019 in microns per pixel), image frame volumes (2002) whose external file properties (2018) say whether the
// pixels are in an .ets file (20005) and give the image's boundary (2053: x, y, width, height), and one
// dimension description volume (2007, its second tag the dimension's index d: the tiles' coordinate d + 2) per
// dimension beyond X and Y, whose dimension parameters (2008) give the kind (2023: 1 Z, 2 T, 3 lambda, 4 C,
// 9 phase) and, one per channel (second tag the channel), the channel's name (2419).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::formats::olympus {

// A dimension of a stack's tiles beyond X and Y.
enum class DimKind { kZ = 1, kT = 2, kLambda = 3, kC = 4, kPhase = 9 };

struct Stack {
  std::string name;
  int32_t type = 0;  // 0 an image, 1 the overview, other values masks and maps
  bool external = false;  // its pixels are in an .ets file
  int64_t width = 0, height = 0;  // the image's boundary; 0 when the file gives none
  std::optional<std::pair<double, double>> um_per_pixel;
  std::map<int32_t, DimKind> dims;  // tile coordinate index (2, 3, ...) -> kind
  std::map<int32_t, std::string> channel_names;
};

// The stacks the stream at `bytes` (the file from offset 8) describes, in file order. Corrupt when no volume
// starts there; fields past the bytes or looping back are not followed.
Result<std::vector<Stack>> parse_stacks(std::span<const uint8_t> bytes);

}  // namespace tilewise::formats::olympus
