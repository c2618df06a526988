#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/source.h"

namespace tilewise::io {
namespace {

std::string temp_file(const std::vector<uint8_t>& bytes) {
  std::string path = (std::filesystem::temp_directory_path() / ("tw_io_" + std::to_string(::getpid()) + ".bin")).string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(MemorySource, ReadsExactRangesAndRefusesPastEnd) {
  auto src = memory_source({1, 2, 3, 4, 5}, "mem");
  EXPECT_EQ(src->size(), 5u);
  EXPECT_EQ(src->name(), "mem");
  uint8_t buf[3];
  ASSERT_TRUE(src->pread(buf, 2).ok());
  EXPECT_EQ(buf[0], 3);
  EXPECT_EQ(buf[2], 5);
  Status s = src->pread(buf, 3);
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("past the end"), std::string::npos);
  EXPECT_EQ(src->pread(buf, UINT64_MAX - 1).code(), StatusCode::kCorrupt);  // offset + length overflows
}

TEST(FileSource, ReadsFromManyThreadsWithoutSeekState) {
  std::vector<uint8_t> bytes(1 << 16);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31);
  const std::string path = temp_file(bytes);
  auto src = open_file(path);
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ((*src)->size(), bytes.size());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      uint8_t buf[100];
      for (int i = 0; i < 500; ++i) {
        const uint64_t off = static_cast<uint64_t>((i * 977 + t * 131) % (bytes.size() - sizeof buf));
        if (!(*src)->pread(buf, off).ok() || std::memcmp(buf, bytes.data() + off, sizeof buf) != 0) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  uint8_t buf[10];
  EXPECT_EQ((*src)->pread(buf, bytes.size() - 5).code(), StatusCode::kCorrupt);
  std::remove(path.c_str());
}

// Rows of a file read into an image wider than them: every row in its place, the bytes between rows
// untouched, more rows than one preadv call takes, the same from the default (row by row) of a memory
// source; a range past the end is the same Corrupt error as pread's.
TEST(FileSource, ReadsRowsIntoTheirPlacesInAWiderImage) {
  constexpr size_t kRow = 24;
  constexpr int32_t kRows = 2500;  // > IOV_MAX rows: several calls
  std::vector<uint8_t> bytes(16 + kRow * kRows);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 251);
  const std::string path = temp_file(bytes);
  auto file = open_file(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  const auto memory = memory_source(bytes, "mem");
  for (const Source* src : {file->get(), memory.get()}) {
    constexpr int64_t kStride = 40;
    std::vector<uint8_t> image(kStride * kRows, 0xEE);
    ASSERT_TRUE(src->pread_rows(image.data(), kStride, kRow, kRows, 16).ok());
    int mismatches = 0;
    for (int32_t r = 0; r < kRows; ++r) {
      mismatches += std::memcmp(image.data() + r * kStride, bytes.data() + 16 + r * kRow, kRow) != 0;
      for (int64_t i = kRow; i < kStride; ++i) mismatches += image[r * kStride + i] != 0xEE;
    }
    EXPECT_EQ(mismatches, 0) << src->name();
    std::vector<uint8_t> packed(kRow * 3);
    ASSERT_TRUE(src->pread_rows(packed.data(), kRow, kRow, 3, 16 + kRow).ok());
    EXPECT_EQ(std::memcmp(packed.data(), bytes.data() + 16 + kRow, packed.size()), 0);
    const Status past = src->pread_rows(image.data(), kStride, kRow, kRows, 17);
    EXPECT_EQ(past.code(), StatusCode::kCorrupt) << src->name();
    EXPECT_NE(past.message().find("past the end"), std::string::npos) << past.message();
  }
  std::remove(path.c_str());
}

TEST(FileSource, ClearErrorsForMissingFilesAndDirectories) {
  auto missing = open_file("/nonexistent/slide.svs");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/slide.svs"), std::string::npos);
  auto dir = open_file(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dir.status().message().find("directory"), std::string::npos);
}

}  // namespace
}  // namespace tilewise::io
