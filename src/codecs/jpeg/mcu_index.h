// Entering a restart interval in the middle: an index of MCU entropy states for JPEG streams one MCU row
// high (Hamamatsu NDPI and VMS restart-interval units, 1,024-4,096 pixels wide), and the stream that
// resumes decoding at one of its checkpoints.
//
// Huffman-coded data can only be decoded from its start: a window at the right of a 4,096-pixel interval
// otherwise costs the entropy decoding of everything left of it (OpenSlide decodes the whole interval).
// The index records, every kMcuIndexSpacing MCUs, where an MCU's bits begin and the DC predictors there.
// A window then decodes from the checkpoint left of it: resume_stream() writes a standalone JPEG whose
// first MCU only sets the DC predictors (its DC values are the checkpoint's, its AC an end-of-block),
// followed by the interval's own bits from the checkpoint on, bit-shifted and re-stuffed. The real MCUs'
// coefficients are then exactly those of a decode from the interval's start, so every pixel one MCU or
// more right of the checkpoint equals it (fancy upsampling reads one chroma sample of the MCU to the left:
// the first real MCU's left edge differs, which the caller never shows).
//
// Hand-written because no JPEG library exposes entropy state in the middle of an interval: libjpeg-turbo's
// API decodes from restart markers only. The scanner decodes Huffman symbols and skips coefficient bits
// (no dequantisation, no IDCT); libjpeg-turbo still decodes every pixel shown.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <span>
#include <vector>

#include "tilewise/status.h"

namespace tilewise::codecs {

// MCUs between two checkpoints: 128 pixels of a 4:2:2 or 4:2:0 unit (16-pixel MCUs), 64 of a 4:4:4 one.
constexpr int32_t kMcuIndexSpacing = 8;

// One Huffman table for walking coefficients and for writing the few codes resume_stream() needs.
struct HuffmanTable {
  static constexpr int kLookBits = 10;
  // Codes of at most kLookBits bits, by the next kLookBits bits: length << 8 | symbol; 0 for longer codes.
  std::array<uint16_t, 1 << kLookBits> fast{};
  std::array<int32_t, 17> max_code{};     // by length: the largest code of that length, -1 when none
  std::array<int32_t, 17> value_offset{};  // by length: index into values of that length's first code, less it
  std::array<uint8_t, 256> values{};
  std::array<uint16_t, 256> code{};   // by symbol, for writing
  std::array<uint8_t, 256> length{};  // by symbol: its code's length; 0 when the table has no code for it
  // For skipping AC coefficients in one step: by the next kSkipBits bits, the bits that a code and its
  // value take together (bits 0-4) and how far it moves along the block (bits 5-9: 1-16; 0 = end of
  // block); 0 when they take more than kSkipBits bits.
  static constexpr int kSkipBits = 12;
  std::array<uint16_t, 1 << kSkipBits> skip{};
  bool present = false;
};

// What walking the entropy-coded data of a stream needs: its tables and the blocks of one MCU. Parsed from
// a header (SOI through SOS) of a sequential, 8-bit, Huffman-coded, interleaved scan.
struct EntropyLayout {
  struct Block {
    uint8_t component, dc_table, ac_table;
  };
  uint64_t sof_offset = 0;  // of the SOF marker in the header
  uint64_t header_end = 0;  // the first entropy-coded byte
  int32_t mcu_width = 8, mcu_height = 8;
  int32_t components = 0;
  std::vector<Block> blocks;  // in coding order: each component's blocks (h x v of them) in turn
  std::array<HuffmanTable, 4> dc, ac;
};

// The layout of a header, or Unsupported when its stream cannot be indexed (progressive, arithmetic or
// 12-bit coding, a non-interleaved scan, tables missing from it).
Result<std::shared_ptr<const EntropyLayout>> parse_entropy_layout(std::span<const uint8_t> header);

// Where MCU k * kMcuIndexSpacing of an interval begins: `bit` counts from the interval's first
// entropy-coded byte, in the stored (stuffed) bytes; `dc` are the components' DC predictors there.
struct McuCheckpoint {
  uint32_t bit = 0;
  std::array<int16_t, 4> dc{};
};

// An interval's checkpoints: points[k] is MCU k * kMcuIndexSpacing. points[0] is the interval's start; the
// index grows as windows further right need it. Its memory comes from `resource` (a cache keeps many
// small long-lived indexes apart from the heap that per-read buffers churn).
struct McuIndex {
  explicit McuIndex(std::pmr::memory_resource* resource = std::pmr::get_default_resource()) : points(resource) {
    points.push_back(McuCheckpoint{});
  }
  std::pmr::vector<McuCheckpoint> points;
};

// Extends `index` to at least `want` checkpoints (MCU (want - 1) * spacing), scanning `entropy` (the
// interval's entropy-coded bytes up to and including the marker that ends them) of an interval of `mcus`
// MCUs from its last checkpoint. Corrupt when the data ends early or holds an invalid code.
// `spacing`: MCUs between checkpoints (a tiled image's resume_rows uses one checkpoint per MCU row: the MCUs
// of a row); every extension of one index must use the same.
Status extend_mcu_index(const EntropyLayout& layout, std::span<const uint8_t> entropy, int64_t mcus, size_t want,
                        McuIndex& index, int32_t spacing = kMcuIndexSpacing);

// Writes into `out` a standalone JPEG of one predictor-setting MCU followed by `mcus` MCUs of the interval
// from checkpoint `from` on: `header` (the interval's own, SOI through SOS) with its SOF width set to
// (1 + mcus) MCUs, then the bits of `entropy` from `from` up to `to` (a later checkpoint at or past the
// last MCU wanted; nullptr: to the end of the data), then EOI. Unsupported when the tables have no code
// for a predictor's value (the caller decodes from the interval's start instead).
Status resume_stream(const EntropyLayout& layout, std::span<const uint8_t> header, std::span<const uint8_t> entropy,
                     const McuCheckpoint& from, const McuCheckpoint* to, int32_t mcus, std::vector<uint8_t>& out);

// The same for an image of many MCU rows (a JPEG tile), resumed at the start of an MCU row: a standalone JPEG
// `width` pixels wide of one predictor-setting MCU row (its first MCU sets the DC predictors, the others
// change nothing) followed by `rows_height` pixel rows of the image from checkpoint `from` (which must be a
// row's first MCU) to its end. The rows after the first resumed one equal a decode from the image's start
// pixel for pixel (fancy upsampling reads the chroma row above: the first resumed row's top pixel row
// differs, which the caller never shows).
Status resume_rows(const EntropyLayout& layout, std::span<const uint8_t> header, std::span<const uint8_t> entropy,
                   const McuCheckpoint& from, int32_t width, int32_t rows_height, std::vector<uint8_t>& out);

}  // namespace tilewise::codecs
