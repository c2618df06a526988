// Synchronisation model of the batch loader.
//
// - Workers: the process-wide loader pool (util/thread_pool.h: it only ever grows, and is re-created in a
//   forked child); loaders submit one task per region. A loader keeps at most `num_workers` of its regions in
//   flight and at most `prefetch` batches started ahead of the consumer, so loaders share the pool fairly.
// - Tasks: into host memory, one task per run of batch_size / num_workers regions, each region decoded on
//   its worker alone
//   (ReadOptions::threads = 1 when the workers fill the cores: a worker fanning its four tiles out to the
//   decode pool made 16 workers contend for that pool's queue, measured at 0.23 x 16 on a 16-core host).
//   Into device memory, one task per chunk of settings().loader_device_chunk regions of a batch, read as one
//   Slide::read_level_regions batch (tiles deduplicated, full GPU decode batches, one crop launch).
// - State (one per loader, shared with its tasks through a shared_ptr, so tasks may outlive the loader):
//   one mutex guards the scheduling counters, the per-batch "remaining items" counts and the ready flags;
//   it is never held while reading pixels. A task writes only its own slot of its batch's buffer and its
//   own status entry, then takes the mutex to count itself done and, if it was the batch's last item,
//   notifies the consumer.
// - Cancellation: the loader's destructor sets `cancelled`; tasks not yet started return at once; tasks
//   running finish their read and drop their references. Nothing waits on them.
// - Buffers: each batch owns a BatchBuffer from the process-wide pixel pool (tilewise/memory.h); the
//   consumer's Batch shares it, so it lives until the last holder releases it.
#include "tilewise/batch_loader.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "tilewise/config.h"
#include "tilewise/gpu.h"
#include "tilewise/memory.h"
#include "util/settings.h"
#include "util/thread_pool.h"

namespace tilewise {

BatchBuffer::BatchBuffer(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.is_cpu()) {
    data_ = static_cast<uint8_t*>(allocate_pixels(bytes));
    if (!data_) error_ = out_of_memory("cannot allocate a " + std::to_string(bytes) + "-byte batch buffer");
  } else {
    data_ = static_cast<uint8_t*>(allocate_device_pixels(bytes, device.index, &error_));
  }
}
BatchBuffer::~BatchBuffer() {
  if (device_.is_cpu()) {
    free_pixels(data_, bytes_);
  } else {
    free_device_pixels(data_, device_.index);
  }
}

bool Batch::ok() const {
  return std::all_of(statuses.begin(), statuses.end(), [](const Status& s) { return s.ok(); });
}

Status Batch::first_error(const std::vector<std::pair<int64_t, int64_t>>& locations) const {
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (statuses[i].ok()) continue;
    const int64_t at = locations_index[i];
    std::string where = "batch " + std::to_string(index) + " item " + std::to_string(i);
    if (at >= 0 && static_cast<size_t>(at) < locations.size()) {
      where += " (location " + std::to_string(at) + ": " + std::to_string(locations[static_cast<size_t>(at)].first) +
               ", " + std::to_string(locations[static_cast<size_t>(at)].second) + ")";
    }
    return statuses[i].with_context(where);
  }
  return Status();
}

struct BatchLoader::State {
  State(Slide s, std::vector<std::pair<int64_t, int64_t>> locs, const BatchOptions& opt)
      : slide(std::move(s)), locations(std::move(locs)), options(opt) {}

  Slide slide;
  std::vector<std::pair<int64_t, int64_t>> locations;
  std::vector<int64_t> order;  // location index of each item, in delivery order
  BatchOptions options;
  int64_t batches = 0;
  size_t item_bytes = 0;
  int64_t chunk = 1;  // items per task (never across batches)

  struct Pending {
    std::shared_ptr<BatchBuffer> pixels;
    std::vector<Status> statuses;
    int64_t remaining = 0;
  };

  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Pending> pending;  // batches [delivered, delivered + pending.size())
  int64_t delivered = 0;        // batches handed to the consumer
  int64_t next_item = 0;        // next item (in `order`) to submit
  int in_flight = 0;
  bool cancelled = false;

  int64_t batch_size_of(int64_t b) const {
    return std::min<int64_t>(options.batch_size, static_cast<int64_t>(order.size()) - b * options.batch_size);
  }

  // Submits items while the worker and prefetch limits allow. Requires `mutex`.
  void schedule_locked(const std::shared_ptr<State>& self) {
    const int64_t total_items = std::min<int64_t>(static_cast<int64_t>(order.size()), batches * options.batch_size);
    while (!cancelled && next_item < total_items && in_flight < options.num_workers) {
      const int64_t b = next_item / options.batch_size;
      if (b >= delivered + options.prefetch) break;
      while (delivered + static_cast<int64_t>(pending.size()) <= b) {
        const int64_t n = batch_size_of(delivered + static_cast<int64_t>(pending.size()));
        Pending p;
        p.pixels = std::make_shared<BatchBuffer>(item_bytes * static_cast<size_t>(n), options.device);
        p.statuses.resize(static_cast<size_t>(n));
        p.remaining = n;
        pending.push_back(std::move(p));
      }
      const int64_t first = next_item;
      const int64_t count = std::min({chunk, total_items - first, (b + 1) * options.batch_size - first});
      next_item += count;
      ++in_flight;
      Pending& batch = pending[static_cast<size_t>(b - delivered)];
      internal::loader_pool().submit(
          [self, first, count, b, pixels = batch.pixels] { self->read_items(self, first, count, b, pixels); });
    }
  }

  ImageView view_of(const std::shared_ptr<BatchBuffer>& pixels, int64_t slot) const {
    return ImageView{pixels->data() + item_bytes * static_cast<size_t>(slot), options.width * 3,
                     static_cast<int32_t>(options.width), static_cast<int32_t>(options.height), 3, options.device};
  }

  // Reads items [first, first + count) of batch b into their slots; one status each.
  std::vector<Status> read_slots(int64_t first, int64_t count, int64_t b, const std::shared_ptr<BatchBuffer>& pixels) {
    const int64_t first_slot = first - b * options.batch_size;
    auto location = [&](int64_t item) { return locations[static_cast<size_t>(order[static_cast<size_t>(item)])]; };
    if (pixels->data() == nullptr) return std::vector<Status>(static_cast<size_t>(count), pixels->error());
    if (count == 1) {
      const auto [x, y] = location(first);
      return {slide.read_region(x, y, options.level, options.width, options.height, view_of(pixels, first_slot),
                                options.read)};
    }
    std::vector<LevelRegion> regions;
    std::vector<ImageView> views;
    for (int64_t i = 0; i < count; ++i) {
      const auto [x, y] = location(first + i);
      regions.push_back(LevelRegion{slide.to_level_coordinate(x, options.level),
                                    slide.to_level_coordinate(y, options.level), options.width, options.height});
      views.push_back(view_of(pixels, first_slot + i));
    }
    return slide.read_level_regions(options.level, regions, views, options.read);
  }

  void read_items(const std::shared_ptr<State>& self, int64_t first, int64_t count, int64_t b,
                  const std::shared_ptr<BatchBuffer>& pixels) {
    bool skip;
    {
      std::lock_guard<std::mutex> lock(mutex);
      skip = cancelled;
    }
    std::vector<Status> statuses = skip ? std::vector<Status>(static_cast<size_t>(count)) : read_slots(first, count, b, pixels);
    const int64_t first_slot = first - b * options.batch_size;
    for (int64_t i = 0; i < count && !skip; ++i) {
      if (statuses[static_cast<size_t>(i)].ok()) continue;
      // A failed item reads as fill, never as stale pixels.
      const ImageView view = view_of(pixels, first_slot + i);
      if (!view.data) continue;
      const auto fill = options.read.fill.value_or(slide.background());
      if (options.device.is_cpu()) {
        for (size_t k = 0; k < item_bytes; k += 3) std::memcpy(view.data + k, fill.data(), 3);
      } else {
        (void)fill_device_pixels(view.data, static_cast<size_t>(view.stride), view.width, view.height, fill.data(),
                                 options.device.index);
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    --in_flight;
    if (b >= delivered && b < delivered + static_cast<int64_t>(pending.size())) {
      Pending& batch = pending[static_cast<size_t>(b - delivered)];
      for (int64_t i = 0; i < count; ++i) {
        batch.statuses[static_cast<size_t>(first_slot + i)] = std::move(statuses[static_cast<size_t>(i)]);
      }
      batch.remaining -= count;
      if (batch.remaining == 0) ready.notify_all();
    }
    schedule_locked(self);  // a worker slot is free: start the next task, if any may start
  }
};

Result<std::unique_ptr<BatchLoader>> BatchLoader::create(const Slide& slide,
                                                         std::vector<std::pair<int64_t, int64_t>> locations,
                                                         const BatchOptions& options) {
  if (options.level < 0 || options.level >= slide.level_count()) {
    return invalid_argument("level " + std::to_string(options.level) + " does not exist (the slide has " +
                            std::to_string(slide.level_count()) + " levels)");
  }
  if (options.width <= 0 || options.height <= 0) return invalid_argument("region size must be positive");
  if (options.batch_size <= 0) return invalid_argument("batch_size must be positive");
  if (options.num_workers < 0) return invalid_argument("num_workers must not be negative");
  if (!options.device.is_cpu()) TW_RETURN_IF_ERROR(gpu_status(options.device.index));
  TW_RETURN_IF_ERROR(check_region_size(options.width, options.height * options.batch_size));
  auto state = std::make_shared<State>(slide, std::move(locations), options);
  State& s = *state;
  if (s.options.num_workers == 0) s.options.num_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.options.prefetch = std::max(1, s.options.prefetch);
  if (s.options.device.is_cpu()) {
    // Workers that fill the cores read their regions alone; fewer workers spread tiles over the pool.
    if (s.options.read.threads == 0) {
      s.options.read.threads = std::max(1, internal::global_pool_threads() / s.options.num_workers);
    }
    // Each task reads a run of neighbouring regions (a batch shared out once among the workers): workers
    // then rarely need the same tile at the same moment, which for tiling a level made them wait on each
    // other's decodes (or decode the same tiles twice).
    s.chunk = std::max<int64_t>(1, options.batch_size / s.options.num_workers);
  } else {
    const int chunk = internal::settings().loader_device_chunk;
    s.chunk = chunk <= 0 ? options.batch_size : std::min(chunk, options.batch_size);
  }
  s.item_bytes = static_cast<size_t>(options.width) * static_cast<size_t>(options.height) * 3;
  s.order.resize(s.locations.size());
  for (size_t i = 0; i < s.order.size(); ++i) s.order[i] = static_cast<int64_t>(i);
  if (options.shuffle) {
    // Fisher-Yates with an explicit generator, so a seed gives the same order on every platform.
    std::mt19937_64 rng(options.seed);
    for (size_t i = s.order.size(); i > 1; --i) {
      std::swap(s.order[i - 1], s.order[static_cast<size_t>(rng() % i)]);
    }
  }
  const int64_t n = static_cast<int64_t>(s.order.size());
  s.batches = options.drop_last ? n / options.batch_size : (n + options.batch_size - 1) / options.batch_size;
  internal::loader_pool().grow(s.options.num_workers);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.schedule_locked(state);
  }
  return std::unique_ptr<BatchLoader>(new BatchLoader(std::move(state)));
}

BatchLoader::~BatchLoader() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->cancelled = true;
  state_->pending.clear();  // running tasks keep their own buffer references
}

int64_t BatchLoader::batch_count() const { return state_->batches; }
int64_t BatchLoader::location_count() const { return static_cast<int64_t>(state_->locations.size()); }

std::optional<Batch> BatchLoader::next() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.delivered >= s.batches) return std::nullopt;
  s.schedule_locked(state_);
  s.ready.wait(lock, [&] { return !s.pending.empty() && s.pending.front().remaining == 0; });
  State::Pending done = std::move(s.pending.front());
  s.pending.pop_front();
  Batch batch;
  batch.index = s.delivered++;
  batch.count = static_cast<int64_t>(done.statuses.size());
  batch.width = s.options.width;
  batch.height = s.options.height;
  batch.pixels = std::move(done.pixels);
  batch.statuses = std::move(done.statuses);
  for (int64_t i = 0; i < batch.count; ++i) {
    batch.locations_index.push_back(s.order[static_cast<size_t>(batch.index * s.options.batch_size + i)]);
  }
  s.schedule_locked(state_);
  return batch;
}

}  // namespace tilewise
