// The ordered table of format drivers (OpenSlide's formats[] table): specific vendors first, generic TIFF
// last. open_model() asks each driver in order whether it recognises the file and opens it with the first
// that does. Every driver has one shape - detect(probe), open(probe) - and says what it reads: TIFF files
// (the probe's parsed TIFF) or other files (the probe's source: index files such as Hamamatsu VMS, DICOM,
// databases). Drivers live in formats/drivers/, one file each; the helpers they share in formats/.
#pragma once

#include <memory>
#include <span>

#include "formats/slide_model.h"
#include "io/source.h"
#include "tiff/tiff_file.h"

namespace tilewise::formats {

// What a driver is asked about: the opened source, and its directories when it reads as a TIFF file.
struct Probe {
  std::shared_ptr<const io::Source> source;
  std::shared_ptr<const tiff::TiffFile> tiff;  // null: not read as TIFF (a dual-personality DICOM file is DICOM)
  // The image to open, for formats of several (OpenOptions::scene): a driver that reads scenes checks it
  // against the scenes it lists; for the others open_model accepts only scene 0.
  std::optional<int32_t> scene;
};

// Which files a driver is asked about: those read as TIFF (probe.tiff set) or the others.
enum class Reads { kTiff, kSource };

struct FormatDriver {
  const char* name;
  Reads reads;
  // Ok when this driver recognises the file; otherwise a status whose message says why not.
  Status (*detect)(const Probe& probe);
  Result<SlideModel> (*open)(const Probe& probe);
};

std::span<const FormatDriver> format_table();

// Parses the source and opens it with the first driver that recognises it. The returned error names the
// file: Unsupported when no driver recognises it, otherwise the driver's error.
Result<SlideModel> open_model(std::shared_ptr<const io::Source> source, const OpenOptions& options = {});

// The vendor name of the driver that recognises the file, without opening it; empty when none.
std::string detect_vendor(std::shared_ptr<const io::Source> source);

// True for a path naming a local folder; a folder is opened through slide_file_in_folder().
bool is_folder(const std::string& path);
// The file a folder opens as: its first DICOM WSI file by name (the DICOM driver then finds the rest of
// its series beside it; a folder of several series opens as that first file's). InvalidArgument when it
// holds none (a directory is not a slide).
Result<std::string> slide_file_in_folder(const std::string& folder);

// Drivers (one file each under src/formats/drivers/).
extern const FormatDriver kAperioDriver;
extern const FormatDriver kLeicaDriver;
extern const FormatDriver kPhilipsDriver;
extern const FormatDriver kVentanaDriver;
extern const FormatDriver kTrestleDriver;
extern const FormatDriver kHamamatsuNdpiDriver;
extern const FormatDriver kHamamatsuVmsDriver;
extern const FormatDriver kMiraxDriver;
extern const FormatDriver kSakuraDriver;
extern const FormatDriver kZeissDriver;
extern const FormatDriver kOlympusVsiDriver;
extern const FormatDriver kDicomDriver;
extern const FormatDriver kQptiffDriver;
extern const FormatDriver kOmeTiffDriver;
extern const FormatDriver kGenericTiffDriver;

}  // namespace tilewise::formats
