// Blobs of an SQLite database as one positional source (Sakura SVSlide keeps its tiles as rows of a table):
// a virtual file of segments laid end to end, each a blob (a row of a table's column) or a few literal
// bytes the format adds (lengths), so that a slide's units are byte ranges like any other format's and the
// planner, caches and loaders need nothing new. Reads open the blobs they touch (sqlite3_blob_open, no SQL)
// on read-only connections leased from a pool: one connection is used by one thread at a time, no lock is
// held while a blob is read, and a forked child opens its own.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/source.h"

namespace tilewise::io {

class SqliteBlobFile {
 public:
  explicit SqliteBlobFile(std::string db_path) : path_(std::move(db_path)) {}
  // A (table, column) that blobs are read from; returns its index for add_blob.
  uint32_t column(const std::string& table, const std::string& column);
  // Appends a blob of `length` bytes (row `rowid`); returns its offset in the virtual file.
  uint64_t add_blob(uint32_t column, int64_t rowid, uint32_t length);
  // Appends literal bytes; returns their offset.
  uint64_t add_bytes(std::span<const uint8_t> bytes);
  uint64_t size() const { return size_; }
  std::shared_ptr<const Source> build();

  struct Segment {
    uint64_t start = 0;
    uint32_t length = 0;
    int32_t column = -1;  // -1: literal bytes at `at` in the literal buffer
    int64_t at = 0;       // the row id, or the literal's offset
  };

 private:
  std::string path_;
  std::vector<std::pair<std::string, std::string>> columns_;
  std::vector<Segment> segments_;
  std::vector<uint8_t> literals_;
  uint64_t size_ = 0;
};

}  // namespace tilewise::io
