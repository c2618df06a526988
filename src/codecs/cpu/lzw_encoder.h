// TIFF LZW encoder (Compression 5: MSB-first codes of 9 to 12 bits, Clear 256, EndOfInformation 257, the
// width growing one code early as libtiff writes it). Hand-written: no maintained library of this field
// exposes TIFF's LZW on its own (libtiff keeps it inside its I/O stack), and the writers need it only for
// what must stay exact and readable by every Aperio reader (an SVS label: cuCIM reads LZW and JPEG there).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tilewise::codecs {

std::vector<uint8_t> lzw_encode(std::span<const uint8_t> in);

}  // namespace tilewise::codecs
