// Progress for long CLI operations: a bar on stderr when it is a terminal.
#pragma once

#include <cstdint>

#include "tilewise/tilewise.h"

namespace tilewise::cli {

// Draws "[####    ] done/total" on stderr (carriage return, no newline).
void draw_progress(int64_t done, int64_t total);

// Slide::read_level_region into `out`, in bands of whole tile rows with a progress bar on stderr when stderr is
// a terminal and the region is large (>= 64 MPix); otherwise one read. Same result either way.
Status read_level_region_with_progress(const Slide& slide, int level, int64_t x, int64_t y, int64_t width,
                                       int64_t height, const ImageView& out);

}  // namespace tilewise::cli
