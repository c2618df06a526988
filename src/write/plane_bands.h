// Level 0 of one plane into a PyramidWriter (pyramid_writer.h), band after band: each band read into the
// writer's level-0 band, then halved and encoded; or, where decoding and encoding run on different hardware
// (the GPU's decoders and its encoders), the next band read on a reading thread while the current one is
// halved and encoded.
#pragma once

#include <cstdint>
#include <functional>

#include "tilewise/image_view.h"
#include "tilewise/status.h"
#include "write/band_ops.h"
#include "write/pyramid_writer.h"

namespace tilewise::write {

// Reads `rows` rows from y of one plane's level 0 into `out`.
using BandReader = std::function<Status(int64_t y, int32_t rows, const ImageView& out)>;
// Called on the calling thread once a band of `rows` rows is in the pyramid; an error stops the plane.
using BandWritten = std::function<Status(int32_t rows)>;

// Reads and writes band after band on the calling thread. On the CPU, where both share the cores, this is
// the faster order (reading the next band meanwhile measured slower: bench/RESULTS.md, "2 cores: writing
// slides (convert)").
Status write_level0(PyramidWriter& pyramid, int64_t height, const BandReader& read, const BandWritten& written);

// Reads band n + 1 on a reading thread into one of two staging bands (allocated from `ops`, the pyramid's
// ops) while band n, copied into the pyramid's band, is halved and encoded on the calling thread. `read` is
// called from the reading thread, one band at a time; `written` from the calling thread. Returns once no
// read is in flight.
Status write_level0_overlapped(PyramidWriter& pyramid, BandOps& ops, int64_t height, const BandReader& read,
                               const BandWritten& written);

}  // namespace tilewise::write
