#include <sys/stat.h>

#include <algorithm>
#include <cmath>

#include "api/slide_impl.h"
#include "cache/tile_cache.h"
#include "codecs/decoder_pool.h"
#include "formats/format_registry.h"
#include "formats/unit_stream.h"
#include "io/http_source.h"
#include "io/source.h"
#include "region/alpha_reader.h"
#include "codecs/jpeg/mcu_index_cache.h"
#include "region/region_plan.h"
#include "tilewise/tilewise.h"
#include "util/heap_trim.h"

namespace tilewise {

const char* version() { return TILEWISE_VERSION; }

std::optional<std::string> detect_format(const std::string& path) {
  auto entry = formats::is_folder(path) ? formats::slide_file_in_folder(path) : Result<std::string>(path);
  if (!entry.ok()) return std::nullopt;
  auto source = io::open_file(*entry);
  if (!source.ok()) return std::nullopt;
  std::string vendor = formats::detect_vendor(*source);
  if (vendor.empty()) return std::nullopt;
  return vendor;
}

namespace internal {

namespace {

// A slide's name in tile cache keys: the same image (path, scene, the quickhash where the format has one and,
// for a local file, its device, inode, size and modification and change times) opened again in this process
// or in another process sharing the cache gets the same name, so their tiles are shared; a file rewritten
// since gets another.
uint64_t slide_identity(const formats::SlideModel& model, const std::string& path) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  auto feed = [&h](const void* data, size_t size) {
    for (size_t i = 0; i < size; ++i) h = (h ^ static_cast<const uint8_t*>(data)[i]) * 0x100000001b3ull;
  };
  feed(path.data(), path.size());
  const int32_t scene = model.scene.value_or(-1);
  feed(&scene, sizeof scene);
  const auto hash = std::find_if(model.properties.begin(), model.properties.end(),
                                 [](const auto& p) { return p.first == "openslide.quickhash-1"; });
  if (hash != model.properties.end()) {
    feed(hash->second.data(), hash->second.size());
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    const int64_t fields[] = {static_cast<int64_t>(st.st_dev), static_cast<int64_t>(st.st_ino),
                              static_cast<int64_t>(st.st_size), st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                              st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
    feed(fields, sizeof fields);
  }
  return h;
}

}  // namespace

SlideImpl::SlideImpl(formats::SlideModel m, std::string p)
    : model(std::move(m)),
      path(std::move(p)),
      uid(slide_identity(model, path)),
      host_reader(model, uid),
      device_reader(model, uid) {
  for (const auto& l : model.levels) levels.push_back(l.info);
  for (const auto& a : model.associated) associated.push_back({a.name, a.image.info.width, a.image.info.height});
}

SlideImpl::~SlideImpl() {
  cache::TileCache::global().erase_slide(uid);
  for (const auto& level : model.levels) codecs::McuIndexCache::global().erase_units(level.units.get());
  for (const auto& plane : model.planes) {
    for (const auto& level : plane.levels) codecs::McuIndexCache::global().erase_units(level.units.get());
  }
  trim_heap_after_close();  // what earlier closes freed (this slide's members are freed after this body)
}

Status SlideImpl::read(const region::RegionRequest& request) const {
  return request.out.device.is_cpu() ? host_reader.read(request) : device_reader.read(request);
}

std::vector<Status> SlideImpl::read_batch(std::span<const region::RegionRequest> requests) const {
  if (!requests.empty() && !requests.front().out.device.is_cpu()) return device_reader.read_batch(requests);
  return host_reader.read_batch(requests);
}

}  // namespace internal

namespace {
Result<Slide> open_source(Result<std::shared_ptr<const io::Source>> source, const std::string& path,
                          Slide (*make)(std::shared_ptr<const internal::SlideImpl>), const OpenOptions& options) {
  if (!source.ok()) return source.status();
  auto model = formats::open_model(*source, options);
  if (!model.ok()) return model.status();
  return make(std::make_shared<const internal::SlideImpl>(std::move(model).value(), path));
}
}  // namespace

Result<Slide> Slide::open(const std::string& path, const OpenOptions& options) {
  if (formats::is_folder(path)) {  // the slide keeps the folder as its path (pickled slides reopen it)
    TW_ASSIGN_OR_RETURN(std::string entry, formats::slide_file_in_folder(path));
    return open_source(
        io::open_file(entry), path,
        [](std::shared_ptr<const internal::SlideImpl> impl) { return Slide(std::move(impl)); }, options);
  }
  return open_source(
      io::open_file(path, io::HttpAuth{options.bearer_token, options.http_headers}), path,
      [](std::shared_ptr<const internal::SlideImpl> impl) { return Slide(std::move(impl)); }, options);
}

Result<Slide> Slide::open_reader(ReadAt read, uint64_t size, const std::string& name, const OpenOptions& options) {
  return open_source(
      io::callback_source(std::move(read), size, name), name,
      [](std::shared_ptr<const internal::SlideImpl> impl) { return Slide(std::move(impl)); }, options);
}

Result<Slide> Slide::open_memory(std::vector<uint8_t> bytes, const std::string& name, const OpenOptions& options) {
  return open_source(
      io::memory_source(std::move(bytes), name), name,
      [](std::shared_ptr<const internal::SlideImpl> impl) { return Slide(std::move(impl)); }, options);
}

const std::vector<SceneInfo>& Slide::scenes() const { return impl_->model.scenes; }
std::optional<int32_t> Slide::scene() const { return impl_->model.scene; }

const std::string& Slide::path() const { return impl_->path; }
const std::string& Slide::format() const { return impl_->model.vendor; }
int Slide::level_count() const { return static_cast<int>(impl_->levels.size()); }
const LevelInfo& Slide::level(int index) const { return impl_->levels.at(static_cast<size_t>(index)); }
const std::vector<LevelInfo>& Slide::levels() const { return impl_->levels; }
const Properties& Slide::properties() const { return impl_->model.properties; }

std::vector<int64_t> Slide::absent_tiles(int level) const {
  std::vector<int64_t> out;
  if (level < 0 || level >= level_count()) return out;
  const formats::LevelModel& l = impl_->model.levels[static_cast<size_t>(level)];
  if (l.placement) return out;
  const int64_t count = l.tiles_across * l.tiles_down;
  for (int64_t i = 0; i < count; ++i) {
    if (l.unit_length(i) == 0) out.push_back(i);
  }
  return out;
}
Result<StoredTile> Slide::read_stored_tile(int level, int64_t col, int64_t row) const {
  if (level < 0 || level >= level_count()) return invalid_argument(path() + ": no level " + std::to_string(level));
  const formats::LevelModel& l = impl_->model.levels[static_cast<size_t>(level)];
  if (col < 0 || row < 0 || col >= l.tiles_across || row >= l.tiles_down) {
    return invalid_argument(path() + ": tile (" + std::to_string(col) + "," + std::to_string(row) + ") is outside level " +
                            std::to_string(level) + "'s grid");
  }
  if (l.placement || (l.stream != formats::UnitStream::kStored && l.stream != formats::UnitStream::kFrame) ||
      l.desc.compression != codecs::Compression::kJpeg ||
      l.desc.planes != 1) {
    return unsupported(path() + ": level " + std::to_string(level) + "'s tiles are not whole JPEG streams on a grid");
  }
  const int64_t unit = row * l.tiles_across + col;
  const std::string where = path() + ": level " + std::to_string(level) + " tile (" + std::to_string(col) + "," + std::to_string(row) + ")";
  if (l.unit_length(unit) == 0) return not_found(where + " is not stored");
  StoredTile tile;
  auto desc = formats::read_unit(l, unit, tile.bytes, /*splice_tables=*/true);
  if (!desc.ok()) return desc.status().with_context(where);
  tile.width = desc->width;
  tile.height = desc->height;
  tile.ycbcr = desc->color == codecs::ColorSpace::kYCbCr;
  return tile;
}

std::vector<std::array<int64_t, 4>> Slide::stored_area(int level, int64_t x, int64_t y, int64_t width,
                                                        int64_t height) const {
  std::vector<std::array<int64_t, 4>> out;
  if (level < 0 || level >= level_count()) return out;
  auto plan = region::plan_region(impl_->model.levels[static_cast<size_t>(level)], "", x, y, width, height);
  if (!plan.ok()) return out;
  for (const region::PlannedTile& t : plan->tiles) {
    if (!t.empty) out.push_back({t.need.x0, t.need.y0, t.need.width(), t.need.height()});
  }
  return out;
}

const std::vector<uint8_t>& Slide::icc_profile() const { return impl_->model.icc_profile; }

const std::vector<uint8_t>& Slide::associated_icc_profile(const std::string& name) const {
  static const std::vector<uint8_t> kNone;
  for (const auto& a : impl_->model.associated) {
    if (a.name == name) return a.icc_profile;
  }
  return kNone;
}
std::array<uint8_t, 3> Slide::background() const { return impl_->model.background; }
std::optional<std::pair<double, double>> Slide::mpp() const { return impl_->model.mpp; }
const std::vector<AssociatedImageInfo>& Slide::associated_images() const { return impl_->associated; }
const std::vector<std::string>& Slide::warnings() const { return impl_->model.warnings; }

std::optional<std::string> Slide::property(const std::string& key) const {
  const Properties& p = impl_->model.properties;
  auto it =
      std::lower_bound(p.begin(), p.end(), key, [](const auto& kv, const std::string& k) { return kv.first < k; });
  if (it != p.end() && it->first == key) return it->second;
  return std::nullopt;
}

int Slide::best_level_for_downsample(double downsample) const {
  // OpenSlide's rule: the largest level whose downsample does not exceed the request.
  const auto& levels = impl_->levels;
  if (downsample < levels[0].downsample) return 0;
  for (size_t i = 1; i < levels.size(); ++i) {
    if (downsample < levels[i].downsample) return static_cast<int>(i - 1);
  }
  return static_cast<int>(levels.size() - 1);
}

int64_t Slide::to_level_coordinate(int64_t level0, int level) const {
  const double ds = impl_->levels.at(static_cast<size_t>(level)).downsample;
  return static_cast<int64_t>(static_cast<double>(level0) / ds);  // truncation toward zero
}

namespace internal {

Status SlideImpl::no_such_level(int level) const {
  return invalid_argument(path + ": level " + std::to_string(level) + " does not exist (the slide has " +
                          std::to_string(levels.size()) + " levels)");
}

region::RegionRequest SlideImpl::request(int level, const LevelRegion& r, const ImageView& out,
                                         const ReadOptions& options) const {
  region::RegionRequest req;
  req.level = &model.levels[static_cast<size_t>(level)];
  req.level_label = "level " + std::to_string(level);
  req.cache_level = level;
  req.x = r.x;
  req.y = r.y;
  req.width = r.width;
  req.height = r.height;
  req.out = out;
  req.fill = options.fill.value_or(model.background);
  req.use_cache = options.use_cache;
  req.threads = options.threads;
  return req;
}

Status SlideImpl::with_path(Status s) const {
  // a tile's error already names the file
  if (!s.ok() && s.code() == StatusCode::kInvalidArgument && s.message().rfind(path + ":", 0) != 0) {
    return s.with_context(path);
  }
  return s;
}

}  // namespace internal

Status Slide::read_level_region(int level, int64_t x, int64_t y, int64_t width, int64_t height, const ImageView& out,
                                const ReadOptions& options) const {
  if (level < 0 || level >= level_count()) return impl_->no_such_level(level);
  return impl_->with_path(impl_->read(impl_->request(level, LevelRegion{x, y, width, height}, out, options)));
}

Status Slide::read_level_alpha(int level, int64_t x, int64_t y, int64_t width, int64_t height, uint8_t* out,
                               int64_t stride) const {
  if (level < 0 || level >= level_count()) return impl_->no_such_level(level);
  return impl_->with_path(region::read_level_alpha(impl_->model, impl_->model.levels[static_cast<size_t>(level)],
                                                    "level " + std::to_string(level), x, y, width, height, out,
                                                    stride));
}

std::vector<Status> Slide::read_level_regions(int level, std::span<const LevelRegion> regions,
                                              std::span<const ImageView> out, const ReadOptions& options) const {
  if (level < 0 || level >= level_count()) return std::vector<Status>(regions.size(), impl_->no_such_level(level));
  if (out.size() != regions.size()) {
    return std::vector<Status>(regions.size(),
                               invalid_argument(impl_->path + ": " + std::to_string(regions.size()) + " regions but " +
                                                std::to_string(out.size()) + " output views"));
  }
  for (const ImageView& v : out) {
    if (v.device.type != out.front().device.type || v.device.index != out.front().device.index) {
      return std::vector<Status>(regions.size(),
                                 invalid_argument(impl_->path + ": the output views of one call must share a device"));
    }
  }
  std::vector<region::RegionRequest> requests;
  requests.reserve(regions.size());
  for (size_t i = 0; i < regions.size(); ++i)
    requests.push_back(impl_->request(level, regions[i], out[i], options));
  std::vector<Status> statuses = impl_->read_batch(requests);
  for (Status& s : statuses) s = impl_->with_path(std::move(s));
  return statuses;
}

Status Slide::read_region(int64_t x, int64_t y, int level, int64_t width, int64_t height, const ImageView& out,
                          const ReadOptions& options) const {
  if (level < 0 || level >= level_count()) return read_level_region(level, 0, 0, width, height, out, options);
  return read_level_region(level, to_level_coordinate(x, level), to_level_coordinate(y, level), width, height, out,
                           options);
}

Result<RgbImage> Slide::read_associated_image(const std::string& name) const {
  for (size_t i = 0; i < impl_->model.associated.size(); ++i) {
    const formats::AssociatedModel& a = impl_->model.associated[i];
    if (a.name != name) continue;
    RgbImage image;
    image.width = a.image.info.width;
    image.height = a.image.info.height;
    image.pixels.resize(static_cast<size_t>(image.width * image.height * 3));
    const ImageView view{image.pixels.data(),
                         image.width * 3,
                         static_cast<int32_t>(image.width),
                         static_cast<int32_t>(image.height),
                         3,
                         {}};
    if (!a.embedded_jpeg.empty()) {
      codecs::TileDesc desc;
      desc.compression = codecs::Compression::kJpeg;
      desc.width = view.width;
      desc.height = view.height;
      desc.color = codecs::ColorSpace::kYCbCr;
      auto decoder = codecs::DecoderPool::global().acquire();
      TW_RETURN_IF_ERROR(
          decoder->decode(a.embedded_jpeg, desc, view).with_context(impl_->path + ": associated image " + name));
      return image;
    }
    region::RegionRequest req;
    req.level = &a.image;
    req.level_label = "associated image " + name;
    req.cache_level = -1 - static_cast<int32_t>(i);
    req.width = image.width;
    req.height = image.height;
    req.out = view;
    req.use_cache = false;
    TW_RETURN_IF_ERROR(impl_->read(req));
    return image;
  }
  return not_found(impl_->path + ": no associated image named '" + name + "'");
}

}  // namespace tilewise
