// McuIndexCache: the MCU checkpoints of restart-interval units and of JPEG tiles' MCU rows
// (codecs/jpeg/mcu_index.h; codecs/jpeg/restart_window.h, codecs/jpeg/tile_resume.h), kept across
// reads within one process-wide byte budget, least recently used out; their memory is pooled apart from
// the malloc heap (mcu_index_cache.cc says why). They are metadata of the encoded
// stream, as OpenSlide keeps an NDPI level's restart-marker positions once found; not decoded pixels, so the
// tile cache's capacity (0 in "caches off" runs) does not govern them: TILEWISE_MCU_INDEX_BYTES does
// (64 MiB by default, about 100,000 units of 4,096 x 8 pixels; 0 turns the index off).
//
// Keyed by the unit table that the units belong to, held weakly: an entry of a closed slide is never
// matched by a later slide's table (even one at the same address); a closing slide erases its entries. Thread behaviour: 16
// shards, each with its own lock, held only to find or insert; an entry's own lock guards its checkpoints.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <span>

#include "codecs/jpeg/mcu_index.h"

namespace tilewise::codecs {

class McuIndexCache {
 public:
  struct Entry {
    explicit Entry(std::pmr::memory_resource* resource) : index(resource) {}
    std::mutex mutex;
    McuIndex index;  // holds at most the `points` it was created for (its capacity)
    bool unusable = false;   // the scan failed or cannot continue: decode this unit from its start

    // Checkpoint `k` of the unit whose entropy-coded bytes are `entropy` (`mcus` MCUs, checkpoints `spacing`
    // MCUs apart), the index extended to it first, under the entry's lock; with `later` given, also
    // checkpoint `later_k` where the index already holds it (else *later is left empty). nullopt when the
    // entry is unusable or the scan fails here (which marks it so): the caller decodes from the unit's start.
    std::optional<McuCheckpoint> reach(const EntropyLayout& layout, std::span<const uint8_t> entropy,
                                               int64_t mcus, int32_t spacing, size_t k, size_t later_k = 0,
                                               std::optional<McuCheckpoint>* later = nullptr);
  };

  // The process's cache (ForkSafe), with the budget of TILEWISE_MCU_INDEX_BYTES or the last one
  // set_global_capacity set, which a forked child's keeps too.
  static McuIndexCache& global();
  static void set_global_capacity(uint64_t bytes);
  explicit McuIndexCache(uint64_t capacity_bytes);
  ~McuIndexCache();
  McuIndexCache(const McuIndexCache&) = delete;
  McuIndexCache& operator=(const McuIndexCache&) = delete;

  // The entry of unit `unit` of the table `units`, created with room for `points` checkpoints (the unit's
  // MCUs / spacing + 1) when absent; nullptr when the capacity is 0.
  std::shared_ptr<Entry> entry(const std::shared_ptr<const void>& units, int64_t unit, size_t points);
  // Drops the entries of the unit table `units` (a slide being closed: its entries could never be matched
  // again, and would hold the budget until they aged out).
  void erase_units(const void* units);
  // What an entry of `points` checkpoints is counted as.
  static uint64_t entry_bytes(size_t points);

  uint64_t capacity() const;
  void set_capacity(uint64_t bytes);  // evicts down to the new budget
  uint64_t size_bytes() const;
  uint64_t entries() const;
  // Windows decoded from a checkpoint (counted by the caller).
  void count_resumed() { resumed_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t resumed() const { return resumed_.load(std::memory_order_relaxed); }

 private:
  struct Shard;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<uint64_t> resumed_{0};
};

}  // namespace tilewise::codecs
