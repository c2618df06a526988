// The disk cache's pages: what is written reads back, partial pages are not kept (except the object's last),
// damaged pages read as misses and are forgotten, a later write repairs them.
#include "io/disk_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace tilewise::io {
namespace {

constexpr uint64_t kPage = DiskCache::kPage;

struct Files {
  Files() {
    char dir[] = "/tmp/tw-disk-cache-XXXXXX";
    folder = mkdtemp(dir);
    data = ::open((folder + "/o.data").c_str(), O_RDWR | O_CREAT, 0644);
    pages = ::open((folder + "/o.pages").c_str(), O_RDWR | O_CREAT, 0644);
  }
  ~Files() {
    ::unlink((folder + "/o.data").c_str());
    ::unlink((folder + "/o.pages").c_str());
    ::rmdir(folder.c_str());
  }
  std::string folder;
  int data, pages;
};

std::vector<uint8_t> object_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + i / 251);
  return v;
}

TEST(DiskCache, KeepsWholePagesAndTheLastShortOne) {
  Files f;
  const uint64_t size = 5 * kPage + 100;  // 6 pages, the last one short
  ASSERT_EQ(::ftruncate(f.data, size), 0);
  ASSERT_EQ(::ftruncate(f.pages, 6 * 4), 0);
  const auto object = object_bytes(size);
  const DiskCache cache(::dup(f.data), ::dup(f.pages), size, 1 << 20);

  EXPECT_EQ(cache.pages_around({kPage + 5, 10}).offset, kPage);
  EXPECT_EQ(cache.pages_around({kPage + 5, 10}).length, kPage);
  EXPECT_EQ(cache.pages_around({5 * kPage + 50, 10}).length, 100u);  // clipped to the object

  // Pages 1 and 2 whole, page 3 cut: only 1 and 2 are kept.
  cache.write({object.data() + kPage, 2 * kPage + 10}, kPage);
  EXPECT_TRUE(cache.has({kPage, 2 * kPage}));
  EXPECT_FALSE(cache.has({kPage, 2 * kPage + 1}));
  std::vector<uint8_t> out(kPage + 17);
  ASSERT_TRUE(cache.read(out, kPage + 100));
  EXPECT_TRUE(std::equal(out.begin(), out.end(), object.begin() + kPage + 100));
  EXPECT_FALSE(cache.read(out, 0));  // page 0 absent

  cache.write({object.data() + 5 * kPage, 100}, 5 * kPage);  // the object's last page, short
  std::vector<uint8_t> tail(60);
  ASSERT_TRUE(cache.read(tail, 5 * kPage + 40));
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), object.begin() + 5 * kPage + 40));
  cache.write({object.data() + 1, 10}, 1);  // not at a page boundary: ignored
  EXPECT_FALSE(cache.has({0, 1}));
}

TEST(DiskCache, DamagedPagesAreMissesUntilWrittenAgain) {
  Files f;
  const uint64_t size = 4 * kPage;
  ASSERT_EQ(::ftruncate(f.data, size), 0);
  ASSERT_EQ(::ftruncate(f.pages, 4 * 4), 0);
  const auto object = object_bytes(size);
  const DiskCache cache(::dup(f.data), ::dup(f.pages), size, 1 << 20);
  cache.write(object, 0);
  const uint8_t bad = 0xEE;
  ASSERT_EQ(::pwrite(f.data, &bad, 1, 2 * kPage + 9), 1);  // a byte of page 2 changes on disk
  std::vector<uint8_t> out(3 * kPage);
  EXPECT_FALSE(cache.read(out, 0));       // never the damaged bytes
  EXPECT_FALSE(cache.has({2 * kPage, 1}));  // and the page is forgotten
  EXPECT_TRUE(cache.has({0, 2 * kPage}));
  cache.write(object, 0);
  ASSERT_TRUE(cache.read(out, 0));
  EXPECT_TRUE(std::equal(out.begin(), out.end(), object.begin()));
}

TEST(DiskCache, StopsWritingAtItsBudget) {
  Files f;
  const uint64_t size = 8 * kPage;
  ASSERT_EQ(::ftruncate(f.data, size), 0);
  ASSERT_EQ(::ftruncate(f.pages, 8 * 4), 0);
  const auto object = object_bytes(size);
  const DiskCache cache(::dup(f.data), ::dup(f.pages), size, 3 * kPage);
  cache.write(object, 0);
  EXPECT_TRUE(cache.has({0, 3 * kPage}));
  EXPECT_FALSE(cache.has({3 * kPage, 1}));
}

}  // namespace
}  // namespace tilewise::io
