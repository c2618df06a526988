#include "formats/format_registry.h"

namespace tilewise::formats {

namespace {
// Order matters: a vendor driver must come before any driver whose detection its files would also pass.
const FormatDriver kTable[] = {
    kAperioDriver,
    kPhilipsDriver,
    kHamamatsuNdpiDriver,
    kOmeTiffDriver,
    kGenericTiffDriver,
};
}  // namespace

std::span<const FormatDriver> format_table() { return kTable; }

Result<SlideModel> open_model(std::shared_ptr<const io::Source> source) {
  const std::string& name = source->name();
  if (source->size() == 0) return unsupported(name + ": file is empty");
  auto tiff = tiff::TiffFile::parse(source);
  if (!tiff.ok()) return tiff.status();
  std::string reasons;
  for (const FormatDriver& driver : format_table()) {
    Status detected = driver.detect(**tiff);
    if (!detected.ok()) {
      reasons += std::string(reasons.empty() ? "" : "; ") + driver.name + ": " + detected.message();
      continue;
    }
    auto model = driver.open(*tiff);
    if (!model.ok()) return model.status().with_context(name + ": " + driver.name);
    return model;
  }
  return unsupported(name + ": not a slide format tilewise reads (" + reasons + ")");
}

std::string detect_vendor(std::shared_ptr<const io::Source> source) {
  auto tiff = tiff::TiffFile::parse(source);
  if (!tiff.ok()) return "";
  for (const FormatDriver& driver : format_table()) {
    if (driver.detect(**tiff).ok()) return driver.name;
  }
  return "";
}

}  // namespace tilewise::formats
