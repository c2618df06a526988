#include "util/settings.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tilewise::internal {

std::optional<uint64_t> parse_bytes(std::string_view text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string suffix(text.substr(i));
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "KB" || suffix == "KIB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MB" || suffix == "MIB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GB" || suffix == "GIB") {
    shift = 30;
  } else if (suffix == "T" || suffix == "TB" || suffix == "TIB") {
    shift = 40;
  } else {
    return std::nullopt;
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<bool> parse_switch(std::string_view text) {
  std::string t(text);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "1" || t == "true" || t == "on" || t == "yes") return true;
  if (t == "0" || t == "false" || t == "off" || t == "no") return false;
  return std::nullopt;
}

namespace {

void warn(const char* name, const char* value) {
  std::fprintf(stderr, "tilewise: ignoring %s=%s (not a valid value)\n", name, value);
}

// Assigns the parsed value of `name` to `out` when set and valid.
template <typename T, typename Parse>
bool read(EnvLookup lookup, const char* name, T& out, Parse parse) {
  const char* v = lookup(name);
  if (!v || !*v) return false;
  auto parsed = parse(std::string_view(v));
  if (!parsed) {
    warn(name, v);
    return false;
  }
  out = static_cast<T>(*parsed);
  return true;
}

std::optional<int64_t> parse_count(std::string_view text) {
  auto v = parse_bytes(text);  // digits only: a suffix makes no sense for a count
  if (!v || text.find_first_not_of("0123456789") != std::string_view::npos || *v > (1u << 30)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<std::string> parse_text(std::string_view text) { return std::string(text); }

}  // namespace

Settings read_settings(EnvLookup lookup) {
  Settings s;
  read(lookup, "TILEWISE_NUM_THREADS", s.num_threads, parse_count);
  read(lookup, "TILEWISE_CACHE_BYTES", s.cache_bytes, parse_bytes);
  read(lookup, "TILEWISE_MCU_INDEX_BYTES", s.mcu_index_bytes, parse_bytes);
  read(lookup, "TILEWISE_MAX_REGION_BYTES", s.max_region_bytes, parse_bytes);
  read(lookup, "TILEWISE_HTTP_BLOCK_BYTES", s.http_block_bytes, parse_bytes);
  read(lookup, "TILEWISE_HTTP_COALESCE_BYTES", s.http_coalesce_bytes, parse_bytes);
  read(lookup, "TILEWISE_HTTP_CACHE_BYTES", s.http_cache_bytes, parse_bytes);
  read(lookup, "TILEWISE_HTTP_DISK_CACHE", s.http_disk_cache, parse_text);
  read(lookup, "TILEWISE_HTTP_DISK_CACHE_BYTES", s.http_disk_cache_bytes, parse_bytes);
  read(lookup, "TILEWISE_LIST_PAGE_KEYS", s.list_page_keys, parse_count);
  read(lookup, "TILEWISE_HTTP_TOKEN", s.http_token, parse_text);
  read(lookup, "TILEWISE_HTTP_HEADERS", s.http_headers, parse_text);
  read(lookup, "TILEWISE_JPEGXR_WORKER", s.jpegxr_worker, parse_text);
  if (s.http_block_bytes < 4096) s.http_block_bytes = 4096;
  auto mib = [](std::string_view t) -> std::optional<uint64_t> {
    auto v = parse_count(t);
    if (!v) return std::nullopt;
    return static_cast<uint64_t>(*v) << 20;
  };
  if (!read(lookup, "TILEWISE_GPU_POOL_BYTES", s.gpu_pool_bytes, parse_bytes)) {
    read(lookup, "TILEWISE_GPU_CACHED_MB", s.gpu_pool_bytes, mib);  // the older spelling, in MiB
  }
  if (!read(lookup, "TILEWISE_GPU_TILE_CACHE_BYTES", s.gpu_tile_cache_bytes, parse_bytes)) {
    read(lookup, "TILEWISE_GPU_TILE_CACHE_MB", s.gpu_tile_cache_bytes, mib);
  }
  if (read(lookup, "TILEWISE_GPU_LANES", s.gpu_lanes, parse_count)) s.gpu_lanes = std::clamp(s.gpu_lanes, 1, 32);
  if (read(lookup, "TILEWISE_GPU_BATCH_TILES", s.gpu_batch_tiles, parse_count)) s.gpu_batch_tiles = std::clamp(s.gpu_batch_tiles, 1, 512);
  if (read(lookup, "TILEWISE_GPU_BATCH_MS", s.gpu_batch_ms, parse_count)) s.gpu_batch_ms = std::clamp(s.gpu_batch_ms, 1, 100);
  if (read(lookup, "TILEWISE_GPU_ENCODE_THREADS", s.gpu_encode_threads, parse_count)) {
    s.gpu_encode_threads = std::clamp(s.gpu_encode_threads, 1, 32);
  }
  if (read(lookup, "TILEWISE_GPU_ENCODERS", s.gpu_encoders, parse_count)) s.gpu_encoders = std::clamp(s.gpu_encoders, 1, 16);
  read(lookup, "TILEWISE_GPU_ENCODE_HOST", s.gpu_encode_host, [](std::string_view t) -> std::optional<int> {
    if (t == "auto") return -1;
    const auto percent = parse_count(t);
    if (!percent || *percent > 100) return std::nullopt;
    return static_cast<int>(*percent);
  });
  read(lookup, "TILEWISE_GPU_CPU_ASSIST", s.gpu_cpu_assist, parse_switch);
  read(lookup, "TILEWISE_GPU_BLOCKING_SYNC", s.gpu_blocking_sync, parse_switch);
  read(lookup, "TILEWISE_GPU_POLICY", s.gpu_policy, [](std::string_view t) -> std::optional<GpuPolicy> {
    if (t == "auto") return GpuPolicy::kAuto;
    if (t == "gpu") return GpuPolicy::kGpu;
    if (t == "cpu") return GpuPolicy::kCpu;
    return std::nullopt;
  });
  read(lookup, "TILEWISE_GPU_TRACE", s.gpu_trace, parse_text);
  // nvImageCodec's severity bits (nvimgcodecDebugMessageSeverity_t): each level and all above it.
  read(lookup, "TILEWISE_GPU_LOG", s.gpu_log, [](std::string_view t) -> std::optional<uint32_t> {
    if (t == "info") return 0x0FFFFF00u;
    if (t == "debug") return 0x0FFFFFF0u;
    if (t == "trace") return 0x0FFFFFFFu;
    return std::nullopt;
  });
  return s;
}

const Settings& settings() {
  static const Settings s = read_settings([](const char* name) -> const char* { return std::getenv(name); });
  return s;
}

}  // namespace tilewise::internal
