#include "io/dicomweb.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <semaphore>
#include <thread>

#include "io/disk_cache.h"
#include "io/multipart.h"
#include "util/settings.h"

namespace tilewise::io {

namespace {

constexpr ptrdiff_t kConnections = 16;         // requests in flight per series, as for range reads
constexpr size_t kParallel = 8;                // requests of one prefetch in flight at once
// Requests of one instance in flight beyond which prefetched frames queue and merge (bench/RESULTS.md,
// "2 cores: DICOMweb").
constexpr int kRequestsPerInstance = 2;
// Frames per request: a server looks into the instance's file for each request (Orthanc 1.10 parses it), so
// fewer, larger requests serve more patches (bench/RESULTS.md, "2 cores: DICOMweb"); 64 keeps the URL short.
constexpr size_t kFramesPerRequest = 64;
constexpr size_t kMaxAnswerBytes = 1ull << 30;
constexpr size_t kMaxMetadataBytes = 512ull << 20;
constexpr int kBodyAttempts = 3;               // a multipart body cut short is asked for again
constexpr size_t kQidoPage = 1000;

constexpr const char* kAnyStored = "multipart/related; type=\"application/octet-stream\"; transfer-syntax=*";
constexpr const char* kExplicitLittle = "1.2.840.10008.1.2.1";

// The transfer syntax a frame's media type implies where no transfer-syntax parameter names one (PS3.18
// Table 8.7.3-5's defaults).
std::string default_syntax(const std::string& media) {
  if (media == "image/jpeg") return "1.2.840.10008.1.2.4.50";
  if (media == "image/jls") return "1.2.840.10008.1.2.4.80";
  if (media == "image/jp2") return "1.2.840.10008.1.2.4.90";
  if (media == "application/octet-stream") return kExplicitLittle;
  return "";
}

std::string media_of(const std::string& content_type) {
  std::string m = content_type.substr(0, content_type.find(';'));
  while (!m.empty() && m.back() == ' ') m.pop_back();
  for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return m;
}

// A part's transfer syntax: its own Content-Type's parameter, else the answer's (as a parameter or inside its
// `type`, as Orthanc writes it), else its media type's default.
std::string syntax_of(const MultipartPart& part, const std::string& answer_type) {
  std::string ts = header_parameter(part.content_type, "transfer-syntax");
  if (ts.empty()) ts = header_parameter(answer_type, "transfer-syntax");
  if (ts.empty()) ts = header_parameter(header_parameter(answer_type, "type"), "transfer-syntax");
  if (ts.empty()) ts = default_syntax(media_of(part.content_type.empty() ? header_parameter(answer_type, "type") : part.content_type));
  return ts;
}

std::string media_for(const std::string& syntax) {
  if (syntax == "1.2.840.10008.1.2.4.50") return "image/jpeg";
  if (syntax == "1.2.840.10008.1.2.4.80" || syntax == "1.2.840.10008.1.2.4.81") return "image/jls";
  if (syntax == "1.2.840.10008.1.2.4.90" || syntax == "1.2.840.10008.1.2.4.91") return "image/jp2";
  return "application/octet-stream";
}

std::string accept_for(const std::string& syntax) {
  return "multipart/related; type=\"" + media_for(syntax) + "\"; transfer-syntax=" + syntax;
}

std::string join(const std::vector<uint64_t>& numbers) {
  std::string out;
  for (uint64_t n : numbers) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out;
}

// The requests `numbers` (sorted) is fetched in: kFramesPerRequest frames each (up to kParallel of them in
// flight at once).
std::vector<std::vector<uint64_t>> chunks_of(const std::vector<uint64_t>& numbers) {
  std::vector<std::vector<uint64_t>> out;
  for (size_t at = 0; at < numbers.size(); at += kFramesPerRequest) {
    out.emplace_back(numbers.begin() + static_cast<ptrdiff_t>(at),
                     numbers.begin() + static_cast<ptrdiff_t>(std::min(numbers.size(), at + kFramesPerRequest)));
  }
  return out;
}

// Runs f(i) for i in [0, n) on up to `threads` threads (this one included).
template <typename F>
void run_parallel(size_t n, size_t threads, F&& f) {
  if (n <= 1) {
    if (n == 1) f(0);
    return;
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(threads, n); ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace

// What the series and its instances share: where the server is, the credentials, the connections and the
// fetched frames.
struct DicomWebClient {
  std::string series_url;  // as given (credentials in it kept for requests), without a trailing '/'
  std::string name;        // as errors show it
  std::vector<std::string> headers;
  std::counting_semaphore<kConnections> connections{kConnections};

  using Key = std::pair<const DicomWebFrames*, uint64_t>;
  struct Entry {
    std::shared_ptr<const std::vector<uint8_t>> bytes;
    std::list<Key>::iterator lru;
    bool unread = false;  // prefetched, not yet read
  };
  std::mutex mutex;
  std::map<Key, Entry> frames;
  std::list<Key> lru;  // most recent first
  uint64_t bytes = 0;

  Result<HttpAnswer> get(const std::string& url, const std::string& what, const std::string& accept, size_t max) {
    std::vector<std::string> h = headers;
    h.push_back("Accept: " + accept);
    connections.acquire();
    Result<HttpAnswer> answer = http_fetch(url, what, h, max);
    connections.release();
    return answer;
  }

  // mutex_ held: the cached frame, marked read and recent; null when absent.
  std::shared_ptr<const std::vector<uint8_t>> find(const Key& key) {
    auto it = frames.find(key);
    if (it == frames.end()) return nullptr;
    it->second.unread = false;
    lru.splice(lru.begin(), lru, it->second.lru);
    return it->second.bytes;
  }

  // mutex held. Keeps a frame; evicts the least recently used past the budget, except frames prefetched and
  // not yet read unless the cache holds twice its budget (as the range reads' cache does).
  void insert(const Key& key, std::shared_ptr<const std::vector<uint8_t>> data, bool unread) {
    if (frames.count(key)) return;
    lru.push_front(key);
    bytes += data->size();
    frames.emplace(key, Entry{std::move(data), lru.begin(), unread});
    const uint64_t budget = internal::settings().http_cache_bytes;
    for (auto it = lru.end(); bytes > budget && it != std::next(lru.begin());) {
      --it;
      auto victim = frames.find(*it);
      if (victim->second.unread && bytes <= 2 * budget) continue;
      bytes -= victim->second.bytes->size();
      frames.erase(victim);
      it = lru.erase(it);
    }
  }

  void erase_source(const DicomWebFrames* source) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = frames.lower_bound({source, 0}); it != frames.end() && it->first.first == source;) {
      bytes -= it->second.bytes->size();
      lru.erase(it->second.lru);
      it = frames.erase(it);
    }
  }
};

bool is_dicomweb_url(const std::string& url) {
  if (!is_http_url(url)) return false;
  std::string path = url.substr(0, url.find_first_of("?#"));
  if (!path.empty() && path.back() == '/') path.pop_back();
  const size_t studies = path.rfind("/studies/");
  if (studies == std::string::npos) return false;
  const std::string rest = path.substr(studies + 9);  // <study>/series/<series>
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0) return false;
  const std::string tail = rest.substr(slash);
  return tail.rfind("/series/", 0) == 0 && tail.size() > 8 && tail.find('/', 8) == std::string::npos;
}

Result<std::shared_ptr<const DicomWebSeries>> DicomWebSeries::open(const std::string& url, const HttpAuth& auth) {
  if (!is_dicomweb_url(url)) return invalid_argument(redact_url(url) + ": not a DICOMweb series URL (.../studies/<uid>/series/<uid>)");
  auto client = std::make_shared<DicomWebClient>();
  client->series_url = url.substr(0, url.find_first_of("?#"));
  if (client->series_url.back() == '/') client->series_url.pop_back();
  client->name = redact_url(client->series_url);
  client->headers = auth_headers(auth);
  auto series = std::make_shared<DicomWebSeries>(client);
  // QIDO-RS and WADO-RS metadata at once: one round trip.
  Result<HttpAnswer> listed = io_error(client->name + ": not listed");
  std::thread qido([&] {
    std::vector<std::string> uids;
    for (size_t offset = 0;; offset += kQidoPage) {
      listed = client->get(client->series_url + "/instances?limit=" + std::to_string(kQidoPage) + "&offset=" +
                               std::to_string(offset),
                           client->name + "/instances", "application/dicom+json", 64u << 20);
      if (!listed.ok()) return;
      const nlohmann::json doc = nlohmann::json::parse(listed->body, nullptr, /*allow_exceptions=*/false);
      if (!listed->body.empty() && !doc.is_array()) {
        listed = io_error(client->name + "/instances: the answer is not a DICOM JSON array");
        return;
      }
      size_t count = 0;
      for (const nlohmann::json& item : listed->body.empty() ? nlohmann::json::array() : doc) {
        ++count;
        const nlohmann::json* v = item.is_object() && item.contains("00080018") ? &item["00080018"] : nullptr;
        if (v && v->contains("Value") && (*v)["Value"].is_array() && !(*v)["Value"].empty() && (*v)["Value"][0].is_string()) {
          uids.push_back((*v)["Value"][0].get<std::string>());
        }
      }
      if (count < kQidoPage) break;
    }
    series->listed_ = std::move(uids);
  });
  Result<HttpAnswer> metadata =
      client->get(client->series_url + "/metadata", client->name + "/metadata", "application/dicom+json", kMaxMetadataBytes);
  qido.join();
  if (!listed.ok()) return listed.status();
  if (series->listed_.empty()) return not_found(client->name + ": the server lists no instance of this series");
  if (!metadata.ok()) return metadata.status();
  series->metadata_ = std::move(metadata->body);
  return std::shared_ptr<const DicomWebSeries>(std::move(series));
}

Status DicomWebSeries::pread(std::span<uint8_t>, uint64_t) const {
  return unsupported(client_->name + ": a DICOMweb series is read frame by frame, not as bytes");
}

const std::string& DicomWebSeries::name() const { return client_->name; }

Result<std::vector<std::shared_ptr<const DicomWebFrames>>> DicomWebSeries::instances(
    const std::vector<Wanted>& wanted, const std::function<bool(const std::string&)>& decodable) const {
  std::vector<std::shared_ptr<DicomWebFrames>> out;
  for (const Wanted& w : wanted) {
    auto f = std::make_shared<DicomWebFrames>(client_, w.uid);
    if (!w.syntax.empty()) {
      f->syntax_ = decodable(w.syntax) ? w.syntax : kExplicitLittle;
      f->accept_ = accept_for(f->syntax_);
    }
    out.push_back(std::move(f));
  }
  // Stored syntaxes the metadata does not name: frame 1 of each such instance, all at once.
  std::vector<Status> statuses(out.size());
  run_parallel(out.size(), kParallel, [&](size_t i) {
    DicomWebFrames& f = *out[i];
    if (!f.syntax_.empty()) return;
    f.accept_ = kAnyStored;
    std::vector<std::vector<uint8_t>> frames;
    statuses[i] = f.request({1}, frames);
    if (!statuses[i].ok()) return;
    if (decodable(f.syntax_)) {
      std::lock_guard<std::mutex> lock(client_->mutex);
      client_->insert({&f, 1}, std::make_shared<const std::vector<uint8_t>>(std::move(frames[0])), true);
    } else {
      f.syntax_ = kExplicitLittle;  // the server decompresses what tilewise cannot
    }
    // Asked for by name from now on: the same frames as `*`, and Orthanc answers them sooner (17 against
    // 21-26 ms per request of 4 frames from a 40 MB instance).
    f.accept_ = accept_for(f.syntax_);
  });
  for (const Status& s : statuses) TW_RETURN_IF_ERROR(s);
  for (size_t i = 0; i < out.size(); ++i) {
    DicomWebFrames& f = *out[i];
    const Wanted& w = wanted[i];
    // one slot per frame (frame 0's unused), whole pages: its length, then its bytes
    f.slot_ = (w.frame_bytes + 4 + DiskCache::kPage - 1) / DiskCache::kPage * DiskCache::kPage;
    if (w.frames > 0 && w.frame_bytes > 0 && w.frames < (1ull << 40) / f.slot_) {
      f.disk_ = DiskCache::open(f.name_ + " frames", f.slot_ * (w.frames + 1), f.uid_ + "|" + f.syntax_);
    }
  }
  return std::vector<std::shared_ptr<const DicomWebFrames>>(out.begin(), out.end());
}

Result<std::vector<uint8_t>> DicomWebSeries::bulk_data(const std::string& uri) const {
  const std::string what = client_->name + ": bulk data " + redact_url(uri);
  TW_ASSIGN_OR_RETURN(HttpAnswer answer,
                      client_->get(uri, what, "multipart/related; type=\"application/octet-stream\"", 256u << 20));
  if (media_of(answer.content_type).rfind("multipart/", 0) != 0) {
    return std::vector<uint8_t>(answer.body.begin(), answer.body.end());
  }
  auto parts = parse_multipart(answer.body, answer.content_type);
  if (!parts.ok()) return parts.status().with_context(what);
  if (parts->empty()) return corrupt(what + ": the answer holds no part");
  const MultipartPart& p = parts->front();
  return std::vector<uint8_t>(answer.body.begin() + static_cast<ptrdiff_t>(p.offset),
                              answer.body.begin() + static_cast<ptrdiff_t>(p.offset + p.length));
}

// A request in flight: readers of its frames wait for it rather than asking again.
struct DicomWebFrames::Flight {
  std::vector<uint64_t> numbers;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  Status status;
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> frames;
};

DicomWebFrames::DicomWebFrames(std::shared_ptr<DicomWebClient> client, std::string uid)
    : client_(std::move(client)), uid_(std::move(uid)) {
  name_ = client_->name + "/instances/" + uid_;
  url_ = client_->series_url + "/instances/" + uid_;
}

DicomWebFrames::~DicomWebFrames() { client_->erase_source(this); }

Status DicomWebFrames::pread(std::span<uint8_t>, uint64_t) const {
  return unsupported(name_ + ": a DICOMweb instance is read frame by frame, not as bytes");
}

uint64_t DicomWebFrames::cache_bytes() const { return internal::settings().http_cache_bytes; }

Status DicomWebFrames::request(const std::vector<uint64_t>& numbers, std::vector<std::vector<uint8_t>>& frames) const {
  const std::string list = join(numbers);
  const std::string what = name_ + ": frame" + (numbers.size() > 1 ? "s " : " ") + list;
  Status last;
  for (int attempt = 0; attempt < kBodyAttempts; ++attempt) {
    Result<HttpAnswer> answer = client_->get(url_ + "/frames/" + list, what, accept_, kMaxAnswerBytes);
    if (!answer.ok()) return answer.status();
    auto parts = parse_multipart(answer->body, answer->content_type);
    if (!parts.ok() && parts.status().code() == StatusCode::kInvalidArgument) return parts.status().with_context(what);
    if (!parts.ok()) {
      last = parts.status().with_context(what);
      continue;  // cut short: ask again
    }
    if (parts->size() != numbers.size()) {
      last = corrupt(what + ": the answer holds " + std::to_string(parts->size()) + " frames");
      continue;
    }
    frames.clear();
    for (size_t i = 0; i < parts->size(); ++i) {
      const MultipartPart& p = (*parts)[i];
      const std::string ts = syntax_of(p, answer->content_type);
      if (syntax_.empty()) {
        const_cast<DicomWebFrames*>(this)->syntax_ = ts;  // the probe of instances(), before the source is shared
      } else if (!ts.empty() && ts != syntax_) {
        return corrupt(what + ": frame " + std::to_string(numbers[i]) + " answered in transfer syntax " + ts +
                       ", not " + syntax_);
      }
      frames.emplace_back(answer->body.begin() + static_cast<ptrdiff_t>(p.offset),
                          answer->body.begin() + static_cast<ptrdiff_t>(p.offset + p.length));
    }
    if (syntax_.empty()) return corrupt(what + ": the answer names no transfer syntax");
    return Status();
  }
  return last.with_context("after " + std::to_string(kBodyAttempts) + " answers");
}

void DicomWebFrames::complete(const std::shared_ptr<Flight>& flight, bool unread) const {
  std::vector<std::vector<uint8_t>> frames;
  const Status status = request(flight->numbers, frames);
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> kept;
  for (auto& f : frames) kept.push_back(std::make_shared<const std::vector<uint8_t>>(std::move(f)));
  for (size_t i = 0; i < kept.size(); ++i) write_disk(flight->numbers[i], *kept[i]);
  {
    std::lock_guard<std::mutex> lock(client_->mutex);
    for (size_t i = 0; i < kept.size(); ++i) client_->insert({this, flight->numbers[i]}, kept[i], unread);
    std::erase(flights_, flight);
    --sending_;
  }
  slot_cv_.notify_all();
  std::lock_guard<std::mutex> lock(flight->mutex);
  flight->done = true, flight->status = status, flight->frames = std::move(kept);
  flight->done_cv.notify_all();
}

Status DicomWebFrames::read_frame(uint64_t number, std::vector<uint8_t>& out) const {
  // A frame another request is fetching is waited for; if that request failed (a prefetch), it is asked for
  // once more alone, whose failure is the answer.
  for (int pass = 0;; ++pass) {
    std::shared_ptr<Flight> theirs, mine;
    {
      std::lock_guard<std::mutex> lock(client_->mutex);
      if (auto bytes = client_->find({this, number})) {
        out.assign(bytes->begin(), bytes->end());
        return Status();
      }
      for (const auto& f : flights_) {
        if (pass == 0 && std::find(f->numbers.begin(), f->numbers.end(), number) != f->numbers.end()) theirs = f;
      }
      if (!theirs) {
        mine = std::make_shared<Flight>();
        mine->numbers = {number};
        flights_.push_back(mine);
        ++sending_;
      }
    }
    if (mine && read_disk(number, out)) {  // on disk from an earlier process: no request
      {
        std::lock_guard<std::mutex> lock(client_->mutex);
        std::erase(flights_, mine);
        --sending_;
      }
      slot_cv_.notify_all();
      std::lock_guard<std::mutex> flight_lock(mine->mutex);
      mine->done = true, mine->frames = {std::make_shared<const std::vector<uint8_t>>(out)};
      mine->done_cv.notify_all();
      return Status();
    }
    if (mine) complete(mine, /*unread=*/false);
    Flight& flight = theirs ? *theirs : *mine;
    std::unique_lock<std::mutex> lock(flight.mutex);
    flight.done_cv.wait(lock, [&] { return flight.done; });
    if (!flight.status.ok()) {
      if (theirs) continue;
      return flight.status;
    }
    const size_t at = static_cast<size_t>(std::find(flight.numbers.begin(), flight.numbers.end(), number) - flight.numbers.begin());
    if (at >= flight.frames.size()) return corrupt(name_ + ": frame " + std::to_string(number) + " missing from its answer");
    out.assign(flight.frames[at]->begin(), flight.frames[at]->end());
    return Status();
  }
}

bool DicomWebFrames::read_disk(uint64_t number, std::vector<uint8_t>& out) const {
  if (!disk_) return false;
  uint8_t head[4];
  if (!disk_->read(head, number * slot_)) return false;
  const uint32_t length = uint32_t{head[0]} | uint32_t{head[1]} << 8 | uint32_t{head[2]} << 16 | uint32_t{head[3]} << 24;
  if (length == 0 || length > slot_ - 4) return false;
  std::vector<uint8_t> record(4 + length);
  if (!disk_->read(record, number * slot_)) return false;
  out.assign(record.begin() + 4, record.end());
  return true;
}

void DicomWebFrames::write_disk(uint64_t number, const std::vector<uint8_t>& bytes) const {
  if (!disk_ || bytes.empty() || bytes.size() > slot_ - 4) return;
  // whole pages (the disk cache keeps whole pages only): the record padded with zeros
  std::vector<uint8_t> record((4 + bytes.size() + DiskCache::kPage - 1) / DiskCache::kPage * DiskCache::kPage, 0);
  const auto length = static_cast<uint32_t>(bytes.size());
  for (int k = 0; k < 4; ++k) record[static_cast<size_t>(k)] = static_cast<uint8_t>(length >> (8 * k));
  std::copy(bytes.begin(), bytes.end(), record.begin() + 4);
  disk_->write(record, number * slot_);
}

void DicomWebFrames::prefetch_frames(std::span<const uint64_t> numbers) const {
  std::unique_lock<std::mutex> lock(client_->mutex);
  std::vector<uint64_t> missing;
  for (uint64_t n : numbers) {
    if (n == 0 || client_->frames.count({this, n}) || (disk_ && disk_->has({n * slot_, 4}))) continue;
    bool flying = false;
    for (const auto& f : flights_) flying = flying || std::find(f->numbers.begin(), f->numbers.end(), n) != f->numbers.end();
    if (!flying) missing.push_back(n);
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  if (missing.empty()) return;
  if (sending_ < kRequestsPerInstance) {
    std::vector<std::shared_ptr<Flight>> mine;
    for (auto& chunk : chunks_of(missing)) {
      auto f = std::make_shared<Flight>();
      f->numbers = std::move(chunk);
      flights_.push_back(f);
      mine.push_back(std::move(f));
      ++sending_;
    }
    lock.unlock();
    // a failure is left for read_frame to report (it asks again)
    run_parallel(mine.size(), kParallel, [&](size_t i) { complete(mine[i], /*unread=*/true); });
    return;
  }
  // The instance's requests are all in flight: the frames join the queue (flights of up to kFramesPerRequest,
  // visible to readers). Whoever finds a request returned first sends the front flight, with every frame
  // queued meanwhile; this thread waits until its own frames are sent, sending flights itself as slots free.
  for (uint64_t n : missing) {
    if (queued_.empty() || queued_.back()->numbers.size() >= kFramesPerRequest) {
      queued_.push_back(std::make_shared<Flight>());
      flights_.push_back(queued_.back());
    }
    queued_.back()->numbers.push_back(n);
  }
  const std::shared_ptr<Flight> last = queued_.back();
  auto waiting = [&] { return std::find(queued_.begin(), queued_.end(), last) != queued_.end(); };
  while (true) {
    slot_cv_.wait(lock, [&] { return !waiting() || sending_ < kRequestsPerInstance; });
    if (!waiting()) return;
    const std::shared_ptr<Flight> front = queued_.front();
    queued_.pop_front();
    ++sending_;
    lock.unlock();
    complete(front, /*unread=*/true);
    lock.lock();
  }
}

}  // namespace tilewise::io
