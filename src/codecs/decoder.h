// Decoder: the one contract every decoding backend implements - the CPU decoders (codecs/cpu/), nvImageCodec
// on the GPU (codecs/nvimgcodec/) and the fakes of the tests - so that callers pick and chain backends without
// knowing them.
//
// - can_decode(desc): Ok when the backend takes chunks of this description, else Unsupported with the reason
//   (a person can read it: "jpeg with RGB components: nvJPEG converts them as YCbCr"). A pure function of the
//   description: it does not look at bytes and costs nothing.
// - decode_batch(requests, statuses): decodes every request; statuses[i] says whether request i was written
//   (Corrupt for bad data, Unsupported for a description can_decode refuses, Internal otherwise). One item's
//   failure never affects the others. Returns when every output is complete and readable from any stream or
//   thread.
// - What a request's view takes: the RGB rendering when it is 8-bit RGB (ImageView::is_rgb8: grey expanded,
//   B, G, R reordered, 16-bit samples narrowed to their top 8 significant bits), else the chunk's own
//   samples - out.channels == desc.samples_per_pixel and out.sample_bytes * 8 == desc.bits_per_sample - in
//   host byte order with the predictor undone and B, G, R reordered as R, G, B, values otherwise as stored
//   (MinIsWhite is not inverted). A backend refuses other views (Internal).
// - Outputs live where output() says (host memory, or device memory of the backend's device). A request's
//   view is the window of `out`'s size at (x, y) of the chunk; a whole chunk is (0, 0) with out.width ==
//   desc.width and at most desc.height rows. Backends that always write whole chunks (window_decode() false)
//   take only whole-chunk requests, of exactly desc.height rows.
// - Thread behaviour: a Decoder instance is used by one thread at a time (it owns codec contexts and scratch
//   buffers); make one per worker or lane.
#pragma once

#include <cstdint>
#include <span>

#include "codecs/tile_desc.h"
#include "tilewise/image_view.h"
#include "tilewise/status.h"

namespace tilewise::codecs {

struct DecodeRequest {
  // The chunk's bytes. For backends with needs_complete_streams(): a self-contained stream (abbreviated JPEG
  // with the TIFF's JPEGTables spliced in); else the bytes as stored, with the tables in desc.jpeg_tables.
  std::span<const uint8_t> data;
  const TileDesc* desc = nullptr;
  ImageView out;
  int32_t x = 0, y = 0;  // window origin within the chunk
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual const char* backend() const = 0;  // "cpu", "nvimgcodec", ...
  virtual DeviceType output() const = 0;    // where request outputs must live
  virtual bool needs_complete_streams() const { return false; }
  virtual bool window_decode() const { return true; }
  virtual Status can_decode(const TileDesc& desc) const = 0;
  virtual void decode_batch(std::span<const DecodeRequest> requests, std::span<Status> statuses) = 0;
  // Makes now what the backend would make on its first calls (buffers, a hardware decoder's state), so that
  // those calls are not slow; optional. A failure is not reported: the first real call meets it again.
  virtual void warm_up() {}

  // One request (decode_batch of one).
  Status decode_one(const DecodeRequest& request) {
    Status status;
    decode_batch(std::span<const DecodeRequest>(&request, 1), std::span<Status>(&status, 1));
    return status;
  }
};

}  // namespace tilewise::codecs
