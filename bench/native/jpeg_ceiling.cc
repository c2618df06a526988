// The decode ceiling: libjpeg-turbo (TurboJPEG API, default integer IDCT and fancy upsampling) decoding
// JPEG tiles already in memory, with nothing else to do. Independent of tilewise's own code.
//
// Input: a file of records [uint32 little-endian length][complete JPEG stream]. Output: one JSON line.
// Usage: jpeg_ceiling TILES.bin [--threads N] [--reps R]
#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TILES.bin [--threads N] [--reps R]\n", argv[0]);
    return 2;
  }
  int threads = 1, reps = 5;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<std::vector<unsigned char>> tiles;
  for (;;) {
    unsigned char len_bytes[4];
    if (!in.read(reinterpret_cast<char*>(len_bytes), 4)) break;
    const uint32_t len = len_bytes[0] | len_bytes[1] << 8 | len_bytes[2] << 16 | uint32_t{len_bytes[3]} << 24;
    std::vector<unsigned char> t(len);
    in.read(reinterpret_cast<char*>(t.data()), len);
    tiles.push_back(std::move(t));
  }
  if (tiles.empty()) return 1;
  int64_t pixels = 0;
  {
    tjhandle h = tjInitDecompress();
    for (auto& t : tiles) {
      int w, hgt, sub, cs;
      if (tjDecompressHeader3(h, t.data(), t.size(), &w, &hgt, &sub, &cs) != 0) {
        std::fprintf(stderr, "bad tile: %s\n", tjGetErrorStr2(h));
        return 1;
      }
      pixels += int64_t{w} * hgt;
    }
    tjDestroy(h);
  }
  std::vector<double> times;
  for (int r = 0; r < reps + 1; ++r) {  // the first pass warms caches and is not counted
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        tjhandle h = tjInitDecompress();
        std::vector<unsigned char> out;
        for (size_t i = t; i < tiles.size(); i += threads) {
          int w, hgt, sub, cs;
          tjDecompressHeader3(h, tiles[i].data(), tiles[i].size(), &w, &hgt, &sub, &cs);
          out.resize(size_t(w) * hgt * 3);
          tjDecompress2(h, tiles[i].data(), tiles[i].size(), out.data(), w, 0, hgt, TJPF_RGB, 0);
        }
        tjDestroy(h);
      });
    }
    for (auto& th : pool) th.join();
    if (r > 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("{\"tiles\": %zu, \"pixels\": %lld, \"threads\": %d, \"median_s\": %.6f, \"min_s\": %.6f, "
              "\"max_s\": %.6f, \"mpix_per_s\": %.3f, \"tiles_per_s\": %.1f}\n",
              tiles.size(), static_cast<long long>(pixels), threads, median, times.front(), times.back(),
              pixels / median / 1e6, tiles.size() / median);
  return 0;
}
