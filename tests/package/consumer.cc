// Uses the installed tilewise package: opens a slide, reads a region and a batch, prints what it read.
// Usage: consumer SLIDE  -> "levels N W H sum S batches B"; exit 1 on any error (printed).
#include <tilewise/batch_loader.h>
#include <tilewise/tilewise.h>

#include <cstdio>
#include <numeric>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto slide = tilewise::Slide::open(argv[1]);
  if (!slide.ok()) {
    std::fprintf(stderr, "%s\n", slide.status().message().c_str());
    return 1;
  }
  const tilewise::LevelInfo& level0 = slide->level(0);
  std::vector<uint8_t> pixels(64 * 48 * 3);
  tilewise::Status s = slide->read_region(10, 20, 0, 64, 48, tilewise::ImageView{pixels.data(), 64 * 3, 64, 48, 3, {}});
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  const long long sum = std::accumulate(pixels.begin(), pixels.end(), 0LL);
  tilewise::BatchOptions options;
  options.width = 32;
  options.height = 32;
  options.batch_size = 2;
  auto loader = tilewise::BatchLoader::create(*slide, {{0, 0}, {40, 40}, {80, 80}}, options);
  if (!loader.ok()) {
    std::fprintf(stderr, "%s\n", loader.status().message().c_str());
    return 1;
  }
  int batches = 0;
  while (auto batch = (*loader)->next()) {
    if (!batch->ok()) return 1;
    ++batches;
  }
  std::printf("levels %d %lld %lld sum %lld batches %d\n", slide->level_count(), static_cast<long long>(level0.width),
              static_cast<long long>(level0.height), sum, batches);
  return 0;
}
