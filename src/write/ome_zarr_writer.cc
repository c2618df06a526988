#include "write/ome_zarr_writer.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

namespace tilewise::write {

namespace {

constexpr uint64_t kAbsent = std::numeric_limits<uint64_t>::max();

using Json = nlohmann::ordered_json;

std::string hex_colour(const std::array<uint8_t, 3>& rgb) {
  char text[8];
  std::snprintf(text, sizeof text, "%02X%02X%02X", rgb[0], rgb[1], rgb[2]);
  return text;
}

// The display window of a sample type: its range (0 to 1 for float samples).
std::pair<double, double> type_range(SampleType type) {
  switch (type) {
    case SampleType::kUint8: return {0, 255};
    case SampleType::kUint16: return {0, 65535};
    case SampleType::kUint32: return {0, 4294967295.0};
    case SampleType::kInt8: return {-128, 127};
    case SampleType::kInt16: return {-32768, 32767};
    case SampleType::kInt32: return {-2147483648.0, 2147483647.0};
    case SampleType::kFloat32: return {0, 1};
  }
  return {0, 255};
}

// Zarr's codec list for one chunk: "bytes" (little-endian where samples have more than one byte), then the
// compressor.
Json chunk_codecs(const TileCoding& coding, SampleType type) {
  Json codecs = Json::array();
  codecs.push_back(sample_bytes(type) > 1 ? Json{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}
                                          : Json{{"name", "bytes"}});
  if (coding.codec == TileCodec::kZstd) {
    codecs.push_back({{"name", "zstd"}, {"configuration", {{"level", kZstdLevel}, {"checksum", false}}}});
  } else if (coding.codec == TileCodec::kDeflate) {
    codecs.push_back({{"name", "gzip"}, {"configuration", {{"level", 6}}}});
  }
  return codecs;
}

Status write_text(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return io_error(path + ": cannot create (" + std::strerror(errno) + ")");
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (std::fclose(file) != 0 || !written) return io_error(path + ": write failed (" + std::strerror(errno) + ")");
  return Status();
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

Result<OmeZarrWriter> OmeZarrWriter::create(const std::string& folder, OmeZarrImage image) {
  const TileCodec codec = image.coding.codec;
  if ((codec != TileCodec::kZstd && codec != TileCodec::kDeflate && codec != TileCodec::kNone) || !image.coding.zarr_chunk) {
    return invalid_argument(folder + ": Zarr chunks are zstd, deflate (gzip) or uncompressed");
  }
  if (image.rgb && (image.c != 3 || image.type != SampleType::kUint8)) {
    return internal_error(folder + ": an RGB image has three 8-bit channels");
  }
  TW_ASSIGN_OR_RETURN(PartialFolder partial, PartialFolder::create(folder, "OME-Zarr group"));
  return OmeZarrWriter(std::move(partial), std::move(image));
}

OmeZarrWriter::OmeZarrWriter(PartialFolder folder, OmeZarrImage image)
    : folder_(std::move(folder)), image_(std::move(image)) {}

OmeZarrWriter::~OmeZarrWriter() {
  for (Level& level : levels_) {
    for (Shard& shard : level.shards) {
      if (shard.file) std::fclose(shard.file);
    }
  }
}

void OmeZarrWriter::begin_plane(int32_t c, int32_t z, int32_t t) {
  plane_c_ = c;
  plane_z_ = z;
  plane_t_ = t;
  plane_levels_ = 0;
}

int OmeZarrWriter::add_level(LevelSpec spec) {
  const size_t k = plane_levels_++;
  if (k < levels_.size()) {
    Level& level = levels_[k];
    if (level.next != level.spec.tiles_across() * level.spec.tiles_down() && error_.ok()) {
      error_ = internal_error(folder_.output() + ": level " + std::to_string(k) + " of the plane before is missing tiles");
    }
    if (error_.ok()) error_ = check_plane_level(folder_.output(), k, level.spec, spec);
    level.next = 0;
    return static_cast<int>(k);
  }
  Level level;
  level.shard_tiles = static_cast<int32_t>(
      std::min<int64_t>(std::clamp(4096 / spec.tile, 1, 64), std::max(spec.tiles_across(), spec.tiles_down())));
  level.spec = std::move(spec);
  levels_.push_back(std::move(level));
  return static_cast<int>(k);
}

Status OmeZarrWriter::open_shard_row(size_t k, int64_t shard_row) {
  Level& level = levels_[k];
  const int64_t across = (level.spec.tiles_across() + level.shard_tiles - 1) / level.shard_tiles;
  const int32_t chunk_c = image_.rgb ? 0 : plane_c_;
  const std::string row_dir = folder_.temp() + "/" + std::to_string(k) + "/c/" + std::to_string(plane_t_) + "/" +
                              std::to_string(chunk_c) + "/" + std::to_string(plane_z_) + "/" + std::to_string(shard_row);
  std::error_code ec;
  std::filesystem::create_directories(row_dir, ec);
  if (ec) return io_error(row_dir + ": cannot create (" + ec.message() + ")");
  level.shards.resize(static_cast<size_t>(across));
  for (int64_t col = 0; col < across; ++col) {
    Shard& shard = level.shards[static_cast<size_t>(col)];
    shard.path = row_dir + "/" + std::to_string(col);
    shard.file = std::fopen(shard.path.c_str(), "wb");
    if (!shard.file) return io_error(shard.path + ": cannot create (" + std::strerror(errno) + ")");
    shard.size = 0;
    shard.index.assign(2 * static_cast<size_t>(level.shard_tiles) * static_cast<size_t>(level.shard_tiles), kAbsent);
  }
  level.shard_row = shard_row;
  return Status();
}

Status OmeZarrWriter::close_shards(Level& level) {
  for (Shard& shard : level.shards) {
    if (!shard.file) continue;
    std::vector<uint8_t> index;
    index.reserve(8 * shard.index.size());
    for (const uint64_t v : shard.index) put_u64(index, v);
    std::FILE* file = std::exchange(shard.file, nullptr);
    const bool written = std::fwrite(index.data(), 1, index.size(), file) == index.size();
    if (std::fclose(file) != 0 || !written) return io_error(shard.path + ": write failed (" + std::strerror(errno) + ")");
  }
  level.shards.clear();
  level.shard_row = -1;
  return Status();
}

Status OmeZarrWriter::write_tile(int level_id, int64_t index, std::span<const uint8_t> bytes) {
  TW_RETURN_IF_ERROR(error_);
  if (level_id < 0 || static_cast<size_t>(level_id) >= levels_.size()) {
    return internal_error(folder_.output() + ": no level " + std::to_string(level_id));
  }
  Level& level = levels_[static_cast<size_t>(level_id)];
  const int64_t across = level.spec.tiles_across(), total = across * level.spec.tiles_down();
  if (index != level.next || index >= total) {
    return internal_error(folder_.output() + ": level " + std::to_string(level_id) + " tile " + std::to_string(index) +
                          " given where tile " + std::to_string(level.next) + " comes next");
  }
  const int64_t col = index % across, row = index / across;
  if (row / level.shard_tiles != level.shard_row) {
    TW_RETURN_IF_ERROR(close_shards(level));
    TW_RETURN_IF_ERROR(open_shard_row(static_cast<size_t>(level_id), row / level.shard_tiles));
  }
  Shard& shard = level.shards[static_cast<size_t>(col / level.shard_tiles)];
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), shard.file) != bytes.size()) {
    return io_error(shard.path + ": write failed (" + std::strerror(errno) + ")");
  }
  const size_t inner = static_cast<size_t>((row % level.shard_tiles) * level.shard_tiles + col % level.shard_tiles);
  shard.index[2 * inner] = shard.size;
  shard.index[2 * inner + 1] = bytes.size();
  shard.size += bytes.size();
  ++level.next;
  if (level.next == total) return close_shards(level);
  return Status();
}

std::string OmeZarrWriter::array_json(const Level& level) const {
  const LevelSpec& s = level.spec;
  const int64_t chunk_c = image_.rgb ? 3 : 1, shard = int64_t{level.shard_tiles} * s.tile;
  Json index_codecs = Json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}});
  Json sharding = {{"name", "sharding_indexed"},
                   {"configuration",
                    {{"chunk_shape", {1, chunk_c, 1, s.tile, s.tile}},
                     {"codecs", chunk_codecs(image_.coding, image_.type)},
                     {"index_codecs", index_codecs},
                     {"index_location", "end"}}}};
  Json array = {{"zarr_format", 3},
                {"node_type", "array"},
                {"shape", {image_.t, image_.c, image_.z, s.height, s.width}},
                {"data_type", sample_type_name(image_.type)},
                {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {1, chunk_c, 1, shard, shard}}}}}},
                {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
                {"fill_value", 0},
                {"codecs", Json::array({sharding})},
                {"dimension_names", {"t", "c", "z", "y", "x"}},
                {"attributes", Json::object()}};
  if (image_.type == SampleType::kFloat32) array["fill_value"] = 0.0;
  return array.dump();
}

std::string OmeZarrWriter::group_json() const {
  const bool nearest = image_.filter == Downsample::kNearest;
  const bool physical = image_.mpp.has_value();
  Json axes = Json::array({{{"name", "t"}, {"type", "time"}}, {{"name", "c"}, {"type", "channel"}}});
  for (const char* name : {"z", "y", "x"}) {
    Json axis = {{"name", name}, {"type", "space"}};
    if (physical) axis["unit"] = "micrometer";
    axes.push_back(axis);
  }
  Json datasets = Json::array();
  const LevelSpec& base = levels_.front().spec;
  for (size_t k = 0; k < levels_.size(); ++k) {
    const LevelSpec& s = levels_[k].spec;
    const double fx = static_cast<double>(base.width) / static_cast<double>(s.width);
    const double fy = static_cast<double>(base.height) / static_cast<double>(s.height);
    const double sx = physical ? image_.mpp->first * fx : fx, sy = physical ? image_.mpp->second * fy : fy;
    const double sz = physical && image_.z_spacing > 0 ? image_.z_spacing : 1.0;  // focal planes are not downsampled
    datasets.push_back({{"path", std::to_string(k)},
                        {"coordinateTransformations", Json::array({{{"type", "scale"}, {"scale", {1.0, 1.0, sz, sy, sx}}}})}});
  }
  Json channels = Json::array();
  const auto [low, high] = type_range(image_.type);
  for (int32_t c = 0; c < image_.c; ++c) {
    std::string label, colour;
    if (image_.rgb) {
      static const char* const kNames[] = {"Red", "Green", "Blue"};
      static const char* const kColours[] = {"FF0000", "00FF00", "0000FF"};
      label = kNames[c];
      colour = kColours[c];
    } else {
      const ChannelInfo* info = static_cast<size_t>(c) < image_.channels.size() ? &image_.channels[static_cast<size_t>(c)] : nullptr;
      label = info && !info->name.empty() ? info->name : "Channel " + std::to_string(c);
      colour = info && info->color ? hex_colour(*info->color) : "FFFFFF";
    }
    channels.push_back({{"label", label},
                        {"color", colour},
                        {"active", true},
                        {"coefficient", 1.0},
                        {"family", "linear"},
                        {"inverted", false},
                        {"window", {{"start", low}, {"end", high}, {"min", low}, {"max", high}}}});
  }
  Json multiscale = {{"name", image_.name},
                     {"axes", axes},
                     {"datasets", datasets},
                     {"type", nearest ? "nearest" : "mean"},
                     {"metadata",
                      {{"method", nearest ? "top-left pixel of each 2x2 box" : "2x2 box mean, odd edges repeated"},
                       {"version", image_.creator}}}};
  Json omero = {{"name", image_.name}, {"channels", channels}, {"rdefs", {{"defaultT", 0}, {"defaultZ", 0}, {"model", "color"}}}};
  Json group = {{"zarr_format", 3},
                {"node_type", "group"},
                {"attributes", {{"ome", {{"version", "0.5"}, {"multiscales", Json::array({multiscale})}, {"omero", omero}}}}}};
  return group.dump();
}

Status OmeZarrWriter::finish() {
  TW_RETURN_IF_ERROR(error_);
  if (levels_.empty()) return internal_error(folder_.output() + ": no level to write");
  for (size_t k = 0; k < levels_.size(); ++k) {
    Level& level = levels_[k];
    if (level.shard_row >= 0 || level.next != level.spec.tiles_across() * level.spec.tiles_down()) {
      return internal_error(folder_.output() + ": level " + std::to_string(k) + " is missing tiles");
    }
    const std::string dir = folder_.temp() + "/" + std::to_string(k);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return io_error(dir + ": cannot create (" + ec.message() + ")");
    TW_RETURN_IF_ERROR(write_text(dir + "/zarr.json", array_json(level)));
  }
  TW_RETURN_IF_ERROR(write_text(folder_.temp() + "/zarr.json", group_json()));
  return folder_.commit();
}

}  // namespace tilewise::write
