// The nvImageCodec backend of the decoder contract (codecs/decoder.h): NVIDIA's hardware JPEG engines, its
// CUDA JPEG decoder and nvJPEG2000, into device memory.
//
// Synchronisation model:
// - There is no global decode lock. Each decoder made by create_decoder() owns one nvImageCodec decoder, one
//   CUDA stream and one pinned staging buffer, and is used by one thread at a time (nvImageCodec decoders
//   must not be shared between threads): the GPU layer's decode lanes own one each (gpu/tile_lanes.h).
// - The nvImageCodec instance is shared (it is thread-safe) and created once per process, again in a forked
//   child (never reusing the parent's CUDA state: every process-wide object here is ForkSafe).
// - decode_batch() returns when the device work (colour conversion included) is complete: its stream is
//   synchronised, so outputs can be used from any stream and the staging and handles are reused.
// - At process exit, functions registered with at_shutdown() run (the GPU layer stops its lanes there), then
//   the instance is destroyed, all before the CUDA runtime unloads.
#pragma once

#include <memory>

#include "codecs/decoder.h"
#include "codecs/tile_desc.h"
#include "tilewise/status.h"

namespace tilewise::codecs::nvimgcodec {

// What this backend takes: baseline 8-bit JPEG with YCbCr or grey components, Aperio JPEG 2000 (RGB or
// YCbCr components), into the 8-bit RGB rendering. Unsupported with the reason for anything else. Needs no GPU.
Status supports(const TileDesc& desc);
// What it takes into the chunk's own samples (a view that is not 8-bit RGB, codecs/decoder.h): unsigned
// single-sample tiles - 8-bit grey JPEG, 8- or 16-bit JPEG 2000 at any precision up to 16 bits.
Status supports_samples(const TileDesc& desc);
// Ok when libnvimgcodec.so.0 (0.8.x) loads; Unsupported with the reason otherwise.
Status library_status();
// Where to look first for libnvimgcodec.so.0 (the wheel's nvidia/nvimgcodec folder); before the first load.
void set_library_directory(const std::string& directory);
// A decoder on CUDA device `device` (its own nvImageCodec decoder, stream and pinned staging).
Result<std::unique_ptr<Decoder>> create_decoder(int device);
// Registers `fn` to run at process exit before the nvImageCodec instance is destroyed.
void at_shutdown(void (*fn)());

}  // namespace tilewise::codecs::nvimgcodec
