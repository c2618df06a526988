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
  EXPECT_EQ(s.gpu_batch_ms, 3.0);
  EXPECT_EQ(s.gpu_decoder_threads, 1);
  EXPECT_EQ(s.gpu_assist_callers, 0);
  EXPECT_EQ(s.loader_device_chunk, 0);
  EXPECT_TRUE(s.gpu_cpu_assist);
  EXPECT_TRUE(s.gpu_warm_up);
  EXPECT_FALSE(s.loader_device_ahead.has_value());  // by the loader's batch bytes
  EXPECT_FALSE(s.loader_gpu_run.has_value());       // by codec
  EXPECT_TRUE(s.gpu_in_place);
  EXPECT_FALSE(s.gpu_async_allocator);
  EXPECT_FALSE(s.gpu_assist_backlog.has_value());
  EXPECT_EQ(s.num_threads, 0);
}

TEST(Settings, EveryVariableIsRead) {
  const Settings s = with({{"TILEWISE_NUM_THREADS", "3"},
                           {"TILEWISE_CACHE_BYTES", "64M"},
                           {"TILEWISE_MAX_REGION_BYTES", "1G"},
                           {"TILEWISE_GPU_POOL_BYTES", "2G"},
                           {"TILEWISE_GPU_TILE_CACHE_BYTES", "0"},
                           {"TILEWISE_GPU_LANES", "40"},  // clamped to 32
                           {"TILEWISE_GPU_BATCH_MS", "7"},
                           {"TILEWISE_GPU_DECODER_THREADS", "99"},  // clamped to 16
                           {"TILEWISE_GPU_ASSIST_CALLERS", "3"},
                           {"TILEWISE_LOADER_DEVICE_CHUNK", "16"},
                           {"TILEWISE_LOADER_CPU_HELPERS", "0"},
                           {"TILEWISE_GPU_CPU_ASSIST", "0"},
                           {"TILEWISE_GPU_WARM_UP", "0"},
                           {"TILEWISE_LOADER_DEVICE_AHEAD", "100"},  // clamped to 64
                           {"TILEWISE_GPU_ASSIST_BACKLOG", "100"},
                           {"TILEWISE_GPU_IN_PLACE", "off"},
                           {"TILEWISE_GPU_SPLIT_CPU_SHARE", "0.75"},
                           {"TILEWISE_GPU_SPREAD_TILES", "0"},
                           {"TILEWISE_GPU_TRACE", "/tmp/lanes.csv"},
                           {"TILEWISE_GPU_LOG", "info"},
                           {"TILEWISE_GPU_SPLIT_FIRST_READS", "100"},  // clamped to 64
                           {"TILEWISE_GPU_WAIT", "block"},
                           {"TILEWISE_LOADER_HELPER_NICE", "40"},  // clamped to 19
                           {"TILEWISE_LOADER_GPU_RUN", "16"},
                           {"TILEWISE_GPU_ALLOCATOR", "async"}});
  EXPECT_EQ(s.num_threads, 3);
  EXPECT_EQ(s.cache_bytes, 64ull << 20);
  EXPECT_EQ(s.max_region_bytes, 1ull << 30);
  EXPECT_EQ(s.gpu_pool_bytes, 2ull << 30);
  EXPECT_EQ(s.gpu_tile_cache_bytes, 0u);
  EXPECT_EQ(s.gpu_lanes, 32);
  EXPECT_EQ(s.gpu_batch_ms, 7.0);
  EXPECT_EQ(s.gpu_decoder_threads, 16);
  EXPECT_EQ(s.gpu_assist_callers, 3);
  EXPECT_EQ(s.loader_device_chunk, 16);
  EXPECT_EQ(s.loader_cpu_helpers, 0);  // set to 0: the GPU alone (unset: by the loader's workers)
  EXPECT_FALSE(s.gpu_cpu_assist);
  EXPECT_FALSE(s.gpu_warm_up);
  EXPECT_EQ(s.loader_device_ahead, 64);
  EXPECT_EQ(s.loader_gpu_run, 16);
  EXPECT_EQ(s.gpu_assist_backlog, 100u);
  EXPECT_FALSE(s.gpu_in_place);
  EXPECT_EQ(s.gpu_split_cpu_share, 0.75);
  EXPECT_EQ(s.gpu_spread_tiles, 0);  // default 64
  EXPECT_EQ(s.gpu_trace, "/tmp/lanes.csv");
  EXPECT_EQ(s.gpu_log, 0x0FFFFF00u);  // info and every severity above it
  EXPECT_EQ(s.gpu_split_first_reads, 64);
  EXPECT_EQ(s.gpu_wait, GpuWait::kBlock);
  EXPECT_EQ(s.loader_helper_nice, 19);
  EXPECT_TRUE(s.gpu_async_allocator);
}

TEST(Settings, TheOlderMegabyteSpellingsStillWorkUnlessTheByteVariableIsSet) {
  EXPECT_EQ(with({{"TILEWISE_GPU_CACHED_MB", "10"}}).gpu_pool_bytes, 10ull << 20);
  EXPECT_EQ(with({{"TILEWISE_GPU_TILE_CACHE_MB", "7"}}).gpu_tile_cache_bytes, 7ull << 20);
  EXPECT_EQ(with({{"TILEWISE_GPU_TILE_CACHE_MB", "7"}, {"TILEWISE_GPU_TILE_CACHE_BYTES", "1K"}}).gpu_tile_cache_bytes,
            1024u);
}

TEST(Settings, MalformedValuesKeepTheDefault) {
  const Settings s = with({{"TILEWISE_CACHE_BYTES", "lots"}, {"TILEWISE_GPU_CPU_ASSIST", "maybe"},
                           {"TILEWISE_NUM_THREADS", "4M"}, {"TILEWISE_GPU_ALLOCATOR", "slab"}});
  EXPECT_EQ(s.cache_bytes, 256ull << 20);
  EXPECT_TRUE(s.gpu_cpu_assist);
  EXPECT_EQ(s.num_threads, 0);
  EXPECT_FALSE(s.gpu_async_allocator);
  EXPECT_FALSE(with({{"TILEWISE_LOADER_CPU_HELPERS", "-2"}}).loader_cpu_helpers.has_value());
  EXPECT_FALSE(with({{"TILEWISE_GPU_SPLIT_CPU_SHARE", "1.5"}}).gpu_split_cpu_share.has_value());
  EXPECT_FALSE(with({{"TILEWISE_GPU_SPLIT_CPU_SHARE", "half"}}).gpu_split_cpu_share.has_value());
  EXPECT_EQ(with({{"TILEWISE_GPU_WAIT", "nap"}}).gpu_wait, GpuWait::kAuto);
  EXPECT_EQ(with({{"TILEWISE_GPU_LOG", "loud"}}).gpu_log, 0u);
}

}  // namespace
}  // namespace tilewise::internal
