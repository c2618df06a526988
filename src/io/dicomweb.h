// DICOMweb series (DICOM PS3.18) as slides: `http(s)://host/prefix/studies/<StudyUID>/series/<SeriesUID>`.
//
// Opening asks two things at once: the series' instances (QIDO-RS, `.../series/<uid>/instances`) and their
// metadata (WADO-RS, `.../series/<uid>/metadata`, DICOM JSON): no pixel data. The DICOM driver builds the
// slide from the metadata (formats/drivers/dicom_wsi.cc) and reads each instance's frames through a
// DicomWebFrames source: WADO-RS `.../instances/<uid>/frames/<n>[,<m>...]`, several frames per request where
// a region needs them, the requests of one region in parallel (at most 16 per series in flight), a frame
// wanted by several readers fetched once; while an instance has 2 requests in flight, the frames readers
// want next wait in a queue and go as one request when one returns (the server's cost is per request);
// fetched frames kept in memory (TILEWISE_HTTP_CACHE_BYTES per series). Answers are multipart/related, parsed with bounds checks (io/multipart.h); a body cut short is
// asked for again, as are connection failures, 5xx, 408 and 429 (io/http_source.h's retries); 401/403 name the
// URL and status, 404 is NotFound.
//
// Transfer syntax: frames are asked for in their stored syntax, by name (no transcoding on the server), when
// tilewise decodes it; otherwise as explicit VR little endian, which every server can make. Where the
// metadata names the stored syntax (Available Transfer Syntax UID, or a Transfer Syntax UID the server adds)
// it is used; where it does not (Orthanc's), frame 1 of each instance is asked for as stored
// (`transfer-syntax=*`) at open, all instances at once, and its answer names the syntax; the frame is kept
// for the reads that follow.
//
// Credentials: HttpAuth (a bearer token, extra headers; io/http_source.h) on every request.
//
// The disk cache of remote reads (TILEWISE_HTTP_DISK_CACHE, io/disk_cache.h) keeps frames too: each instance
// is an object of one slot per frame (the frame's length, then its bytes; as large as the frame's samples
// uncompressed, in a sparse file), keyed by its URL, SOP Instance UID and transfer syntax (an instance's
// content never changes under its UID), its pages checked as every cached page is. A frame larger than its
// slot is not kept on disk.
//
// Thread behaviour: every method is const and safe from any number of threads.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/http_source.h"
#include "io/source.h"

namespace tilewise::io {

// Whether `url` names a DICOMweb series: an http(s) URL whose path ends in /studies/<uid>/series/<uid>
// (a trailing '/' allowed).
bool is_dicomweb_url(const std::string& url);

struct DicomWebClient;
class DicomWebFrames;

class DicomWebSeries final : public Source {
 public:
  // Lists the series and fetches its metadata. NotFound for a series the server does not hold (or holds no
  // instance of), IoError for access denied and other failures, each naming the URL (without credentials).
  static Result<std::shared_ptr<const DicomWebSeries>> open(const std::string& url, const HttpAuth& auth);

  // A series has no bytes of its own: reads are refused.
  Status pread(std::span<uint8_t> out, uint64_t offset) const override;
  uint64_t size() const override { return 0; }
  const std::string& name() const override;

  // The SOP Instance UIDs QIDO-RS listed, and the metadata: a DICOM JSON array, one object per instance.
  const std::vector<std::string>& listed() const { return listed_; }
  const std::string& metadata() const { return metadata_; }

  // An instance to read: its SOP Instance UID, the stored syntax where the metadata names it (else empty:
  // learned from frame 1, see above), its number of frames and the bytes of one frame's samples uncompressed.
  struct Wanted {
    std::string uid;
    std::string syntax;
    uint64_t frames = 0;
    uint64_t frame_bytes = 0;
  };
  // The frame sources of these instances, in order. `decodable`: whether tilewise decodes a syntax.
  Result<std::vector<std::shared_ptr<const DicomWebFrames>>> instances(
      const std::vector<Wanted>& wanted, const std::function<bool(const std::string&)>& decodable) const;

  // A value the metadata gives as a BulkDataURI (an ICC profile), whole.
  Result<std::vector<uint8_t>> bulk_data(const std::string& uri) const;

  explicit DicomWebSeries(std::shared_ptr<DicomWebClient> client) : client_(std::move(client)) {}

 private:
  std::shared_ptr<DicomWebClient> client_;
  std::vector<std::string> listed_;
  std::string metadata_;
};

// One instance's frames: read_frame / prefetch_frames (Source's frame interface); no bytes otherwise.
class DicomWebFrames final : public Source {
 public:
  DicomWebFrames(std::shared_ptr<DicomWebClient> client, std::string uid);
  ~DicomWebFrames() override;
  Status pread(std::span<uint8_t> out, uint64_t offset) const override;
  uint64_t size() const override { return 0; }
  const std::string& name() const override { return name_; }
  uint64_t cache_bytes() const override;
  Status read_frame(uint64_t number, std::vector<uint8_t>& out) const override;
  void prefetch_frames(std::span<const uint64_t> numbers) const override;

  // The transfer syntax the frames are answered in.
  const std::string& transfer_syntax() const { return syntax_; }

 private:
  friend class DicomWebSeries;
  struct Flight;
  // Makes the flight's request, keeps its frames (`unread`: prefetched, kept until read) and wakes its waiters.
  void complete(const std::shared_ptr<Flight>& flight, bool unread) const;
  // One request for `numbers`, a body cut short asked for again; the frames in their order.
  Status request(const std::vector<uint64_t>& numbers, std::vector<std::vector<uint8_t>>& frames) const;
  // The disk cache's copy of a frame (false: none, or damaged), and keeping one there.
  bool read_disk(uint64_t number, std::vector<uint8_t>& out) const;
  void write_disk(uint64_t number, const std::vector<uint8_t>& bytes) const;

  std::shared_ptr<DicomWebClient> client_;
  std::string uid_, name_, url_;
  std::string syntax_, accept_;
  std::shared_ptr<const class DiskCache> disk_;  // null: no disk cache
  uint64_t slot_ = 0;                            // bytes per frame in it
  // Under the client's mutex: requests in flight or queued; how many are in flight; the queued ones, in order.
  mutable std::vector<std::shared_ptr<Flight>> flights_;
  mutable int sending_ = 0;
  mutable std::deque<std::shared_ptr<Flight>> queued_;
  mutable std::condition_variable slot_cv_;  // a request of this instance returned
};

}  // namespace tilewise::io
