// DicomWsiWriter: a pyramid as a DICOM WSI series in a folder - one VL Whole Slide Microscopy Image instance
// per level (level-0.dcm, level-1.dcm, ...), TILED_FULL (frames in row-major order, no per-frame
// functional groups), one optical path (brightfield, with the slide's ICC profile or sRGB's) - or, for
// channel images, one per channel with every focal plane, MONOCHROME2 - the pixel spacing of each level,
// JPEG baseline frames (YBR_FULL_422 or YBR_FULL) encapsulated with a Basic Offset Table (an Extended one
// for a level of over 4 GiB of pixels), JPEG-LS lossless frames encapsulated with an Extended Offset Table,
// or uncompressed frames in explicit VR little endian. Each instance is written front to back as
// its frames come; the folder is written under a partial name beside the output (write/partial_name.h)
// and renamed when complete (removed on failure).
//
// Thread behaviour: one thread calls a writer's methods.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tilewise/status.h"
#include "tilewise/types.h"
#include "write/partial_name.h"
#include "write/tile_sink.h"

namespace tilewise::write {

// What every instance of the series shares.
struct DicomSeries {
  std::string study_uid, series_uid, frame_of_reference_uid, dimension_organization_uid, pyramid_uid, specimen_uid;
  std::string container_id;          // the slide's identifier (Container and Specimen Identifier)
  std::string software;              // Software Versions: "tilewise <version>"
  std::string date, time;            // of the conversion (DA, TM)
  std::vector<uint8_t> icc_profile;  // the optical path's
  int64_t width = 0, height = 0;     // level 0
  std::pair<double, double> mpp{};   // level 0's microns per pixel (x, y)
  std::string barcode;               // the slide label's barcode ("" when not known: empty, a Type 2 value)
  // Channel images (fluorescence, multiplex): each channel an optical path (its name, excitation
  // wavelength), frames MONOCHROME2 of the levels' 8 or 16 bits, the planes of each level's instance in
  // TILED_FULL order (tile by tile, then focal plane, then optical path). Empty: brightfield RGB.
  std::vector<ChannelInfo> optical_paths;
  int32_t focal_planes = 1;
  double z_spacing = 0;  // micrometres between focal planes (Spacing Between Slices); required for several
  // New UIDs for the series, dated now.
  static DicomSeries make(std::string container_id, std::string software);
};

class DicomWsiWriter final : public TileSink {
 public:
  // Creates the temporary folder beside `folder`; InvalidArgument when `folder` exists and is not empty.
  static Result<DicomWsiWriter> create(const std::string& folder, DicomSeries series);
  DicomWsiWriter(DicomWsiWriter&& other) noexcept;
  DicomWsiWriter& operator=(DicomWsiWriter&&) = delete;
  ~DicomWsiWriter() override;

  // The plane whose levels come next (channel images: channel c is optical path c + 1, z its focal plane;
  // planes must come optical path by optical path, focal plane by focal plane). Its levels are added again
  // and must be the first plane's.
  void begin_plane(int32_t c, int32_t z, int32_t t) override;
  // Starts the level's instance (its header written) for the first plane; an error is reported by
  // write_tile() and finish().
  int add_level(LevelSpec level) override;
  // Appends the current plane's next frame of the level: tiles must come in index order.
  Status write_tile(int level, int64_t index, std::span<const uint8_t> bytes) override;
  // Completes every instance (their frame tables), closes them and renames the folder to the output.
  Status finish();

 private:
  struct Instance {
    LevelSpec spec;
    std::FILE* file = nullptr;
    std::string path;
    int64_t frames = 0, next = 0;
    bool encapsulated = false;
    bool extended = false;      // an Extended Offset Table (and an empty Basic Offset Table)
    uint64_t table_at = 0;      // where the Basic (or Extended) Offset Table's values go
    uint64_t ratio_at = 0;      // where the Lossy Image Compression Ratio's value goes
    uint64_t fragments = 0;     // bytes of frame items written, from the first
    std::vector<uint64_t> offsets, lengths;  // each frame's item, from the first; its length
  };
  DicomWsiWriter(PartialFolder folder, DicomSeries series) : folder_(std::move(folder)), series_(std::move(series)) {}
  Status start(Instance& instance, int index);
  Status put(Instance& instance, std::span<const uint8_t> bytes);

  PartialFolder folder_;
  DicomSeries series_;
  std::vector<Instance> instances_;
  Status error_;  // the first failure of add_level
  int64_t plane_ = 0;           // the current plane's place in TILED_FULL order
  size_t plane_levels_ = 0;     // levels added for the current plane
};

}  // namespace tilewise::write
