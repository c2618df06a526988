// The settings table: sizes with suffixes, switches, the older *_MB spellings, and malformed values ignored.
#include "util/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tilewise::internal {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
const char* lookup(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}
Settings with(std::map<std::string, std::string> env) {
  g_env = &env;
  Settings s = read_settings(&lookup);
  g_env = nullptr;
  return s;
}

TEST(Settings, SizesAreBytesWithOptionalBinarySuffixes) {
  EXPECT_EQ(parse_bytes("268435456"), 268435456u);
  EXPECT_EQ(parse_bytes("256M"), 256ull << 20);
  EXPECT_EQ(parse_bytes("256MiB"), 256ull << 20);
  EXPECT_EQ(parse_bytes("1g"), 1ull << 30);
  EXPECT_EQ(parse_bytes("0"), 0u);
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("-1"));
  EXPECT_FALSE(parse_bytes("12Q"));
  EXPECT_FALSE(parse_bytes("99999999999999999999"));
  EXPECT_FALSE(parse_bytes("20000000000T"));  // overflows once shifted
}

TEST(Settings, DefaultsWithAnEmptyEnvironment) {
  const Settings s = with({});
  EXPECT_EQ(s.cache_bytes, 256ull << 20);
  EXPECT_EQ(s.max_region_bytes, 4ull << 30);
  EXPECT_EQ(s.gpu_pool_bytes, 1024ull << 20);
  EXPECT_EQ(s.gpu_tile_cache_bytes, 256ull << 20);
  EXPECT_EQ(s.gpu_lanes, 6);
  EXPECT_EQ(s.gpu_encode_threads, 4);
  EXPECT_EQ(s.gpu_encoders, 1);
  EXPECT_EQ(s.gpu_encode_host, -1);  // auto
  EXPECT_TRUE(s.gpu_cpu_assist);
  EXPECT_FALSE(s.gpu_blocking_sync);
  EXPECT_EQ(s.gpu_policy, GpuPolicy::kAuto);
  EXPECT_TRUE(s.gpu_trace.empty());
  EXPECT_EQ(s.num_threads, 0);
}

TEST(Settings, EveryVariableIsRead) {
  const Settings s = with({{"TILEWISE_NUM_THREADS", "3"},
                           {"TILEWISE_CACHE_BYTES", "64M"},
                           {"TILEWISE_MAX_REGION_BYTES", "1G"},
                           {"TILEWISE_GPU_POOL_BYTES", "2G"},
                           {"TILEWISE_GPU_TILE_CACHE_BYTES", "0"},
                           {"TILEWISE_GPU_LANES", "40"},  // clamped to 32
                           {"TILEWISE_GPU_ENCODE_THREADS", "2"},
                           {"TILEWISE_GPU_ENCODERS", "20"},  // clamped to 16
                           {"TILEWISE_GPU_ENCODE_HOST", "40"},
                           {"TILEWISE_GPU_CPU_ASSIST", "0"},
                           {"TILEWISE_GPU_BLOCKING_SYNC", "1"},
                           {"TILEWISE_GPU_POLICY", "gpu"},
                           {"TILEWISE_GPU_TRACE", "/tmp/lanes.csv"},
                           {"TILEWISE_GPU_LOG", "info"}});
  EXPECT_EQ(s.num_threads, 3);
  EXPECT_EQ(s.cache_bytes, 64ull << 20);
  EXPECT_EQ(s.max_region_bytes, 1ull << 30);
  EXPECT_EQ(s.gpu_pool_bytes, 2ull << 30);
  EXPECT_EQ(s.gpu_tile_cache_bytes, 0u);
  EXPECT_EQ(s.gpu_lanes, 32);
  EXPECT_EQ(s.gpu_encode_threads, 2);
  EXPECT_EQ(s.gpu_encoders, 16);
  EXPECT_EQ(s.gpu_encode_host, 40);
  EXPECT_EQ(with({{"TILEWISE_GPU_ENCODE_HOST", "0"}}).gpu_encode_host, 0);
  EXPECT_EQ(with({{"TILEWISE_GPU_ENCODE_HOST", "auto"}}).gpu_encode_host, -1);
  EXPECT_EQ(with({{"TILEWISE_GPU_ENCODE_HOST", "101"}}).gpu_encode_host, -1);  // not a percentage: the default
  EXPECT_FALSE(s.gpu_cpu_assist);
  EXPECT_TRUE(s.gpu_blocking_sync);
  EXPECT_EQ(s.gpu_policy, GpuPolicy::kGpu);
  EXPECT_EQ(s.gpu_trace, "/tmp/lanes.csv");
  EXPECT_EQ(s.gpu_log, 0x0FFFFF00u);  // info and every severity above it
  EXPECT_EQ(with({{"TILEWISE_GPU_POLICY", "cpu"}}).gpu_policy, GpuPolicy::kCpu);
}

TEST(Settings, TheOlderMegabyteSpellingsStillWorkUnlessTheByteVariableIsSet) {
  EXPECT_EQ(with({{"TILEWISE_GPU_CACHED_MB", "10"}}).gpu_pool_bytes, 10ull << 20);
  EXPECT_EQ(with({{"TILEWISE_GPU_TILE_CACHE_MB", "7"}}).gpu_tile_cache_bytes, 7ull << 20);
  EXPECT_EQ(with({{"TILEWISE_GPU_TILE_CACHE_MB", "7"}, {"TILEWISE_GPU_TILE_CACHE_BYTES", "1K"}}).gpu_tile_cache_bytes,
            1024u);
}

TEST(Settings, MalformedValuesKeepTheDefault) {
  const Settings s = with({{"TILEWISE_CACHE_BYTES", "lots"}, {"TILEWISE_GPU_CPU_ASSIST", "maybe"},
                           {"TILEWISE_NUM_THREADS", "4M"}, {"TILEWISE_GPU_POLICY", "fast"}});
  EXPECT_EQ(s.cache_bytes, 256ull << 20);
  EXPECT_TRUE(s.gpu_cpu_assist);
  EXPECT_EQ(s.num_threads, 0);
  EXPECT_EQ(s.gpu_policy, GpuPolicy::kAuto);
  EXPECT_EQ(with({{"TILEWISE_GPU_LOG", "loud"}}).gpu_log, 0u);
}

}  // namespace
}  // namespace tilewise::internal
