#include "write/encode_split.h"

#include <algorithm>
#include <cmath>

namespace tilewise::write {

double EncodeSplit::host_share() const {
  if (percent_ != kAuto) return std::clamp(percent_, 0, 100) / 100.0;
  if (gpu_tile_seconds_ <= 0 || host_tile_seconds_ <= 0) return 0.5;
  // Both sides done at once: share * host_time = (1 - share) * gpu_time.
  return gpu_tile_seconds_ / (gpu_tile_seconds_ + host_tile_seconds_);
}

int64_t EncodeSplit::host_tiles(int64_t tiles) const {
  if (tiles <= 0) return 0;
  if (percent_ != kAuto) return tiles * std::clamp(percent_, 0, 100) / 100;
  if (tiles == 1) return host_share() >= 0.5 ? 1 : 0;
  const auto host = static_cast<int64_t>(std::llround(host_share() * static_cast<double>(tiles)));
  return std::clamp<int64_t>(host, 1, tiles - 1);
}

void EncodeSplit::measured(int64_t gpu_tiles, double gpu_seconds, int64_t host_tiles, double host_seconds) {
  auto update = [](double& mean, int64_t tiles, double seconds) {
    if (tiles <= 0 || seconds <= 0) return;
    const double per_tile = seconds / static_cast<double>(tiles);
    mean = mean <= 0 ? per_tile : (1 - kWeight) * mean + kWeight * per_tile;
  };
  update(gpu_tile_seconds_, gpu_tiles, gpu_seconds);
  update(host_tile_seconds_, host_tiles, host_seconds);
}

}  // namespace tilewise::write
