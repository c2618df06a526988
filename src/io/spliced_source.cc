#include "io/spliced_source.h"

#include <algorithm>
#include <cstring>

namespace tilewise::io {

namespace {

class Spliced final : public Source {
 public:
  Spliced(std::shared_ptr<const Source> base, std::vector<SplicedFile::Piece> pieces, std::vector<uint8_t> literals,
          uint64_t size)
      : base_(std::move(base)), pieces_(std::move(pieces)), literals_(std::move(literals)), size_(size) {}

  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    if (out.empty()) return Status();
    if (offset > size_ || out.size() > size_ - offset) {
      return corrupt(base_->name() + ": read of " + std::to_string(out.size()) + " bytes at " + std::to_string(offset) +
                     " past the end of the spliced data (" + std::to_string(size_) + " bytes)");
    }
    auto it = std::upper_bound(pieces_.begin(), pieces_.end(), offset,
                               [](uint64_t o, const SplicedFile::Piece& p) { return o < p.start; });
    size_t done = 0;
    for (--it; done < out.size(); ++it) {
      const uint64_t at = offset + done - it->start;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(it->length - at, out.size() - done));
      if (it->literal) {
        std::memcpy(out.data() + done, literals_.data() + it->at + at, n);
      } else {
        TW_RETURN_IF_ERROR(base_->pread(out.subspan(done, n), it->at + at));
      }
      done += n;
    }
    return Status();
  }
  // Rows inside one piece of the base: the base's own pread_rows (a local file's preadv).
  Status pread_rows(uint8_t* dst, int64_t dst_stride, size_t row_bytes, int32_t rows, uint64_t offset) const override {
    if (rows > 0 && offset < size_) {
      const uint64_t span = static_cast<uint64_t>(rows) * row_bytes;
      auto it = std::upper_bound(pieces_.begin(), pieces_.end(), offset,
                                 [](uint64_t o, const SplicedFile::Piece& p) { return o < p.start; });
      --it;
      if (!it->literal && span <= it->length - (offset - it->start)) {
        return base_->pread_rows(dst, dst_stride, row_bytes, rows, it->at + (offset - it->start));
      }
    }
    return Source::pread_rows(dst, dst_stride, row_bytes, rows, offset);
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return base_->name(); }
  uint64_t file_offset(uint64_t offset) const override {
    // Within a base piece: its base offset; within bytes of the splice's own: where the next base piece
    // starts (the data they describe).
    auto it = std::upper_bound(pieces_.begin(), pieces_.end(), offset,
                               [](uint64_t o, const SplicedFile::Piece& p) { return o < p.start; });
    if (it == pieces_.begin()) return offset;
    for (--it; it != pieces_.end(); ++it) {
      if (!it->literal) return it->at + (offset > it->start ? offset - it->start : 0);
    }
    return offset;
  }
  bool is_local_file() const override { return base_->is_local_file(); }
  void prefetch(std::span<const ByteRange> ranges) const override {
    // The base ranges behind the spliced ones (literal bytes need no fetching).
    std::vector<ByteRange> base;
    for (const ByteRange& r : ranges) {
      auto it = std::upper_bound(pieces_.begin(), pieces_.end(), r.offset,
                                 [](uint64_t o, const SplicedFile::Piece& p) { return o < p.start; });
      for (--it; it != pieces_.end() && it->start < r.offset + r.length; ++it) {
        if (!it->literal) base.push_back({it->at, it->length});
      }
    }
    if (!base.empty()) base_->prefetch(base);
  }

 private:
  std::shared_ptr<const Source> base_;
  std::vector<SplicedFile::Piece> pieces_;
  std::vector<uint8_t> literals_;
  uint64_t size_;
};

}  // namespace

uint64_t SplicedFile::add_range(uint64_t offset, uint64_t length) {
  const uint64_t start = size_;
  if (length) pieces_.push_back({start, length, false, offset});
  size_ += length;
  return start;
}

uint64_t SplicedFile::add_bytes(std::span<const uint8_t> bytes) {
  const uint64_t start = size_;
  if (!bytes.empty()) {
    pieces_.push_back({start, bytes.size(), true, literals_.size()});
    literals_.insert(literals_.end(), bytes.begin(), bytes.end());
  }
  size_ += bytes.size();
  return start;
}

std::shared_ptr<const Source> SplicedFile::build() {
  return std::make_shared<Spliced>(std::move(base_), std::move(pieces_), std::move(literals_), size_);
}

}  // namespace tilewise::io
