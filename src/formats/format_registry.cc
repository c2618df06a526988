#include "formats/format_registry.h"

#include "dicom/data_set.h"

namespace tilewise::formats {

namespace {
// Order matters: a vendor driver must come before any driver whose detection its files would also pass.
const FormatDriver kTable[] = {
    kAperioDriver,
    kLeicaDriver,
    kPhilipsDriver,
    kVentanaDriver,
    kTrestleDriver,
    kMiraxDriver,
    kSakuraDriver,
    kZeissDriver,
    kDicomDriver,
    kHamamatsuVmsDriver,
    kHamamatsuNdpiDriver,
    kOmeTiffDriver,
    kGenericTiffDriver,
};
}  // namespace

std::span<const FormatDriver> format_table() { return kTable; }

namespace {

// The first driver of a file that is not TIFF that recognises it, else nullptr (`reasons` says why not).
const FormatDriver* source_driver(const io::Source& source, std::string& reasons) {
  for (const FormatDriver& driver : format_table()) {
    if (!driver.detect_source) continue;
    Status detected = driver.detect_source(source);
    if (detected.ok()) return &driver;
    reasons += std::string(reasons.empty() ? "" : "; ") + driver.name + ": " + detected.message();
  }
  return nullptr;
}

// A DICOM file whose preamble is also a TIFF header (a dual-personality DICOM-TIFF) is read as DICOM
// unless its name ends in .tif or .tiff, as OpenSlide decides.
bool reads_as_tiff(const io::Source& source) {
  if (!tiff::TiffFile::has_tiff_header(source)) return false;
  if (!dicom::has_part10_header(source)) return true;
  const std::string& name = source.name();
  return name.ends_with(".tif") || name.ends_with(".tiff");
}

// A driver's error, prefixed "<file>: <driver>: " once: messages that already start with the file's name
// (a driver naming the instance that failed, which is often the opened one) do not repeat it.
Status driver_error(const Status& s, const std::string& name, const char* driver) {
  const std::string& m = s.message();
  const std::string own = name + ": ";
  if (m.rfind(own, 0) == 0) return Status(s.code(), own + driver + ": " + m.substr(own.size()));
  return s.with_context(name + ": " + driver);
}

}  // namespace

Result<SlideModel> open_model(std::shared_ptr<const io::Source> source) {
  const std::string& name = source->name();
  if (!reads_as_tiff(*source)) {
    std::string reasons;
    if (const FormatDriver* driver = source_driver(*source, reasons)) {
      auto model = driver->open_source(source);
      if (!model.ok()) return driver_error(model.status(), name, driver->name);
      return model;
    }
    // An empty file can still be a slide (a MIRAX .mrxs: its folder holds the data).
    if (source->size() == 0) return unsupported(name + ": file is empty");
    return unsupported(name + ": not a TIFF file, nor a slide file tilewise reads otherwise (" + reasons + ")");
  }
  auto tiff = tiff::TiffFile::parse(source);
  if (!tiff.ok()) return tiff.status();
  std::string reasons;
  for (const FormatDriver& driver : format_table()) {
    if (!driver.detect) continue;
    Status detected = driver.detect(**tiff);
    if (!detected.ok()) {
      reasons += std::string(reasons.empty() ? "" : "; ") + driver.name + ": " + detected.message();
      continue;
    }
    auto model = driver.open(*tiff);
    if (!model.ok()) return driver_error(model.status(), name, driver.name);
    return model;
  }
  return unsupported(name + ": not a slide format tilewise reads (" + reasons + ")");
}

std::string detect_vendor(std::shared_ptr<const io::Source> source) {
  if (!reads_as_tiff(*source)) {
    std::string reasons;
    const FormatDriver* driver = source_driver(*source, reasons);
    return driver ? driver->name : "";
  }
  auto tiff = tiff::TiffFile::parse(source);
  if (!tiff.ok()) return "";
  for (const FormatDriver& driver : format_table()) {
    if (driver.detect && driver.detect(**tiff).ok()) return driver.name;
  }
  return "";
}

}  // namespace tilewise::formats
