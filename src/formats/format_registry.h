// The ordered table of format drivers (OpenSlide's formats[] table): specific vendors first, generic TIFF
// last. open_model() asks each driver in order whether it recognises the file and opens it with the first
// that does: TIFF drivers get the parsed TIFF, the others (index files such as Hamamatsu VMS) the source.
#pragma once

#include <memory>
#include <span>

#include "formats/slide_model.h"
#include "io/source.h"
#include "tiff/tiff_file.h"

namespace tilewise::formats {

struct FormatDriver {
  const char* name;
  // TIFF drivers: ok when this driver recognises the file; otherwise a status whose message says why not.
  Status (*detect)(const tiff::TiffFile& tiff);
  Result<SlideModel> (*open)(std::shared_ptr<const tiff::TiffFile> tiff);
  // Drivers of files that are not TIFF: the same, from the opened source (its first bytes, its text).
  Status (*detect_source)(const io::Source& source) = nullptr;
  Result<SlideModel> (*open_source)(std::shared_ptr<const io::Source> source) = nullptr;
};

std::span<const FormatDriver> format_table();

// Parses the source and opens it with the first driver that recognises it. The returned error names the
// file: Unsupported when no driver recognises it, otherwise the driver's error.
Result<SlideModel> open_model(std::shared_ptr<const io::Source> source);

// The vendor name of the driver that recognises the file, without opening it; empty when none.
std::string detect_vendor(std::shared_ptr<const io::Source> source);

// True for a path naming a local folder; a folder is opened through slide_file_in_folder().
bool is_folder(const std::string& path);
// The file a folder opens as: its first DICOM WSI file by name (the DICOM driver then finds the rest of
// its series beside it; a folder of several series opens as that first file's). InvalidArgument when it
// holds none (a directory is not a slide).
Result<std::string> slide_file_in_folder(const std::string& folder);

// Drivers (one file each under src/formats/).
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
extern const FormatDriver kDicomDriver;
extern const FormatDriver kOmeTiffDriver;
extern const FormatDriver kGenericTiffDriver;

}  // namespace tilewise::formats
