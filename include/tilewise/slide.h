// tilewise::Slide: an open whole-slide image.
//
// Thread behaviour: a Slide is immutable after open(); every const method may be called from any number of
// threads at once. Copies share the same underlying file and model (copying is cheap). There is no "current
// level" or seek state anywhere.
//
// Coordinate frames: read_region takes its (x, y) in level-0 pixels, as OpenSlide and cuCIM do, and its
// (width, height) in pixels of the requested level. The level-0 location maps to the level by dividing by the
// level's downsample and truncating toward zero (OpenSlide's rule for negative locations, cuCIM's for
// positive ones); OpenSlide additionally resamples by the sub-pixel remainder, which the native API does not
// (tilewise.openslide does: docs/design.md, "Compatibility modules").
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tilewise/image_view.h"
#include "tilewise/status.h"
#include "tilewise/types.h"

namespace tilewise {

namespace internal {
class SlideImpl;
}

// The vendor name of the format driver that recognises the file ("aperio", "generic-tiff", ...), without
// opening it fully; nullopt for a missing, unreadable or unrecognised file (OpenSlide's detect_vendor).
std::optional<std::string> detect_format(const std::string& path);

class Slide {
 public:
  // Opens a slide file, or a folder of DICOM files (through its first DICOM WSI file by name). Errors:
  // NotFound (no such file), Unsupported (not a format tilewise reads), Corrupt (a recognised format that
  // violates its rules), IoError.
  static Result<Slide> open(const std::string& path, const OpenOptions& options = {});
  // Opens a slide held in memory (tests, fuzzing, network buffers). `name` is used in error messages.
  static Result<Slide> open_memory(std::vector<uint8_t> bytes, const std::string& name = "<memory>",
                                   const OpenOptions& options = {});
  // Opens a slide of `size` bytes read through `read(out, offset)`, which fills `out` with the bytes at
  // `offset` or fails; it is called from reading threads at once (file objects: the Python binding's
  // fsspec and open files). Formats of several files need a path.
  using ReadAt = std::function<Status(std::span<uint8_t> out, uint64_t offset)>;
  static Result<Slide> open_reader(ReadAt read, uint64_t size, const std::string& name,
                                   const OpenOptions& options = {});

  const std::string& path() const;
  const std::string& format() const;  // the format driver's vendor name, e.g. "generic-tiff"
  int level_count() const;
  const LevelInfo& level(int index) const;  // index < level_count()
  const std::vector<LevelInfo>& levels() const;
  const Properties& properties() const;
  std::optional<std::string> property(const std::string& key) const;
  const std::vector<uint8_t>& icc_profile() const;  // empty when the file has none
  std::array<uint8_t, 3> background() const;
  // Microns per pixel at level 0 when the file states it.
  std::optional<std::pair<double, double>> mpp() const;
  const std::vector<AssociatedImageInfo>& associated_images() const;
  Result<RgbImage> read_associated_image(const std::string& name) const;
  // The associated image's own ICC profile, where the format keeps one per image (DICOM); else empty.
  const std::vector<uint8_t>& associated_icc_profile(const std::string& name) const;
  int best_level_for_downsample(double downsample) const;
  // The tiles of `level` the file does not store (sparse TIFF, Philips, DICOM TILED_SPARSE), as row-major
  // indices into its grid of tile_width x tile_height tiles; they read as the fill colour. Empty for
  // positioned levels (MIRAX), whose tiles are not a grid: see stored_area.
  std::vector<int64_t> absent_tiles(int level) const;
  // The parts of the width x height rectangle at (x, y) of `level` (level pixels) that the file stores
  // pixels for, as {x, y, width, height} rectangles in level pixels that do not overlap; the rest reads as
  // the fill colour (outside the level, absent tiles, the gaps between a positioned level's tiles, which
  // may also reach past the level's edges: MIRAX).
  std::vector<std::array<int64_t, 4>> stored_area(int level, int64_t x, int64_t y, int64_t width, int64_t height) const;
  // Tile (col, row) of `level`'s grid as the file stores it, for writers that copy JPEG tiles rather than
  // decode and encode them again: one complete JPEG stream (shared JPEGTables spliced in). Unsupported for a
  // level whose units are not JPEG tiles on a grid (other codecs, positioned tiles, restart-interval
  // stripes, tiles of separate planes); NotFound for a tile the file does not store; InvalidArgument
  // outside the grid.
  Result<StoredTile> read_stored_tile(int level, int64_t col, int64_t row) const;
  // Problems that did not stop the slide from opening (malformed vendor metadata, unreadable associated
  // images): the slide reads, but some metadata is missing.
  const std::vector<std::string>& warnings() const;

  // The image's channels, focal planes, time points and sample type (types.h). A brightfield slide is rgb.
  const ImageAxes& axes() const;
  // The images of a file that holds several (CZI scenes, OME-TIFF images); empty for one. scene(): the one
  // this slide reads (OpenOptions::scene), unset for the format's default.
  const std::vector<SceneInfo>& scenes() const;
  std::optional<int32_t> scene() const;
  // Reads the width x height region at (x, y) of `level` (its own pixel frame) of the channels `selection`
  // names, at its focal plane and time point, into `out`: a host view of as many channels as it names
  // (every channel when it names none), of samples of axes().sample_type, channel after channel in each
  // pixel. Samples come as the file stores them (an RGB slide's as read_level_region gives them); outside
  // the level and in absent tiles they are 0 (an RGB slide's: `options.fill`). InvalidArgument for an index
  // outside axes() or a view of another layout.
  Status read_planes(int level, int64_t x, int64_t y, int64_t width, int64_t height, const PlaneSelection& selection,
                     const ImageView& out, const ReadOptions& options = {}) const;

  // Reads the region at level-0 location (x, y) of `width` x `height` pixels of `level` into `out`, a
  // 3-channel view of at least that size in host memory or on a CUDA device (gpu.h). Pixels outside the
  // level get the fill colour. Into host memory, tiles are decoded in parallel on the process-wide worker
  // pool (ReadOptions::threads), the calling thread taking part.
  Status read_region(int64_t x, int64_t y, int level, int64_t width, int64_t height, const ImageView& out,
                     const ReadOptions& options = {}) const;
  // As read_region, with (x, y) already in the level's own pixel frame.
  Status read_level_region(int level, int64_t x, int64_t y, int64_t width, int64_t height,
                           const ImageView& out, const ReadOptions& options = {}) const;

  // Reads many regions of one level (each in the level's own pixel frame) into out[i], one view per region:
  // all in host memory, or all on one CUDA device. Into device memory they are read as one batch: every
  // tile they need is decoded once, in full-size GPU batches, and all of them are cut out together (the
  // batch loader reads its device batches so); into host memory each is read as read_level_region. One
  // status per region; a failed region's pixels are unspecified, the others are unaffected.
  std::vector<Status> read_level_regions(int level, std::span<const LevelRegion> regions,
                                         std::span<const ImageView> out, const ReadOptions& options = {}) const;

  // The alpha of the width x height region at (x, y) of `level` (its own pixel frame) into `out` (`stride`
  // bytes per row): the stored alpha sample where the level has one (LevelInfo::alpha_sample; reads give
  // RGB without it), 255 for other stored pixels, 0 where nothing is stored. Unsupported where the alpha is
  // not 8-bit samples of a lossless codec.
  Status read_level_alpha(int level, int64_t x, int64_t y, int64_t width, int64_t height, uint8_t* out,
                          int64_t stride) const;

  // Maps a level-0 coordinate to `level`'s pixel frame (truncation toward zero).
  int64_t to_level_coordinate(int64_t level0, int level) const;

 private:
  explicit Slide(std::shared_ptr<const internal::SlideImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const internal::SlideImpl> impl_;
};

}  // namespace tilewise
