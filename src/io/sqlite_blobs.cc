#include "io/sqlite_blobs.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace tilewise::io {

namespace {

// Read-only connections, each used by one thread at a time (SQLITE_OPEN_NOMUTEX), pooled per file. A
// connection opened before a fork belongs to the parent: the child leaves those alone and opens its own.
class ConnectionPool {
 public:
  explicit ConnectionPool(std::string path) : path_(std::move(path)) {}
  ~ConnectionPool() {
    for (auto& [pid, db] : free_) {
      if (pid == getpid()) sqlite3_close(db);
    }
  }
  Result<sqlite3*> lease() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (!free_.empty()) {
        auto [pid, db] = free_.back();
        free_.pop_back();
        if (pid == getpid()) return db;
      }
    }
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      const std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      sqlite3_close(db);
      return io_error(path_ + ": cannot open the database: " + why);
    }
    return db;
  }
  void give_back(sqlite3* db) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.emplace_back(getpid(), db);
  }

 private:
  std::string path_;
  std::mutex mutex_;
  std::vector<std::pair<pid_t, sqlite3*>> free_;
};

class BlobSource final : public Source {
 public:
  BlobSource(std::string path, std::vector<std::pair<std::string, std::string>> columns,
             std::vector<SqliteBlobFile::Segment> segments, std::vector<uint8_t> literals, uint64_t size)
      : name_(std::move(path)),
        columns_(std::move(columns)),
        segments_(std::move(segments)),
        literals_(std::move(literals)),
        size_(size),
        pool_(name_) {}

  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    if (out.empty()) return Status();
    if (offset > size_ || out.size() > size_ - offset) {
      return corrupt(name_ + ": read of " + std::to_string(out.size()) + " bytes at " + std::to_string(offset) +
                     " past the end of the tiles (" + std::to_string(size_) + " bytes)");
    }
    auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                               [](uint64_t o, const SqliteBlobFile::Segment& s) { return o < s.start; });
    sqlite3* db = nullptr;
    Status status;
    size_t done = 0;
    for (--it; done < out.size() && status.ok(); ++it) {
      const uint64_t at = offset + done - it->start;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(it->length - at, out.size() - done));
      if (it->column < 0) {
        std::memcpy(out.data() + done, literals_.data() + it->at + at, n);
      } else {
        if (!db) {
          auto leased = pool_.lease();
          if (!leased.ok()) return leased.status();
          db = *leased;
        }
        status = read_blob(db, *it, out.data() + done, n, static_cast<int>(at));
      }
      done += n;
    }
    if (db) pool_.give_back(db);
    return status;
  }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

 private:
  Status read_blob(sqlite3* db, const SqliteBlobFile::Segment& s, uint8_t* dst, size_t n, int at) const {
    const auto& [table, column] = columns_[static_cast<size_t>(s.column)];
    sqlite3_blob* blob = nullptr;
    int rc = sqlite3_blob_open(db, "main", table.c_str(), column.c_str(), s.at, 0, &blob);
    if (rc == SQLITE_OK) rc = sqlite3_blob_read(blob, dst, static_cast<int>(n), at);
    const std::string why = rc == SQLITE_OK ? "" : sqlite3_errmsg(db);
    sqlite3_blob_close(blob);
    if (rc != SQLITE_OK) {
      return io_error(name_ + ": cannot read row " + std::to_string(s.at) + " of " + table + "." + column + ": " + why);
    }
    return Status();
  }

  std::string name_;
  std::vector<std::pair<std::string, std::string>> columns_;
  std::vector<SqliteBlobFile::Segment> segments_;
  std::vector<uint8_t> literals_;
  uint64_t size_;
  mutable ConnectionPool pool_;
};

}  // namespace

uint32_t SqliteBlobFile::column(const std::string& table, const std::string& column) {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].first == table && columns_[i].second == column) return static_cast<uint32_t>(i);
  }
  columns_.emplace_back(table, column);
  return static_cast<uint32_t>(columns_.size() - 1);
}

uint64_t SqliteBlobFile::add_blob(uint32_t column, int64_t rowid, uint32_t length) {
  const uint64_t start = size_;
  if (length > 0) segments_.push_back({start, length, static_cast<int32_t>(column), rowid});
  size_ += length;
  return start;
}

uint64_t SqliteBlobFile::add_bytes(std::span<const uint8_t> bytes) {
  const uint64_t start = size_;
  if (!bytes.empty()) {
    segments_.push_back({start, static_cast<uint32_t>(bytes.size()), -1, static_cast<int64_t>(literals_.size())});
    literals_.insert(literals_.end(), bytes.begin(), bytes.end());
  }
  size_ += bytes.size();
  return start;
}

std::shared_ptr<const Source> SqliteBlobFile::build() {
  return std::make_shared<BlobSource>(path_, std::move(columns_), std::move(segments_), std::move(literals_), size_);
}

}  // namespace tilewise::io
