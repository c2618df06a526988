#include "tile_check.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "progress.h"

namespace tilewise::cli {

namespace {

struct TileJob {
  int level;
  int64_t col, row;
  int32_t z = 0, t = 0;
};

}  // namespace

TileCheck check_tiles(const Slide& slide, int threads) {
  TileCheck result;
  std::vector<TileJob> jobs;
  // Images with planes: each tile of each (z, t), every channel read at its own sample type.
  const ImageAxes& axes = slide.axes();
  const bool planes = !axes.rgb || axes.z > 1 || axes.t > 1;
  const int32_t pixel_bytes = planes ? axes.channels * sample_bytes(axes.rgb ? SampleType::kUint8 : axes.sample_type) : 3;
  for (int level = 0; level < slide.level_count(); ++level) {
    const LevelInfo& l = slide.level(level);
    const int64_t tw = std::max<int32_t>(1, l.tile_width), th = std::max<int32_t>(1, l.tile_height);
    const std::vector<int64_t> absent = slide.absent_tiles(level);
    const std::unordered_set<int64_t> skip(absent.begin(), absent.end());
    const int64_t across = (l.width + tw - 1) / tw, down = (l.height + th - 1) / th;
    result.absent += static_cast<int64_t>(absent.size());
    for (int64_t row = 0; row < down; ++row) {
      for (int64_t col = 0; col < across; ++col) {
        if (skip.count(row * across + col)) continue;
        for (int32_t t = 0; t < (planes ? axes.t : 1); ++t) {
          for (int32_t z = 0; z < (planes ? axes.z : 1); ++z) jobs.push_back({level, col, row, z, t});
        }
      }
    }
  }
  std::vector<Status> statuses(jobs.size());
  std::atomic<size_t> next{0}, done{0};
  const bool bar = jobs.size() >= 1000 && isatty(STDERR_FILENO);
  std::mutex bar_mutex;
  auto work = [&] {
    std::vector<uint8_t> pixels;
    ReadOptions options;
    options.use_cache = false;
    options.threads = 1;
    for (size_t i = next++; i < jobs.size(); i = next++) {
      const TileJob& job = jobs[i];
      const LevelInfo& l = slide.level(job.level);
      const int64_t x = job.col * l.tile_width, y = job.row * l.tile_height;
      const int32_t w = static_cast<int32_t>(std::min<int64_t>(l.tile_width, l.width - x));
      const int32_t h = static_cast<int32_t>(std::min<int64_t>(l.tile_height, l.height - y));
      pixels.resize(static_cast<size_t>(w) * h * static_cast<size_t>(pixel_bytes));
      if (planes) {
        const int32_t channels = axes.channels;
        statuses[i] = slide.read_planes(job.level, x, y, w, h, PlaneSelection{{}, job.z, job.t},
                                        ImageView{pixels.data(), int64_t{w} * pixel_bytes, w, h, channels, {},
                                                  pixel_bytes / channels},
                                        options);
      } else {
        statuses[i] = slide.read_level_region(job.level, x, y, w, h, ImageView{pixels.data(), w * 3, w, h, 3, {}},
                                              options);
      }
      const size_t finished = ++done;
      if (bar && (finished % 256 == 0 || finished == jobs.size())) {
        std::lock_guard<std::mutex> lock(bar_mutex);
        draw_progress(static_cast<int64_t>(finished), static_cast<int64_t>(jobs.size()));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (bar) std::fprintf(stderr, "\n");
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!statuses[i].ok()) {
      std::string where = "level " + std::to_string(jobs[i].level) + " tile (" + std::to_string(jobs[i].col) + "," +
                          std::to_string(jobs[i].row) + ")";
      if (planes) where += " at z " + std::to_string(jobs[i].z) + ", t " + std::to_string(jobs[i].t);
      result.failures.push_back({std::move(where), statuses[i]});
    }
  }
  result.tiles = static_cast<int64_t>(jobs.size());
  for (const AssociatedImageInfo& a : slide.associated_images()) {
    ++result.tiles;
    auto image = slide.read_associated_image(a.name);
    if (!image.ok()) result.failures.push_back({"associated image " + a.name, image.status()});
  }
  return result;
}

}  // namespace tilewise::cli
