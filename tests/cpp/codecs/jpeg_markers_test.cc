// JPEG marker parsing (codecs/jpeg/markers.h) on hand-made headers: the frame, truncation, SOF patching and
// restart markers found across chunk boundaries.
#include "codecs/jpeg/markers.h"

#include <gtest/gtest.h>

#include <vector>

namespace tilewise::codecs {
namespace {

std::vector<uint8_t> header() {
  std::vector<uint8_t> h = {0xFF, 0xD8};
  auto segment = [&](uint8_t marker, std::vector<uint8_t> body) {
    const size_t length = body.size() + 2;
    h.insert(h.end(), {0xFF, marker, static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length)});
    h.insert(h.end(), body.begin(), body.end());
  };
  segment(0xE0, std::vector<uint8_t>(14, 0x4A));                                   // APP0
  segment(0xDB, std::vector<uint8_t>(65, 1));                                      // DQT
  segment(0xC0, {8, 0x00, 0x10, 0x00, 0x20, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1});  // SOF0 32 x 16, 4:2:0
  segment(0xDD, {0x00, 0x04});                                                     // DRI: 4 MCUs
  segment(0xDA, {3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0});                         // SOS
  return h;
}

TEST(JpegMarkers, TheFrameOfAHeader) {
  const std::vector<uint8_t> h = header();
  auto f = parse_jpeg_frame(h);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->width, 32u);
  EXPECT_EQ(f->height, 16u);
  EXPECT_EQ(f->components, 3);
  EXPECT_EQ(f->mcu_width, 16);
  EXPECT_EQ(f->mcu_height, 16);
  EXPECT_EQ(f->restart_interval, 4u);
  EXPECT_EQ(f->header_end, h.size());
  EXPECT_EQ(h[f->sof_offset + 1], 0xC0);

  std::vector<uint8_t> patched = h;
  set_frame_size(patched, *f, 64, 8);
  auto g = parse_jpeg_frame(patched);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->width, 64u);
  EXPECT_EQ(g->height, 8u);
}

TEST(JpegMarkers, ATruncatedHeaderAsksForMoreAndAMalformedOneIsCorrupt) {
  const std::vector<uint8_t> h = header();
  for (size_t cut : {size_t{2}, size_t{10}, h.size() - 1}) {
    auto f = parse_jpeg_frame(std::span<const uint8_t>(h).first(cut));
    ASSERT_FALSE(f.ok());
    EXPECT_TRUE(frame_needs_more_bytes(f.status())) << cut << ": " << f.status().message();
  }
  std::vector<uint8_t> bad = h;
  bad[0] = 0x00;
  EXPECT_FALSE(frame_needs_more_bytes(parse_jpeg_frame(bad).status()));
  bad = h;
  bad[2 + 4 + 14] = 0x12;  // the byte where the DQT marker should be
  auto f = parse_jpeg_frame(bad);
  ASSERT_FALSE(f.ok());
  EXPECT_FALSE(frame_needs_more_bytes(f.status()));
  EXPECT_EQ(f.status().code(), StatusCode::kCorrupt);
}

TEST(JpegMarkers, RestartMarkersAreFoundAcrossChunks) {
  // Entropy-coded bytes: stuffed 0xFF 0x00, fill bytes 0xFF 0xFF, and restart markers RST0-RST2.
  const std::vector<uint8_t> data = {0x00, 0xFF, 0xD0, 0x11, 0xFF, 0x00, 0x22, 0xFF, 0xFF, 0xD1, 0x33, 0xFF, 0xD2};
  const std::vector<uint64_t> want = {1003, 1010, 1013};  // offset + 1000 of the byte after each marker
  for (size_t split = 0; split <= data.size(); ++split) {
    std::vector<uint64_t> found;
    bool pending = false;
    find_restart_markers(std::span<const uint8_t>(data).first(split), 1000, pending, found);
    find_restart_markers(std::span<const uint8_t>(data).subspan(split), 1000 + split, pending, found);
    EXPECT_EQ(found, want) << "split at " << split;
  }
}

}  // namespace
}  // namespace tilewise::codecs
