// EncodeSplit: how many of a tile row's tiles the host's cores encode beside the GPU's encoders on convert's
// GPU path, so that both sides finish a row together. A fixed share (a percentage), or "auto": the share
// that equalises the two sides' finishing times at their measured per-tile times (each an exponentially
// weighted mean over rows), starting at half; auto keeps at least one tile on each side of a row of two or
// more, so both times stay measured.
//
// Thread behaviour: one writer's encode calls use it from one thread at a time.
#pragma once

#include <cstdint>

namespace tilewise::write {

class EncodeSplit {
 public:
  static constexpr int kAuto = -1;
  // `host_percent`: 0-100 (a fixed share of each row, rounded down), or kAuto.
  explicit EncodeSplit(int host_percent) : percent_(host_percent) {}

  // The tiles of a row of `tiles` the host encodes (the row's last ones; the GPU takes the others).
  int64_t host_tiles(int64_t tiles) const;
  // A row's result: `gpu_tiles` took `gpu_seconds` on the GPU side, `host_tiles` `host_seconds` on the host's
  // (the copy to host memory included), both started together. A side with no tiles leaves its time as it was.
  void measured(int64_t gpu_tiles, double gpu_seconds, int64_t host_tiles, double host_seconds);
  // The share auto would give the host now (0-1); the fixed share otherwise.
  double host_share() const;

 private:
  static constexpr double kWeight = 0.3;  // a new row's weight in the per-tile means
  int percent_;
  double gpu_tile_seconds_ = 0;   // 0: not measured yet
  double host_tile_seconds_ = 0;
};

}  // namespace tilewise::write
