// Vocabulary types of the public API: level and associated-image descriptions, owned images, read options
// and properties. Shared by the Slide facade (slide.h), the batch loader and the core's lower layers, which
// use these types without depending on the facade.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilewise {

struct LevelInfo {
  int64_t width = 0;
  int64_t height = 0;
  bool tiled = true;        // false: stored in strips
  int32_t tile_width = 0;   // decode unit; for strip-based levels the strip (width x rows per strip)
  int32_t tile_height = 0;
  double downsample = 1.0;  // mean of the width and height ratios to level 0, as OpenSlide computes it
  std::string compression;  // "jpeg", "deflate", "lzw", "zstd", "none", ...
  int32_t samples_per_pixel = 3;  // as stored (1 grey, 2 grey + alpha, 3 colour, 4 colour + alpha); reads give RGB
  // The stored sample that is alpha (TIFF ExtraSamples 1 or 2), -1 when none; Slide::read_level_alpha reads it.
  int32_t alpha_sample = -1;
  bool alpha_associated = false;  // colour samples are premultiplied by alpha (ExtraSamples 1)
};

// The type of an image's own samples (Slide::axes, Slide::read_planes).
enum class SampleType { kUint8, kUint16, kUint32, kInt8, kInt16, kInt32, kFloat32 };
int32_t sample_bytes(SampleType type);
const char* sample_type_name(SampleType type);  // "uint8", "uint16", ..., "float32" (NumPy's names)

// One channel of an image, as far as the file describes it.
struct ChannelInfo {
  std::string name;
  std::optional<std::array<uint8_t, 3>> color;  // the display colour (RGB) the file gives the channel
  std::optional<double> excitation_nm, emission_nm;
  std::optional<double> exposure_s;
};

// The axes of an image beside its levels' Y and X: channels (C), focal planes (Z) and time points (T).
// A brightfield slide is rgb: three 8-bit channels (R, G, B) of one plane, which every read gives as they
// are; other images read as their own samples, any channels of one (z, t) at a time.
struct ImageAxes {
  int32_t channels = 3;
  int32_t z = 1;
  int32_t t = 1;
  SampleType sample_type = SampleType::kUint8;
  bool rgb = true;
  // The focal plane an RGB read (Slide::read_region, the drop-ins) and a read that names no plane show: the
  // file's nominal focus (NDPI's focal plane 0, between the planes above and below it); 0 elsewhere.
  int32_t default_z = 0;
  // Micrometres between consecutive focal planes, where the file states it (OME's PhysicalSizeZ, a CZI's Z
  // scaling, a DICOM series' plane positions); 0 otherwise and for a single plane.
  double z_spacing = 0;
  std::vector<ChannelInfo> channel_info;  // one per channel
};

// Which planes a read takes: channel indices in the order the output gives them (empty: every channel in
// order), at focal plane z and time point t.
struct PlaneSelection {
  std::vector<int32_t> channels;
  int32_t z = 0;
  int32_t t = 0;
};

// One image of a file that holds several (CZI scenes, OME-TIFF images): its name and level-0 size.
struct SceneInfo {
  std::string name;
  int64_t width = 0;
  int64_t height = 0;
};

// How a slide is opened: `scene`, for a file of several images, the one to read (by index into
// Slide::scenes()); unset, the format's default - every CZI scene on one canvas (as OpenSlide shows them),
// an OME-TIFF's first image.
struct OpenOptions {
  std::optional<int32_t> scene;
  // Credentials of slides over HTTP(S) and DICOMweb: an OAuth 2 bearer token (sent as "Authorization: Bearer
  // <token>") and extra request headers ("Name: value"). Both empty: TILEWISE_HTTP_TOKEN and
  // TILEWISE_HTTP_HEADERS (one header per line) from the environment. Never shown in names or errors.
  std::string bearer_token;
  std::vector<std::string> http_headers;
};

struct AssociatedImageInfo {
  std::string name;  // "thumbnail", "label", "macro", ...
  int64_t width = 0;
  int64_t height = 0;
};

// An owned RGB image (associated images, thumbnails).
struct RgbImage {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3, row-major
};

// A tile as the file stores it, made one complete stream of its codec (Slide::read_stored_tile).
struct StoredTile {
  std::vector<uint8_t> bytes;
  int32_t width = 0, height = 0;  // the stream's pixels (a grid tile's, edge tiles included)
  bool ycbcr = false;             // JPEG: the components are YCbCr (converted to RGB when decoded)
};

struct ReadOptions {
  // Colour for pixels outside the level; when unset, the format's background (white unless the format
  // defines another).
  std::optional<std::array<uint8_t, 3>> fill;
  // Use and fill the process-wide decoded-tile cache (config.h).
  bool use_cache = true;
  // How many threads may decode this read's tiles at once, the calling thread included: 0 = as many as the
  // process-wide decode pool has (set_worker_threads); 1 = the calling thread only, for callers that
  // already read many regions in parallel (the batch loader's workers, a DataLoader's processes).
  int threads = 0;
};

// A region of one level, in that level's own pixel frame (Slide::read_level_regions).
struct LevelRegion {
  int64_t x = 0, y = 0;
  int64_t width = 0, height = 0;
};

using Properties = std::vector<std::pair<std::string, std::string>>;  // sorted by key

}  // namespace tilewise
