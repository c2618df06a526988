#include <cstring>

#include "io/source.h"
#include "util/checked_math.h"

namespace tilewise::io {
namespace {

class MemorySource final : public Source {
 public:
  MemorySource(std::vector<uint8_t> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}

  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    if (!internal::range_inside(offset, out.size(), bytes_.size())) {
      return corrupt("read of " + std::to_string(out.size()) + " bytes at offset " + std::to_string(offset) +
                     " is past the end of the data (" + std::to_string(bytes_.size()) + " bytes)");
    }
    if (!out.empty()) std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return Status();
  }
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }

 private:
  std::vector<uint8_t> bytes_;
  std::string name_;
};

// Reads through a caller's function (file objects of the Python binding: fsspec files, open files).
class CallbackSource final : public Source {
 public:
  CallbackSource(ReadAt read, uint64_t size, std::string name)
      : read_(std::move(read)), size_(size), name_(std::move(name)) {}

  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    if (!internal::range_inside(offset, out.size(), size_)) {
      return corrupt("read of " + std::to_string(out.size()) + " bytes at offset " + std::to_string(offset) +
                     " is past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    if (out.empty()) return Status();
    return read_(out, offset);
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  ReadAt read_;
  uint64_t size_;
  std::string name_;
};

}  // namespace

std::shared_ptr<const Source> callback_source(ReadAt read, uint64_t size, std::string name) {
  return std::make_shared<CallbackSource>(std::move(read), size, std::move(name));
}

std::shared_ptr<const Source> memory_source(std::vector<uint8_t> bytes, std::string name) {
  return std::make_shared<MemorySource>(std::move(bytes), std::move(name));
}

}  // namespace tilewise::io
