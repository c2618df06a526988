#include "io/http_source.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <mutex>
#include <semaphore>
#include <thread>
#include <vector>

#include "io/disk_cache.h"
#include "util/checked_math.h"
#include "util/fork_safe.h"
#include "util/settings.h"

namespace tilewise::io {

namespace {

constexpr int kAttempts = 5;                        // one request and four retries, 50 ms to 400 ms apart
constexpr size_t kParallel = 8;                     // requests in flight for one prefetch
// Requests in flight for one source, over all its readers: every one beyond the handle pool's 32 would open
// a connection and close it afterwards (bench/RESULTS.md, "Requests in flight per remote source").
constexpr ptrdiff_t kConnections = 16;
constexpr uint64_t kMaxRequestBytes = 16ull << 20;  // coalesced ranges stop growing here

void global_init() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  (void)done;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// One response: its status, the headers we use, and the body, bounded by what was asked for (a server that
// ignores the range would otherwise stream the whole object into memory).
struct Response {
  long status = 0;
  std::string etag, last_modified, content_range, content_type;
  std::vector<uint8_t> body;
  size_t limit = 0;
  bool over_limit = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<Response*>(user);
  const size_t n = size * count;
  if (r->body.size() + n > r->limit) {
    r->over_limit = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  r->body.insert(r->body.end(), data, data + n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<Response*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect): forget the previous one's headers
    r->etag.clear(), r->last_modified.clear(), r->content_range.clear(), r->content_type.clear();
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  const std::string key = lower(line.substr(0, colon));
  const std::string value = trim(line.substr(colon + 1));
  if (key == "etag") r->etag = value;
  if (key == "last-modified") r->last_modified = value;
  if (key == "content-range") r->content_range = value;
  if (key == "content-type") r->content_type = value;
  return size * count;
}

// Performs the request set up on `h` with `headers`, signals off, a connection timeout and a stall limit
// (under 1 byte/s for `stall_s` seconds), the body into `r` (bounded by r.limit).
CURLcode perform_with(CURL* h, curl_slist* headers, long stall_s, Response& r) {
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  return rc;
}

// Sets up and performs one GET (`range` empty: the whole document); the response's status, headers and body
// go to `r`.
CURLcode perform(CURL* h, const std::string& url, const std::string& range, curl_slist* headers, Response& r) {
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  if (!range.empty()) curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
  return perform_with(h, headers, 30, r);
}

// Whether a failed transfer (no HTTP status to judge) is worth another attempt: a connection refused, reset
// or timed out may succeed next time. A host name that does not resolve and a TLS handshake that fails (TLS
// to a plain HTTP port, a certificate refused) fail the same way again, so they are not retried.
bool transient(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR ||
         rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING || rc == CURLE_PARTIAL_FILE;
}

// Easy handles kept between requests, so connections (and TLS sessions) are reused. A forked child must not
// use its parent's connections (the sockets are shared): handles of an earlier fork generation are dropped.
class HandlePool {
 public:
  ~HandlePool() {
    if (generation_ != internal::fork_generation()) return;  // the parent's handles: leaked in a child
    for (CURL* h : free_) curl_easy_cleanup(h);
  }
  CURL* get() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation_ != internal::fork_generation()) free_.clear(), generation_ = internal::fork_generation();
    if (free_.empty()) return curl_easy_init();
    CURL* h = free_.back();
    free_.pop_back();
    curl_easy_reset(h);  // options go; live connections stay
    return h;
  }
  void put(CURL* h) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation_ == internal::fork_generation() && free_.size() < 32) {
      free_.push_back(h);
    } else {
      curl_easy_cleanup(h);
    }
  }

 private:
  std::mutex mutex_;
  std::vector<CURL*> free_;
  uint64_t generation_ = internal::fork_generation();
};

class HttpSource final : public Source {
 public:
  HttpSource(std::string url, std::string name, RequestSigner signer)
      : url_(std::move(url)), name_(std::move(name)), signer_(std::move(signer)) {}

  // The first block: the object's size and version, and the bytes a format's header and first directory
  // need, in one round trip.
  Status open() {
    Response r;
    TW_RETURN_IF_ERROR(request(0, internal::settings().http_block_bytes, /*check_version=*/false, r));
    // If-Match compares strongly: a weak ETag (W/"...") would fail every read, so such objects are checked by
    // Last-Modified instead.
    etag_ = r.etag.rfind("W/", 0) == 0 ? std::string() : r.etag;
    last_modified_ = r.last_modified;
    // "bytes 0-0/12345" (or "bytes */0" for an empty object, answered 416)
    const size_t slash = r.content_range.rfind('/');
    if (slash == std::string::npos || r.content_range.compare(slash + 1, std::string::npos, "*") == 0) {
      return io_error(name_ + ": the server did not say the object's size (Content-Range: " + r.content_range + ")");
    }
    try {
      size_ = std::stoull(r.content_range.substr(slash + 1));
    } catch (...) {
      return io_error(name_ + ": unreadable Content-Range: " + r.content_range);
    }
    disk_ = DiskCache::open(name_, size_, etag_.empty() ? last_modified_ : etag_);
    if (!r.body.empty() && r.body.size() <= size_) {
      if (disk_) disk_->write(r.body, 0);
      std::lock_guard<std::mutex> lock(mutex_);
      insert(0, std::make_shared<const std::vector<uint8_t>>(std::move(r.body)));
    }
    return Status();
  }

  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    if (out.empty()) return Status();
    if (!internal::range_inside(offset, out.size(), size_)) {
      return corrupt("read of " + std::to_string(out.size()) + " bytes at offset " + std::to_string(offset) +
                     " is past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    if (copy_cached(out, offset)) return Status();
    if (disk_ && disk_->read(out, offset)) return Status();
    // A read smaller than a block (directory entries, tags) fetches the aligned block around it, so that
    // opening a slide costs few requests; a larger one fetches exactly its bytes. (A region's tiles are
    // fetched exactly beforehand, through prefetch.)
    uint64_t from = offset, to = offset + out.size();
    const uint64_t block = internal::settings().http_block_bytes;
    if (out.size() < block) {
      from = offset / block * block;
      to = std::min(size_, std::max(to, from + block));
    }
    ByteRange ask{from, to - from};
    if (disk_) ask = disk_->pages_around(ask);  // whole pages, which the disk cache keeps
    TW_ASSIGN_OR_RETURN(Piece piece, fetch({offset, out.size()}, ask));
    std::copy_n(piece.bytes->begin() + static_cast<ptrdiff_t>(offset - piece.start), out.size(), out.begin());
    return Status();
  }

  // Fetches the ranges not in the cache: ranges closer than TILEWISE_HTTP_COALESCE_BYTES become one
  // request, and up to kParallel requests are in flight at once. Failures are left for pread to report.
  void prefetch(std::span<const ByteRange> ranges) const override {
    std::vector<ByteRange> missing;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const ByteRange& r : ranges) {
        if (r.length && internal::range_inside(r.offset, r.length, size_) && !find(r.offset, r.length) &&
            !flight_over(r.offset, r.length)) {
          missing.push_back(r);
        }
      }
    }
    if (disk_) std::erase_if(missing, [&](const ByteRange& r) { return disk_->has(r); });  // outside the lock
    if (missing.empty()) return;
    std::sort(missing.begin(), missing.end(),
              [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
    const uint64_t gap = internal::settings().http_coalesce_bytes;
    std::vector<ByteRange> merged{missing[0]};
    std::vector<int> members{1};  // the ranges each request holds: reads the extent is kept for
    for (size_t i = 1; i < missing.size(); ++i) {
      ByteRange& last = merged.back();
      const uint64_t end = last.offset + last.length;
      if (missing[i].offset <= end + gap && missing[i].offset + missing[i].length - last.offset <= kMaxRequestBytes) {
        last.length = std::max(end, missing[i].offset + missing[i].length) - last.offset;
        ++members.back();
      } else {
        merged.push_back(missing[i]);
        members.push_back(1);
      }
    }
    auto get = [&](size_t i) {
      (void)fetch(merged[i], disk_ ? disk_->pages_around(merged[i]) : merged[i], members[i]);
    };
    if (merged.size() == 1) {
      get(0);
      return;
    }
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next.fetch_add(1)) < merged.size();) get(i);
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < std::min<size_t>(kParallel, merged.size()); ++t) threads.emplace_back(worker);
    worker();
    for (std::thread& t : threads) t.join();
  }

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }
  uint64_t cache_bytes() const override { return internal::settings().http_cache_bytes; }

 private:
  // One range request, retried on transient failures; the body holds exactly `length` bytes on success.
  Status request(uint64_t offset, uint64_t length, bool check_version, Response& r) const {
    const std::string range = std::to_string(offset) + "-" + std::to_string(offset + length - 1);
    std::string last_error;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50 << (attempt - 1)));
      r = Response{};
      r.limit = length;
      CURL* h = handles_.get();
      if (h == nullptr) return io_error(name_ + ": cannot create an HTTP handle");
      curl_slist* headers = nullptr;
      if (check_version && !etag_.empty()) headers = curl_slist_append(headers, ("If-Match: " + etag_).c_str());
      if (check_version && etag_.empty() && !last_modified_.empty()) {
        headers = curl_slist_append(headers, ("If-Unmodified-Since: " + last_modified_).c_str());
      }
      if (signer_) {  // signed per attempt: signatures carry the time
        for (const std::string& header : signer_("bytes=" + range))
          headers = curl_slist_append(headers, header.c_str());
      }
      connections_.acquire();
      const CURLcode rc = perform(h, url_, range, headers, r);
      connections_.release();
      curl_slist_free_all(headers);
      handles_.put(h);
      const std::string where = name_ + ": bytes " + range;
      if (r.status == 200 && rc == CURLE_OK && !check_version && offset == 0 && r.body.empty()) {
        r.content_range = "bytes 0-0/0";  // an empty object: nginx answers a range of it with 200
        return Status();
      }
      if (r.status == 200) {
        return io_error(name_ + ": the server does not answer range requests (HTTP 200 with the whole object)");
      }
      // An error status is judged by its status, whatever became of its body (cut off at `limit`).
      const bool answered = r.status >= 300 && (rc == CURLE_OK || rc == CURLE_WRITE_ERROR);
      if (rc != CURLE_OK && !answered) {
        last_error = where + ": " + curl_easy_strerror(rc);
        if (transient(rc)) continue;
        return io_error(last_error);
      }
      if (r.status == 206) {
        if (r.body.size() == length) return Status();
        // The opening request asks for a block of an object of unknown size: a smaller object's whole body.
        const std::string whole = "/" + std::to_string(r.body.size());
        if (!check_version && offset == 0 && r.body.size() < length && r.content_range.size() >= whole.size() &&
            r.content_range.compare(r.content_range.size() - whole.size(), whole.size(), whole) == 0) {
          return Status();
        }
        last_error = where + ": the server sent " + std::to_string(r.body.size()) + " bytes";  // truncated: retry
        continue;
      }
      if (r.status == 416 && !check_version && r.content_range == "bytes */0") {  // an empty object
        r.content_range = "bytes 0-0/0";
        return Status();
      }
      if (r.status == 404 || r.status == 410)
        return not_found(name_ + ": not found (HTTP " + std::to_string(r.status) + ")");
      if (r.status == 401 || r.status == 403) {
        return io_error(name_ + ": access denied (HTTP " + std::to_string(r.status) + ")");
      }
      if (r.status == 412) {
        return io_error(name_ + ": the object changed on the server since the slide was opened (" +
                        (etag_.empty() ? "Last-Modified " + last_modified_ : "ETag " + etag_) + "); reopen it");
      }
      last_error = where + ": HTTP " + std::to_string(r.status);
      if (r.status >= 500 || r.status == 429 || r.status == 408) continue;
      return io_error(last_error);
    }
    return io_error(last_error + " (after " + std::to_string(kAttempts) + " attempts)");
  }

  // Bytes of the object from `start` on.
  struct Piece {
    uint64_t start = 0;
    std::shared_ptr<const std::vector<uint8_t>> bytes;
  };

  // A request in flight, which readers wanting bytes inside it wait for instead of asking again (several
  // loader threads reading one tile, a prefetch and the read that follows it).
  struct Flight {
    uint64_t start = 0, end = 0;
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    Status status;
    std::shared_ptr<const std::vector<uint8_t>> bytes;
  };

  // The bytes `want` names: from the cache, from a request in flight that holds them, or from a new request
  // for `ask` (which holds `want`), kept in the cache (`unread`: reads of it to come, which keep it there).
  Result<Piece> fetch(ByteRange want, ByteRange ask, int unread = 0) const {
    std::shared_ptr<Flight> theirs, mine;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (const Extent* e = find(want.offset, want.length)) return Piece{e->start, e->bytes};  // fetched meanwhile
      theirs = flight_over(want.offset, want.length);
      if (!theirs) {
        mine = std::make_shared<Flight>();
        mine->start = ask.offset, mine->end = ask.offset + ask.length;
        flights_.push_back(mine);
      }
    }
    if (theirs) {
      std::unique_lock<std::mutex> lock(theirs->mutex);
      theirs->done_cv.wait(lock, [&] { return theirs->done; });
      if (!theirs->status.ok()) return theirs->status;
      return Piece{theirs->start, theirs->bytes};
    }
    Response r;
    const Status status = request(ask.offset, ask.length, /*check_version=*/true, r);
    std::shared_ptr<const std::vector<uint8_t>> data;
    if (status.ok()) data = std::make_shared<const std::vector<uint8_t>>(std::move(r.body));
    if (data && disk_) disk_->write(*data, ask.offset);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (data) insert(ask.offset, data, unread);
      std::erase(flights_, mine);
    }
    {
      std::lock_guard<std::mutex> lock(mine->mutex);
      mine->done = true, mine->status = status, mine->bytes = data;
    }
    mine->done_cv.notify_all();
    if (!status.ok()) return status;
    return Piece{ask.offset, std::move(data)};
  }

  // A request in flight whose bytes hold [offset, offset + length); mutex_ held.
  std::shared_ptr<Flight> flight_over(uint64_t offset, uint64_t length) const {
    for (const std::shared_ptr<Flight>& f : flights_) {
      if (f->start <= offset && offset + length <= f->end) return f;
    }
    return nullptr;
  }

  // Copies [offset, offset + out.size()) from a cached extent that holds all of it.
  bool copy_cached(std::span<uint8_t> out, uint64_t offset) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const Extent* e = find(offset, out.size());
    if (!e) return false;
    std::copy_n(e->bytes->begin() + static_cast<ptrdiff_t>(offset - e->start), out.size(), out.begin());
    if (e->unread > 0) --e->unread;
    lru_.splice(lru_.begin(), lru_, e->lru);
    return true;
  }

  struct Extent {
    uint64_t start;
    std::shared_ptr<const std::vector<uint8_t>> bytes;
    std::list<uint64_t>::iterator lru;
    mutable int unread = 0;  // prefetched reads not yet made (mutex_)
  };

  // A cached extent holding [offset, offset + length): the nearest ones starting at or before offset (extents
  // may overlap: a tile fetched alone, then inside a coalesced request).
  const Extent* find(uint64_t offset, uint64_t length) const {
    auto it = extents_.upper_bound(offset);
    for (int k = 0; k < 4 && it != extents_.begin(); ++k) {
      --it;
      if (it->second.start + it->second.bytes->size() >= offset + length) return &it->second;
    }
    return nullptr;
  }

  // Keeps an extent; evicts the least recently used ones past the budget, except extents prefetched and not
  // yet read (the reads they were fetched for are about to come: concurrent prefetches would otherwise
  // evict each other's bytes before use), unless the cache holds twice its budget.
  void insert(uint64_t start, std::shared_ptr<const std::vector<uint8_t>> data, int unread = 0) const {
    auto old = extents_.find(start);
    if (old != extents_.end()) {
      if (old->second.bytes->size() >= data->size()) return;  // another thread fetched as much meanwhile
      bytes_ -= old->second.bytes->size();
      lru_.erase(old->second.lru);
      extents_.erase(old);
    }
    lru_.push_front(start);
    bytes_ += data->size();
    extents_.emplace(start, Extent{start, std::move(data), lru_.begin(), unread});
    const uint64_t budget = internal::settings().http_cache_bytes;
    for (auto it = lru_.end(); bytes_ > budget && it != std::next(lru_.begin());) {
      --it;
      auto victim = extents_.find(*it);
      if (victim->second.unread > 0 && bytes_ <= 2 * budget) continue;
      bytes_ -= victim->second.bytes->size();
      extents_.erase(victim);
      it = lru_.erase(it);
    }
  }


  std::string url_, name_;
  RequestSigner signer_;
  std::string etag_, last_modified_;
  uint64_t size_ = 0;
  std::shared_ptr<const DiskCache> disk_;  // null: no disk cache (io/disk_cache.h)
  mutable HandlePool handles_;
  mutable std::counting_semaphore<kConnections> connections_{kConnections};
  mutable std::mutex mutex_;  // the cache of fetched extents, by start offset, least recently used last
  mutable std::list<uint64_t> lru_;
  mutable std::map<uint64_t, Extent> extents_;
  mutable uint64_t bytes_ = 0;
  mutable std::vector<std::shared_ptr<Flight>> flights_;  // requests in flight (mutex_)
};

}  // namespace

Result<HttpAnswer> http_fetch(const std::string& url, const std::string& name, const std::vector<std::string>& headers,
                              size_t max_bytes) {
  global_init();
  static HandlePool handles;
  std::string last_error;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50 << (attempt - 1)));
    Response r;
    r.limit = max_bytes;
    CURL* h = handles.get();
    if (h == nullptr) return io_error(name + ": cannot create an HTTP handle");
    curl_slist* list = nullptr;
    for (const std::string& header : headers) list = curl_slist_append(list, header.c_str());
    const CURLcode rc = perform(h, url, "", list, r);
    curl_slist_free_all(list);
    handles.put(h);
    if (r.over_limit) return io_error(name + ": the answer is over " + std::to_string(max_bytes) + " bytes");
    if (rc != CURLE_OK) {
      last_error = name + ": " + curl_easy_strerror(rc);
      if (transient(rc)) continue;
      return io_error(last_error);
    }
    if (r.status == 200) return HttpAnswer{std::string(r.body.begin(), r.body.end()), std::move(r.content_type)};
    if (r.status == 404 || r.status == 410) return not_found(name + ": not found (HTTP " + std::to_string(r.status) + ")");
    if (r.status == 401 || r.status == 403) {
      return io_error(name + ": access denied (HTTP " + std::to_string(r.status) + ")");
    }
    last_error = name + ": HTTP " + std::to_string(r.status);
    if (r.status >= 500 || r.status == 429 || r.status == 408) continue;
    return io_error(last_error);
  }
  return io_error(last_error + " (after " + std::to_string(kAttempts) + " attempts)");
}

Result<std::string> http_get(const std::string& url, const std::string& name, const RequestSigner& signer,
                             size_t max_bytes) {
  TW_ASSIGN_OR_RETURN(HttpAnswer answer, http_fetch(url, name, signer ? signer("") : std::vector<std::string>{}, max_bytes));
  return std::move(answer.body);
}

namespace {

// A POST's body read part by part into libcurl's buffer; files are opened when their turn comes.
struct PostBody {
  const std::vector<PostPart>* parts = nullptr;
  size_t part = 0, offset = 0;  // within a bytes part
  std::FILE* file = nullptr;
  std::string error;
  ~PostBody() {
    if (file) std::fclose(file);
  }
};

size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  auto* b = static_cast<PostBody*>(user);
  const size_t room = size * count;
  while (b->part < b->parts->size()) {
    const PostPart& part = (*b->parts)[b->part];
    if (part.file.empty()) {
      const size_t n = std::min(room, part.bytes.size() - b->offset);
      std::memcpy(buffer, part.bytes.data() + b->offset, n);
      b->offset += n;
      if (b->offset == part.bytes.size()) ++b->part, b->offset = 0;
      if (n > 0) return n;
      continue;
    }
    if (!b->file && !(b->file = std::fopen(part.file.c_str(), "rb"))) {
      b->error = part.file + ": cannot open (" + std::strerror(errno) + ")";
      return CURL_READFUNC_ABORT;
    }
    const size_t n = std::fread(buffer, 1, room, b->file);
    if (n > 0) return n;
    if (std::ferror(b->file)) {
      b->error = part.file + ": read failed";
      return CURL_READFUNC_ABORT;
    }
    std::fclose(std::exchange(b->file, nullptr));
    ++b->part;
  }
  return 0;
}

}  // namespace

Result<PostAnswer> http_post(const std::string& url, const std::string& name, const std::vector<std::string>& headers,
                             const std::vector<PostPart>& parts) {
  global_init();
  static HandlePool handles;
  curl_off_t total = 0;
  for (const PostPart& part : parts) {
    if (part.file.empty()) {
      total += static_cast<curl_off_t>(part.bytes.size());
      continue;
    }
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(part.file, ec);
    if (ec) return io_error(part.file + ": cannot read its size (" + ec.message() + ")");
    total += static_cast<curl_off_t>(bytes);
  }
  std::string last_error;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50 << (attempt - 1)));
    Response r;
    r.limit = 1u << 20;
    PostBody body;
    body.parts = &parts;
    CURL* h = handles.get();
    if (h == nullptr) return io_error(name + ": cannot create an HTTP handle");
    curl_slist* list = curl_slist_append(nullptr, "Expect:");  // no 100-continue round trip
    for (const std::string& header : headers) list = curl_slist_append(list, header.c_str());
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, total);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, &body);
    const CURLcode rc = perform_with(h, list, 60, r);  // a server storing a large instance may pause
    curl_slist_free_all(list);
    handles.put(h);
    if (!body.error.empty()) return io_error(name + ": " + body.error);
    if (rc != CURLE_OK && !r.over_limit) {
      last_error = name + ": " + curl_easy_strerror(rc);
      if (transient(rc)) continue;
      return io_error(last_error);
    }
    if (r.status >= 500 || r.status == 429 || r.status == 408) {
      last_error = name + ": HTTP " + std::to_string(r.status);
      continue;
    }
    return PostAnswer{r.status, std::string(r.body.begin(), r.body.end())};
  }
  return io_error(last_error + " (after " + std::to_string(kAttempts) + " attempts)");
}

Result<std::shared_ptr<const Source>> open_http(const std::string& url, std::string name, RequestSigner signer) {
  global_init();
  auto source = std::make_shared<HttpSource>(url, std::move(name), std::move(signer));
  TW_RETURN_IF_ERROR(source->open());
  return std::shared_ptr<const Source>(std::move(source));
}

Result<std::shared_ptr<const Source>> open_http(const std::string& url) { return open_http(url, redact_url(url), {}); }

}  // namespace tilewise::io
