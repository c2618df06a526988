#include "io/http_source.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "util/checked_math.h"
#include "util/fork_safe.h"
#include "util/settings.h"

namespace tilewise::io {

namespace {

constexpr int kAttempts = 5;  // one request and four retries, 50 ms to 400 ms apart

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
  std::string etag, last_modified, content_range;
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
    r->etag.clear(), r->last_modified.clear(), r->content_range.clear();
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  const std::string key = lower(line.substr(0, colon));
  const std::string value = trim(line.substr(colon + 1));
  if (key == "etag") r->etag = value;
  if (key == "last-modified") r->last_modified = value;
  if (key == "content-range") r->content_range = value;
  return size * count;
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

  // The first byte: the object's size and version.
  Status open() {
    Response r;
    TW_RETURN_IF_ERROR(request(0, 1, /*check_version=*/false, r));
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
    return Status();
  }

  Status pread(std::span<uint8_t> out, uint64_t offset) const override {
    if (out.empty()) return Status();
    if (!internal::range_inside(offset, out.size(), size_)) {
      return corrupt("read of " + std::to_string(out.size()) + " bytes at offset " + std::to_string(offset) +
                     " is past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    const uint64_t block = internal::settings().http_block_bytes;
    const uint64_t first = offset / block, last = (offset + out.size() - 1) / block;
    std::vector<std::shared_ptr<const std::vector<uint8_t>>> blocks(last - first + 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (uint64_t b = first; b <= last; ++b) blocks[b - first] = lookup(b);
    }
    // Each run of missing blocks is one request.
    for (uint64_t b = first; b <= last;) {
      if (blocks[b - first]) {
        ++b;
        continue;
      }
      uint64_t end = b;
      while (end + 1 <= last && !blocks[end + 1 - first]) ++end;
      const uint64_t from = b * block, to = std::min(size_, (end + 1) * block);
      Response r;
      TW_RETURN_IF_ERROR(request(from, to - from, /*check_version=*/true, r));
      std::lock_guard<std::mutex> lock(mutex_);
      for (uint64_t k = b; k <= end; ++k) {
        const uint64_t start = (k - b) * block, stop = std::min<uint64_t>(r.body.size(), start + block);
        auto data = std::make_shared<const std::vector<uint8_t>>(r.body.begin() + static_cast<ptrdiff_t>(start),
                                                                 r.body.begin() + static_cast<ptrdiff_t>(stop));
        insert(k, data);
        blocks[k - first] = std::move(data);
      }
      b = end + 1;
    }
    uint64_t done = 0;
    for (uint64_t b = first; b <= last; ++b) {
      const std::vector<uint8_t>& data = *blocks[b - first];
      const uint64_t begin = b == first ? offset - b * block : 0;
      const uint64_t n = std::min<uint64_t>(data.size() - begin, out.size() - done);
      std::copy_n(data.begin() + static_cast<ptrdiff_t>(begin), n, out.begin() + static_cast<ptrdiff_t>(done));
      done += n;
    }
    return Status();
  }

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return name_; }

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
        for (const std::string& header : signer_("bytes=" + range)) headers = curl_slist_append(headers, header.c_str());
      }
      curl_easy_setopt(h, CURLOPT_URL, url_.c_str());
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
      curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
      curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
      curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
      curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled transfer: under 1 byte/s for 30 s
      curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 30L);
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
      curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
      curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
      curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
      const CURLcode rc = curl_easy_perform(h);
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
      curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
      curl_slist_free_all(headers);
      handles_.put(h);
      const std::string where = name_ + ": bytes " + range;
      if (r.status == 200) {
        return io_error(name_ + ": the server does not answer range requests (HTTP 200 with the whole object)");
      }
      // An error status is judged by its status, whatever became of its body (cut off at `limit`).
      const bool answered = r.status >= 300 && (rc == CURLE_OK || rc == CURLE_WRITE_ERROR);
      if (rc != CURLE_OK && !answered) {
        last_error = where + ": " + curl_easy_strerror(rc);
        const bool transient = rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT ||
                               rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
                               rc == CURLE_PARTIAL_FILE || rc == CURLE_SSL_CONNECT_ERROR ||
                               rc == CURLE_COULDNT_RESOLVE_HOST;
        if (transient) continue;
        return io_error(last_error);
      }
      if (r.status == 206) {
        if (r.body.size() == length) return Status();
        last_error = where + ": the server sent " + std::to_string(r.body.size()) + " bytes";  // truncated: retry
        continue;
      }
      if (r.status == 416 && !check_version && r.content_range == "bytes */0") {  // an empty object
        r.content_range = "bytes 0-0/0";
        return Status();
      }
      if (r.status == 404 || r.status == 410) return not_found(name_ + ": not found (HTTP " + std::to_string(r.status) + ")");
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

  std::shared_ptr<const std::vector<uint8_t>> lookup(uint64_t block) const {
    auto it = blocks_.find(block);
    if (it == blocks_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return it->second.first;
  }

  void insert(uint64_t block, std::shared_ptr<const std::vector<uint8_t>> data) const {
    if (blocks_.count(block)) return;  // another thread fetched it meanwhile
    lru_.push_front(block);
    bytes_ += data->size();
    blocks_.emplace(block, std::make_pair(std::move(data), lru_.begin()));
    while (bytes_ > internal::settings().http_cache_bytes && lru_.size() > 1) {
      auto victim = blocks_.find(lru_.back());
      bytes_ -= victim->second.first->size();
      blocks_.erase(victim);
      lru_.pop_back();
    }
  }

  std::string url_, name_;
  RequestSigner signer_;
  std::string etag_, last_modified_;
  uint64_t size_ = 0;
  mutable HandlePool handles_;
  mutable std::mutex mutex_;  // the block cache
  mutable std::list<uint64_t> lru_;
  mutable std::unordered_map<uint64_t, std::pair<std::shared_ptr<const std::vector<uint8_t>>,
                                                 std::list<uint64_t>::iterator>> blocks_;
  mutable uint64_t bytes_ = 0;
};

}  // namespace

Result<std::shared_ptr<const Source>> open_http(const std::string& url, std::string name, RequestSigner signer) {
  global_init();
  auto source = std::make_shared<HttpSource>(url, std::move(name), std::move(signer));
  TW_RETURN_IF_ERROR(source->open());
  return std::shared_ptr<const Source>(std::move(source));
}

Result<std::shared_ptr<const Source>> open_http(const std::string& url) { return open_http(url, redact_url(url), {}); }

}  // namespace tilewise::io
