// tilewise bench SLIDE [--workers N] [--patches N] [--size S] [--level L] [--seed K] [--no-cache]
// Random unaligned patches read by N threads; prints patches/s and MPix/s, with a progress bar on a
// terminal when the run is long.
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "progress.h"
#include "tilewise/tilewise.h"

namespace tilewise::cli {
namespace {

struct BenchOptions {
  std::string path;
  int workers = 1;
  int64_t patches = 2000;
  int size = 256;
  int level = 0;
  uint64_t seed = 0;
  bool no_cache = false;
};

int run_bench(const BenchOptions& opt) {
  if (opt.workers <= 0 || opt.patches <= 0 || opt.size <= 0) {
    return report(invalid_argument("--workers, --patches and --size must be positive"));
  }
  auto slide = Slide::open(opt.path);
  if (!slide.ok()) return report(slide.status());
  if (opt.level < 0 || opt.level >= slide->level_count()) {
    return report(invalid_argument("level " + std::to_string(opt.level) + " does not exist"));
  }
  const LevelInfo& l = slide->level(opt.level);
  const LevelInfo& l0 = slide->level(0);
  if (opt.no_cache) set_cache_capacity(0);
  // Each worker reads its own patches with its own buffer; the decode pool is not used for parallelism
  // across patches, only within one.
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  Status first_error;
  std::mutex error_mutex;
  const bool show_progress = isatty(STDERR_FILENO) && opt.patches >= 5000;
  auto worker = [&](int id) {
    std::mt19937_64 rng(opt.seed * 1000003u + static_cast<uint64_t>(id));
    std::uniform_int_distribution<int64_t> xs(0, std::max<int64_t>(0, l0.width - static_cast<int64_t>(opt.size * l.downsample)));
    std::uniform_int_distribution<int64_t> ys(0, std::max<int64_t>(0, l0.height - static_cast<int64_t>(opt.size * l.downsample)));
    std::vector<uint8_t> buffer(static_cast<size_t>(opt.size) * opt.size * 3);
    ImageView view{buffer.data(), int64_t{opt.size} * 3, opt.size, opt.size, 3, {}};
    while (next.fetch_add(1) < opt.patches && !failed.load()) {
      Status s = slide->read_region(xs(rng), ys(rng), opt.level, opt.size, opt.size, view);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!failed.exchange(true)) first_error = s;
        return;
      }
      const int64_t d = done.fetch_add(1) + 1;
      if (show_progress && id == 0 && d % 256 == 0) draw_progress(d, opt.patches);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < opt.workers; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (show_progress) std::fprintf(stderr, "\n");
  if (failed) return report(first_error);
  const double rate = static_cast<double>(opt.patches) / seconds;
  std::printf("%s: %lld random %dx%d patches at level %d, %d worker(s), cache %s\n", opt.path.c_str(),
              static_cast<long long>(opt.patches), opt.size, opt.size, opt.level, opt.workers,
              opt.no_cache ? "off" : "on");
  std::printf("  %.1f patches/s, %.1f MPix/s, %.3f s\n", rate, rate * opt.size * opt.size / 1e6, seconds);
  return kExitOk;
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto opt = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure random-patch read throughput");
  cmd->add_option("slide", opt->path, "Slide file")->required();
  cmd->add_option("--workers", opt->workers, "Reading threads")->default_val(1);
  cmd->add_option("--patches", opt->patches, "Number of patches")->default_val(2000);
  cmd->add_option("--size", opt->size, "Patch side in pixels")->default_val(256);
  cmd->add_option("--level", opt->level, "Pyramid level")->default_val(0);
  cmd->add_option("--seed", opt->seed, "Random seed")->default_val(0);
  cmd->add_flag("--no-cache", opt->no_cache, "Disable the decoded-tile cache");
  return [opt] { return run_bench(*opt); };
}

}  // namespace tilewise::cli
