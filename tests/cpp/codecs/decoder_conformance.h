// The decoder conformance suite: every backend of the decoder contract (codecs/decoder.h) passes the same
// checks on the same tiles - the CPU backend and a fake here, nvImageCodec on a GPU machine
// (tests/cpp/gpu/nvimgcodec_conformance_test.cc). A backend is described by a DecoderBackend: how to make one,
// how far its lossy pixels may differ from libjpeg-turbo's, and how to move pixels to and from the memory it
// decodes into.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "codecs/decoder.h"

namespace tilewise::codecs::testing {

struct DecoderBackend {
  std::string name;
  std::function<std::unique_ptr<Decoder>()> make;
  int lossy_tolerance = 0;  // max |difference| from libjpeg-turbo's pixels on JPEG tiles
  // Memory the backend's outputs live in (host memory by default).
  std::function<uint8_t*(size_t bytes)> allocate = [](size_t bytes) { return new uint8_t[bytes]; };
  std::function<void(uint8_t*)> release = [](uint8_t* p) { delete[] p; };
  std::function<void(uint8_t* host, const uint8_t* p, size_t bytes)> download = [](uint8_t* h, const uint8_t* p,
                                                                                   size_t n) { std::copy(p, p + n, h); };
  Device device{};
  // Ok when the backend can run here; else the suite skips, naming the reason (no GPU in CI).
  std::function<Status()> available = [] { return Status(); };
};

// Names the backend in test output (gtest would print its bytes).
inline void PrintTo(const DecoderBackend& b, std::ostream* os) { *os << b.name; }

class DecoderConformance : public ::testing::TestWithParam<DecoderBackend> {};

}  // namespace tilewise::codecs::testing
