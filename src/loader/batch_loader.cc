// Synchronisation model of the batch loader.
//
// - Workers: the process-wide loader pool (util/thread_pool.h: it only ever grows, and is re-created in a
//   forked child); loaders submit one task per region. A loader keeps at most `num_workers` of its regions in
//   flight and at most `prefetch` batches started ahead of the consumer (a device loader: more when its
//   batches are small, loader/batches_ahead.h), so loaders share the pool fairly.
// - Tasks: into host memory, one task per run of batch_size / num_workers regions, each region decoded on
//   its worker alone
//   (ReadOptions::threads = 1 when the workers fill the cores: a worker fanning its four tiles out to the
//   decode pool made 16 workers contend for that pool's queue, measured at 0.23 x 16 on a 16-core host).
//   Into device memory, one task per batch, read as one Slide::read_level_regions batch (tiles deduplicated,
//   full GPU decode batches, one crop launch).
// - Hybrid device loaders (CPU helpers > 0, as many as the device's scheduler plans for the level's codec,
//   gpu/scheduler.h; helpers run on helper_pool(), the GPU tasks on loader_pool()): per batch one GPU task and the
//   loader's CPU helpers share its regions through a gpu::SharedBatch (gpu/shared_batch.h): the GPU task
//   reads its share from the front as one device batch read (and what the helpers left, if any, as a
//   second), helpers read single regions from the back on their own cores into the batch's page-locked
//   host copy; when the claims are exhausted the GPU task waits for the helpers still reading (at most one
//   region each), uploads their contiguous tail in one copy and completes the batch. Helpers serve the
//   oldest batch first. The GPU's first run is the scheduler's learnt share of the batch, which it moves by
//   each batch's outcome (a second GPU read or not); or, where the scheduler plans runs (codecs the GPU
//   decodes slower than the helpers), the GPU reads runs of that many regions, each claimed when the last is
//   read, and meets the helpers wherever their speeds put them (BatchClaims::in_runs). Without helpers the
//   cores beside the lanes stayed idle (a loader's 16 workers had at most `prefetch` tasks). Host loaders
//   run this scheduling only for tests (loader::Scheduling::hybrid_on_host: a host batch read, staging memcpy).
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
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "gpu/scheduler.h"
#include "gpu/shared_batch.h"
#include "loader/batches_ahead.h"
#include "loader/scheduling.h"
#include "tilewise/config.h"
#include "tilewise/gpu.h"
#include "tilewise/memory.h"
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
  using SharedBatch = gpu::SharedBatch;

  Slide slide;
  std::vector<std::pair<int64_t, int64_t>> locations;
  std::vector<int64_t> order;  // location index of each item, in delivery order
  BatchOptions options;
  int64_t batches = 0;
  size_t item_bytes = 0;
  int32_t channels = 3, sample_bytes = 1;  // per pixel (BatchOptions::planes: the selection's)
  int64_t chunk = 1;  // items per task (never across batches)
  int64_t ahead = 1;  // batches started ahead of the consumer (loader/batches_ahead.h)

  struct Pending {
    std::shared_ptr<BatchBuffer> pixels;
    std::vector<Status> statuses;
    int64_t remaining = 0;
    std::shared_ptr<SharedBatch> hybrid;  // hybrid device loaders only
  };

  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Pending> pending;  // batches [delivered, delivered + pending.size())
  int64_t delivered = 0;        // batches handed to the consumer
  int64_t next_item = 0;        // next item (in `order`) to submit
  int in_flight = 0;
  bool cancelled = false;
  // Hybrid device loaders (helpers > 0).
  int helpers = 0;
  int helpers_running = 0;
  int64_t started = 0;     // batches whose GPU task was submitted
  double cpu_share = 0.25;  // the helpers' planned part of the next batch (learnt, gpu_task)
  int gpu_run = 0;          // > 0: the GPU reads each batch in runs of this many regions instead
  gpu::CodecClass codec = gpu::CodecClass::kJpeg;  // of the level read, and
  gpu::Scheduler* scheduler = nullptr;  // of the device it is read to (host loaders scheduled as one: -1's)
  std::condition_variable helpers_idle;

  int64_t batch_size_of(int64_t b) const {
    return std::min<int64_t>(options.batch_size, static_cast<int64_t>(order.size()) - b * options.batch_size);
  }

  Pending make_pending(int64_t b) {
    const int64_t n = batch_size_of(b);
    Pending p;
    p.pixels = std::make_shared<BatchBuffer>(item_bytes * static_cast<size_t>(n), options.device);
    p.statuses.resize(static_cast<size_t>(n));
    p.remaining = n;
    return p;
  }

  // Submits items while the worker and prefetch limits allow. Requires `mutex`.
  void schedule_locked(const std::shared_ptr<State>& self) {
    if (helpers > 0) {
      schedule_hybrid_locked(self);
      return;
    }
    const int64_t total_items = std::min<int64_t>(static_cast<int64_t>(order.size()), batches * options.batch_size);
    while (!cancelled && next_item < total_items && in_flight < options.num_workers) {
      const int64_t b = next_item / options.batch_size;
      if (b >= delivered + ahead) break;
      while (delivered + static_cast<int64_t>(pending.size()) <= b) {
        pending.push_back(make_pending(delivered + static_cast<int64_t>(pending.size())));
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

  // Slot `slot` of a buffer of items on `device`: the batch's own (view_of) or a shared batch's host staging.
  ImageView slot_view(uint8_t* base, int64_t slot, const Device& device) const {
    return ImageView{base + item_bytes * static_cast<size_t>(slot), options.width * channels * sample_bytes,
                     static_cast<int32_t>(options.width), static_cast<int32_t>(options.height), channels, device,
                     sample_bytes};
  }
  ImageView view_of(const std::shared_ptr<BatchBuffer>& pixels, int64_t slot) const {
    return slot_view(pixels->data(), slot, options.device);
  }
  std::pair<int64_t, int64_t> location_of(int64_t item) const {
    return locations[static_cast<size_t>(order[static_cast<size_t>(item)])];
  }

  // A failed item reads as fill (planes: zeros), never as stale pixels.
  void fill_view(const ImageView& view) const {
    if (options.planes) {
      std::memset(view.data, 0, item_bytes);
      return;
    }
    const auto fill = options.read.fill.value_or(slide.background());
    (void)gpu::fill_view(view, fill.data());
  }

  // Reads items [first, first + count) of batch b into their slots; one status each.
  std::vector<Status> read_slots(int64_t first, int64_t count, int64_t b, const std::shared_ptr<BatchBuffer>& pixels) {
    const int64_t first_slot = first - b * options.batch_size;
    if (pixels->data() == nullptr) return std::vector<Status>(static_cast<size_t>(count), pixels->error());
    if (options.planes) {
      std::vector<Status> statuses;
      for (int64_t i = 0; i < count; ++i) {
        const auto [x, y] = location_of(first + i);
        statuses.push_back(slide.read_planes(options.level, slide.to_level_coordinate(x, options.level),
                                             slide.to_level_coordinate(y, options.level), options.width,
                                             options.height, *options.planes, view_of(pixels, first_slot + i),
                                             options.read));
      }
      return statuses;
    }
    if (count == 1) {
      const auto [x, y] = location_of(first);
      return {slide.read_region(x, y, options.level, options.width, options.height, view_of(pixels, first_slot),
                                options.read)};
    }
    std::vector<LevelRegion> regions;
    std::vector<ImageView> views;
    for (int64_t i = 0; i < count; ++i) {
      const auto [x, y] = location_of(first + i);
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
      if (!statuses[static_cast<size_t>(i)].ok()) fill_view(view_of(pixels, first_slot + i));
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

  // Hybrid device loaders: starts each batch of the window ahead with its GPU task, and helpers while
  // any started batch has regions left. Requires `mutex`.
  void schedule_hybrid_locked(const std::shared_ptr<State>& self) {
    while (!cancelled && started < batches && started < delivered + ahead) {
      const int64_t b = started++;
      Pending p = make_pending(b);
      const int64_t n = p.remaining;
      p.hybrid = std::make_shared<SharedBatch>(
          gpu_run > 0 ? gpu::BatchClaims::in_runs(n, gpu_run) : gpu::BatchClaims(n, 1.0 - cpu_share), options.device,
          item_bytes, /*helped=*/p.pixels->data() != nullptr);
      auto hybrid = p.hybrid;
      auto pixels = p.pixels;
      pending.push_back(std::move(p));
      internal::loader_pool().submit([self, b, hybrid, pixels] { self->gpu_task(self, b, hybrid, pixels); });
    }
    while (!cancelled && helpers_running < helpers && claimable_locked() >= 0) {
      ++helpers_running;
      internal::helper_pool().submit([self] { self->helper_task(); });
    }
  }

  // The oldest started batch with regions for a helper, or -1. Requires `mutex`.
  int64_t claimable_locked() const {
    for (size_t k = 0; k < pending.size(); ++k) {
      const SharedBatch* h = pending[k].hybrid.get();
      if (h && h->open_to_helpers()) return delivered + static_cast<int64_t>(k);
    }
    return -1;
  }
  void gpu_task(const std::shared_ptr<State>& self, int64_t b, const std::shared_ptr<SharedBatch>& hybrid,
                const std::shared_ptr<BatchBuffer>& pixels) {
    const int64_t base = b * options.batch_size;
    for (;;) {
      std::pair<int64_t, int64_t> run;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (cancelled) break;
        run = hybrid->claims().take_front();
      }
      if (run.second == 0) break;
      std::vector<Status> statuses = read_slots(base + run.first, run.second, b, pixels);
      scheduler->count_loader_gpu_read(run.second);
      for (int64_t i = 0; i < run.second; ++i) {
        Status& st = statuses[static_cast<size_t>(i)];
        if (!st.ok()) fill_view(view_of(pixels, run.first + i));
        hybrid->statuses()[static_cast<size_t>(run.first + i)] = std::move(st);
      }
    }
    // The helpers still reading regions of this batch finish them (one each); then their tail goes up at once.
    int64_t cpu_first;
    bool skip;
    {
      std::unique_lock<std::mutex> lock(mutex);
      helpers_idle.wait(lock, [&] { return hybrid->cpu_busy == 0; });
      cpu_first = hybrid->claims().cpu_first();
      skip = cancelled;
    }
    const int64_t n = hybrid->claims().size();
    if (!skip && cpu_first < n && pixels->data()) {
      const Status up = hybrid->upload_helpers(pixels->data());
      for (int64_t i = cpu_first; i < n && !up.ok(); ++i) {
        if (hybrid->statuses()[static_cast<size_t>(i)].ok()) hybrid->statuses()[static_cast<size_t>(i)] = up;
      }
      scheduler->count_loader_cpu_regions(n - cpu_first);
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (hybrid->helped() && !skip && !hybrid->claims().fixed_runs()) {
      // The device's scheduler moves the helpers' share by the outcome (gpu/scheduler.h).
      cpu_share = scheduler->record_loader_batch(codec, cpu_share, hybrid->claims().gpu_runs() > 1);
    }
    if (b >= delivered && b < delivered + static_cast<int64_t>(pending.size())) {
      Pending& batch = pending[static_cast<size_t>(b - delivered)];
      batch.statuses = std::move(hybrid->statuses());
      batch.remaining = 0;
      ready.notify_all();
    }
    schedule_locked(self);
  }

  // Reads single regions from the back of the oldest batch that has any, until none has.
  void helper_task() {
    ReadOptions read = options.read;
    read.threads = 1;  // the helper is one of the loader's cores
    for (;;) {
      std::shared_ptr<SharedBatch> h;
      int64_t b = -1, slot = -1;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!cancelled) b = claimable_locked();
        if (b < 0) {
          --helpers_running;
          return;
        }
        h = pending[static_cast<size_t>(b - delivered)].hybrid;
        slot = h->claims().take_back();
        ++h->cpu_busy;
      }
      const auto [x, y] = location_of(b * options.batch_size + slot);
      const ImageView view = slot_view(h->helper_slot(slot), 0, Device{});
      Status st = slide.read_region(x, y, options.level, options.width, options.height, view, read);
      if (!st.ok()) fill_view(view);
      h->statuses()[static_cast<size_t>(slot)] = std::move(st);
      std::lock_guard<std::mutex> lock(mutex);
      if (--h->cpu_busy == 0) helpers_idle.notify_all();
    }
  }
};

Result<std::unique_ptr<BatchLoader>> BatchLoader::create(const Slide& slide,
                                                         std::vector<std::pair<int64_t, int64_t>> locations,
                                                         const BatchOptions& options) {
  return loader::Scheduling{}.create(slide, std::move(locations), options);
}

namespace loader {

Result<std::unique_ptr<BatchLoader>> Scheduling::create(const Slide& slide,
                                                        std::vector<std::pair<int64_t, int64_t>> locations,
                                                        const BatchOptions& options) const {
  if (options.level < 0 || options.level >= slide.level_count()) {
    return invalid_argument("level " + std::to_string(options.level) + " does not exist (the slide has " +
                            std::to_string(slide.level_count()) + " levels)");
  }
  if (options.width <= 0 || options.height <= 0) return invalid_argument("region size must be positive");
  if (options.batch_size <= 0) return invalid_argument("batch_size must be positive");
  if (options.num_workers < 0) return invalid_argument("num_workers must not be negative");
  if (!options.device.is_cpu()) TW_RETURN_IF_ERROR(gpu_status(options.device.index));
  int32_t channels = 3, sample_bytes = 1;
  if (options.planes) {
    if (!options.device.is_cpu()) return unsupported(slide.path() + ": channels and planes are read into host memory only");
    const ImageAxes& axes = slide.axes();
    channels = options.planes->channels.empty() ? axes.channels : static_cast<int32_t>(options.planes->channels.size());
    sample_bytes = axes.rgb ? 1 : tilewise::sample_bytes(axes.sample_type);
  }
  TW_RETURN_IF_ERROR(check_region_size(options.width, options.height * options.batch_size,
                                       int64_t{channels} * sample_bytes));
  using State = BatchLoader::State;
  auto state = std::make_shared<State>(slide, std::move(locations), options);
  State& s = *state;
  if (s.options.num_workers == 0) s.options.num_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.options.prefetch = std::max(1, s.options.prefetch);
  s.channels = channels;
  s.sample_bytes = sample_bytes;
  s.item_bytes = static_cast<size_t>(options.width) * static_cast<size_t>(options.height) *
                 static_cast<size_t>(channels) * static_cast<size_t>(sample_bytes);
  s.ahead = batches_ahead(s.options.prefetch, !s.options.device.is_cpu(),
                          s.item_bytes * static_cast<size_t>(options.batch_size));
  if (s.options.device.is_cpu() && !hybrid_on_host) {
    // Workers that fill the cores read their regions alone; fewer workers spread tiles over the pool.
    if (s.options.read.threads == 0) {
      s.options.read.threads = std::max(1, internal::global_pool_threads() / s.options.num_workers);
    }
    // Each task reads a run of neighbouring regions (a batch shared out once among the workers): workers
    // then rarely need the same tile at the same moment, which for tiling a level made them wait on each
    // other's decodes (or decode the same tiles twice).
    s.chunk = std::max<int64_t>(1, options.batch_size / s.options.num_workers);
  } else {
    s.chunk = options.batch_size;
    // Some of the workers read whole regions on the CPU beside the GPU (hybrid), and the GPU claims its part
    // of each batch as the device's scheduler plans for the level's codec (gpu/scheduler.h).
    s.codec = gpu::codec_class(slide.level(options.level));
    s.scheduler = &gpu::device_scheduler(options.device.is_cpu() ? -1 : options.device.index);
    const gpu::LoaderPlan plan =
        s.scheduler->loader_plan(s.codec, s.options.num_workers, cpu_helpers, gpu_run);
    s.helpers = plan.helpers;
    s.gpu_run = plan.gpu_run;
    s.cpu_share = plan.helper_share;
  }
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
  // Hybrid: the GPU tasks on the loader pool, the helpers on their own (helper_pool).
  internal::loader_pool().grow(s.helpers > 0 ? static_cast<int>(s.ahead) : s.options.num_workers);
  if (s.helpers > 0) internal::helper_pool().grow(s.helpers);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.schedule_locked(state);
  }
  return std::unique_ptr<BatchLoader>(new BatchLoader(std::move(state)));
}

}  // namespace loader

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
  batch.channels = s.channels;
  batch.sample_bytes = s.sample_bytes;
  batch.pixels = std::move(done.pixels);
  batch.statuses = std::move(done.statuses);
  for (int64_t i = 0; i < batch.count; ++i) {
    batch.locations_index.push_back(s.order[static_cast<size_t>(batch.index * s.options.batch_size + i)]);
  }
  s.schedule_locked(state_);
  return batch;
}

}  // namespace tilewise
