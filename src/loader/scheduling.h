// Scheduling: how a batch loader is scheduled beyond its public options, so that the device loaders'
// scheduling - the GPU's runs from the front of each batch, the CPU helpers' reads from the back, errors and
// cancellation - is tested without a GPU. BatchLoader::create uses the defaults.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "tilewise/batch_loader.h"

namespace tilewise::loader {

struct Scheduling {
  // A host loader scheduled as a hybrid device loader is (batch reads from the front of each batch, helpers'
  // single reads from the back into a staging copy).
  bool hybrid_on_host = false;
  // >= 0: this many CPU helpers (else the device scheduler's plan for the level's codec).
  int cpu_helpers = -1;
  // >= 0: the GPU reads each batch in runs of this many regions (0: one run of the learnt share, then the
  // rest; else the scheduler's plan).
  int gpu_run = -1;

  Result<std::unique_ptr<BatchLoader>> create(const Slide& slide, std::vector<std::pair<int64_t, int64_t>> locations,
                                              const BatchOptions& options) const;
};

}  // namespace tilewise::loader
