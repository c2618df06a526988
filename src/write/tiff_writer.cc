#include "write/tiff_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "write/partial_name.h"

namespace tilewise::write {

namespace {

enum Type : uint16_t { kAscii = 2, kShort = 3, kLong = 4, kRational = 5, kUndefined = 7, kLong8 = 16 };

// A directory entry and its value's bytes (little-endian), inline when they fit in 8 bytes.
struct Entry {
  uint16_t tag = 0;
  uint16_t type = 0;
  uint64_t count = 0;
  std::vector<uint8_t> data;
};

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i)));
}

Entry shorts(uint16_t tag, std::initializer_list<uint16_t> values) {
  Entry e{tag, kShort, values.size(), {}};
  for (uint16_t v : values) put(e.data, v);
  return e;
}

Entry long_value(uint16_t tag, uint64_t value) {
  Entry e{tag, value <= UINT32_MAX ? kLong : kLong8, 1, {}};
  if (e.type == kLong) put(e.data, static_cast<uint32_t>(value));
  else put(e.data, value);
  return e;
}

Entry long8s(uint16_t tag, const std::vector<uint64_t>& values) {
  Entry e{tag, kLong8, values.size(), {}};
  e.data.reserve(values.size() * 8);
  for (uint64_t v : values) put(e.data, v);
  return e;
}

Entry ascii(uint16_t tag, const std::string& text) {
  Entry e{tag, kAscii, text.size() + 1, {text.begin(), text.end()}};
  e.data.push_back(0);
  return e;
}

// A resolution in pixels per centimetre as a rational of a fixed denominator (1/1000 pixel precision).
Entry rational(uint16_t tag, double value) {
  Entry e{tag, kRational, 1, {}};
  const double scaled = std::round(value * 1000.0);
  put(e.data, static_cast<uint32_t>(std::clamp(scaled, 1.0, static_cast<double>(UINT32_MAX))));
  put(e.data, static_cast<uint32_t>(1000));
  return e;
}

Entry undefined(uint16_t tag, const std::vector<uint8_t>& bytes) { return Entry{tag, kUndefined, bytes.size(), bytes}; }

std::vector<Entry> entries_of(const LevelSpec& level, const std::vector<uint64_t>& offsets,
                              const std::vector<uint64_t>& counts, const std::vector<uint64_t>& sub_ifds) {
  std::vector<Entry> e;
  e.push_back(long_value(254, level.subfile_type));  // NewSubfileType
  e.push_back(long_value(256, static_cast<uint64_t>(level.width)));
  e.push_back(long_value(257, static_cast<uint64_t>(level.height)));
  Entry bits{258, kShort, level.samples, {}};  // BitsPerSample
  for (int i = 0; i < level.samples; ++i) put(bits.data, level.bits);
  e.push_back(std::move(bits));
  e.push_back(shorts(259, {level.compression}));
  e.push_back(shorts(262, {level.photometric}));
  if (!level.description.empty()) e.push_back(ascii(270, level.description));
  e.push_back(shorts(277, {level.samples}));
  if (level.mpp) {  // pixels per centimetre
    e.push_back(rational(282, 1e4 / level.mpp->first));
    e.push_back(rational(283, 1e4 / level.mpp->second));
  }
  e.push_back(shorts(284, {1}));  // PlanarConfiguration: interleaved
  if (level.mpp) e.push_back(shorts(296, {3}));  // ResolutionUnit: centimetre
  e.push_back(ascii(305, std::string("tilewise")));
  if (level.stripped) {  // StripOffsets, RowsPerStrip, StripByteCounts: one strip
    e.push_back(long8s(273, offsets));
    e.push_back(long_value(278, static_cast<uint64_t>(level.height)));
    e.push_back(long8s(279, counts));
  } else {  // TileWidth, TileLength, TileOffsets, TileByteCounts
    e.push_back(long_value(322, static_cast<uint64_t>(level.tile)));
    e.push_back(long_value(323, static_cast<uint64_t>(level.tile)));
    e.push_back(long8s(324, offsets));
    e.push_back(long8s(325, counts));
  }
  if (!sub_ifds.empty()) e.push_back(long8s(330, sub_ifds));  // SubIFDs
  if (level.sample_format != 1) {
    Entry format{339, kShort, level.samples, {}};  // SampleFormat
    for (int i = 0; i < level.samples; ++i) put(format.data, level.sample_format);
    e.push_back(std::move(format));
  }
  if (level.photometric == 6) {  // YCbCrSubSampling of the JPEG tiles
    e.push_back(shorts(530, {level.ycbcr_subsampling, level.ycbcr_subsampling}));
  }
  if (!level.icc_profile.empty()) e.push_back(undefined(34675, level.icc_profile));
  std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) { return a.tag < b.tag; });
  return e;
}


}  // namespace

Result<TiledTiffWriter> TiledTiffWriter::create(const std::string& path) {
  const std::string temp = partial_name(path);
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (!file) return io_error(path + ": cannot create " + temp + ": " + std::strerror(errno));
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  TiledTiffWriter writer(file, path, temp);
  // BigTIFF, little-endian; the first directory's offset is filled in by finish()
  std::vector<uint8_t> header{'I', 'I', 43, 0, 8, 0, 0, 0};
  put(header, uint64_t{0});
  TW_RETURN_IF_ERROR(writer.append(header));
  return writer;
}

TiledTiffWriter::TiledTiffWriter(TiledTiffWriter&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)),
      path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      end_(other.end_),
      levels_(std::move(other.levels_)),
      misuse_(std::move(other.misuse_)),
      chain_(std::move(other.chain_)),
      finished_(other.finished_) {}

TiledTiffWriter::~TiledTiffWriter() {
  if (file_) std::fclose(file_);
  if (!finished_ && !temp_.empty()) std::remove(temp_.c_str());
}

Status TiledTiffWriter::fail(const std::string& what) const {
  return io_error(path_ + ": " + what + " (" + std::strerror(errno) + ")");
}

Status TiledTiffWriter::append(std::span<const uint8_t> bytes) {
  if (!file_) return internal_error(path_ + ": the writer is closed");
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return fail("write of " + std::to_string(bytes.size()) + " bytes failed");
  }
  end_ += bytes.size();
  return Status();
}

int TiledTiffWriter::add_level(LevelSpec level) {
  if (level.parent >= static_cast<int>(levels_.size()) ||
      (level.parent >= 0 && levels_[static_cast<size_t>(level.parent)].desc.parent >= 0)) {
    misuse_ = "directory " + std::to_string(levels_.size()) + " names a SubIFD parent that is not an earlier directory of the main chain";
  }
  if (level.parent < 0) chain_.push_back(static_cast<int>(levels_.size()));
  Level l{std::move(level), {}, {}};
  const auto n = static_cast<size_t>(l.desc.tiles_across() * l.desc.tiles_down());
  l.offsets.assign(n, 0);
  l.counts.assign(n, 0);
  levels_.push_back(std::move(l));
  return static_cast<int>(levels_.size()) - 1;
}

Status TiledTiffWriter::write_tile(int level, int64_t index, std::span<const uint8_t> bytes) {
  if (level < 0 || static_cast<size_t>(level) >= levels_.size() || index < 0 ||
      static_cast<size_t>(index) >= levels_[static_cast<size_t>(level)].offsets.size() || bytes.empty()) {
    return internal_error(path_ + ": tile " + std::to_string(index) + " of level " + std::to_string(level) +
                          " is outside the declared levels or empty");
  }
  Level& l = levels_[static_cast<size_t>(level)];
  if (l.counts[static_cast<size_t>(index)] != 0) {
    return internal_error(path_ + ": tile " + std::to_string(index) + " of level " + std::to_string(level) + " written twice");
  }
  l.offsets[static_cast<size_t>(index)] = end_;
  l.counts[static_cast<size_t>(index)] = bytes.size();
  return append(bytes);
}

Result<uint64_t> TiledTiffWriter::write_directory(size_t i, const std::vector<uint64_t>& sub_ifds) {
  const Level& l = levels_[i];
  for (size_t t = 0; t < l.counts.size(); ++t) {
    if (l.counts[t] == 0) {
      return internal_error(path_ + ": tile " + std::to_string(t) + " of level " + std::to_string(i) + " was never written");
    }
  }
  std::vector<Entry> entries = entries_of(l.desc, l.offsets, l.counts, sub_ifds);
  // Values that do not fit in an entry first, each at an even offset
  std::vector<uint64_t> at(entries.size(), 0);
  for (size_t k = 0; k < entries.size(); ++k) {
    if (entries[k].data.size() <= 8) continue;
    if (end_ % 2) TW_RETURN_IF_ERROR(append(std::vector<uint8_t>{0}));
    at[k] = end_;
    TW_RETURN_IF_ERROR(append(entries[k].data));
  }
  if (end_ % 2) TW_RETURN_IF_ERROR(append(std::vector<uint8_t>{0}));
  const uint64_t ifd = end_;
  std::vector<uint8_t> d;
  put(d, static_cast<uint64_t>(entries.size()));
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    put(d, e.tag);
    put(d, e.type);
    put(d, e.count);
    if (e.data.size() <= 8) {
      std::vector<uint8_t> inline_value = e.data;
      inline_value.resize(8, 0);
      d.insert(d.end(), inline_value.begin(), inline_value.end());
    } else {
      put(d, at[k]);
    }
  }
  put(d, uint64_t{0});  // the next directory: linked by the caller when there is one
  TW_RETURN_IF_ERROR(append(d));
  return ifd;
}

void TiledTiffWriter::place_after(int directory, int anchor) {
  const auto at = std::find(chain_.begin(), chain_.end(), directory);
  if (at == chain_.end() || std::find(chain_.begin(), chain_.end(), anchor) == chain_.end() || directory == anchor) {
    misuse_ = "directory " + std::to_string(directory) + " cannot be placed after directory " + std::to_string(anchor);
    return;
  }
  chain_.erase(at);
  chain_.insert(std::find(chain_.begin(), chain_.end(), anchor) + 1, directory);
}

Status TiledTiffWriter::write_directories() {
  uint64_t previous_next = 8;  // where the offset of the next directory goes: the header's, then each IFD's
  for (const int d : chain_) {
    const auto i = static_cast<size_t>(d);
    // The directory's SubIFDs first (each ends its own chain), then the directory naming them
    std::vector<uint64_t> subs;
    for (size_t j = i + 1; j < levels_.size(); ++j) {
      if (levels_[j].desc.parent != static_cast<int>(i)) continue;
      TW_ASSIGN_OR_RETURN(const uint64_t sub, write_directory(j, {}));
      subs.push_back(sub);
    }
    TW_ASSIGN_OR_RETURN(const uint64_t ifd, write_directory(i, subs));
    // Link the directory from the one before (or the header)
    std::vector<uint8_t> link;
    put(link, ifd);
    if (std::fflush(file_) != 0 || ::fseeko(file_, static_cast<off_t>(previous_next), SEEK_SET) != 0 ||
        std::fwrite(link.data(), 1, link.size(), file_) != link.size() || ::fseeko(file_, 0, SEEK_END) != 0) {
      return fail("cannot link directory " + std::to_string(i));
    }
    previous_next = end_ - 8;
  }
  return Status();
}

Status TiledTiffWriter::finish() {
  if (levels_.empty()) return internal_error(path_ + ": no level to write");
  if (!misuse_.empty()) return internal_error(path_ + ": " + misuse_);
  TW_RETURN_IF_ERROR(write_directories());
  std::FILE* file = std::exchange(file_, nullptr);
  // No fsync: the rename guarantees that a failed or killed conversion never leaves a complete-looking
  // output; durability across a power loss is the file system's (bench/RESULTS.md, "2 cores: writing
  // slides (convert)": an fsync's cost).
  if (std::fflush(file) != 0) {
    std::fclose(file);
    return fail("cannot flush");
  }
  if (std::fclose(file) != 0) return fail("cannot close");
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) return fail("cannot rename " + temp_ + " to the output");
  finished_ = true;
  return Status();
}

}  // namespace tilewise::write
