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
    kOlympusVsiDriver,
    kDicomDriver,
    kHamamatsuVmsDriver,
    kHamamatsuNdpiDriver,
    kQptiffDriver,
    kOmeTiffDriver,
    kGenericTiffDriver,
};
}  // namespace

std::span<const FormatDriver> format_table() { return kTable; }

namespace {

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

namespace {

// The probe of `source`: its TIFF directories parsed when it reads as TIFF.
Result<Probe> probe_of(std::shared_ptr<const io::Source> source) {
  Probe probe{std::move(source), nullptr};
  if (reads_as_tiff(*probe.source)) {
    TW_ASSIGN_OR_RETURN(probe.tiff, tiff::TiffFile::parse(probe.source));
  }
  return probe;
}

// The first driver of the probe's kind that recognises it, else nullptr (`reasons` says why not).
const FormatDriver* recognising_driver(const Probe& probe, std::string& reasons) {
  const Reads kind = probe.tiff ? Reads::kTiff : Reads::kSource;
  for (const FormatDriver& driver : format_table()) {
    if (driver.reads != kind) continue;
    const Status detected = driver.detect(probe);
    if (detected.ok()) return &driver;
    reasons += std::string(reasons.empty() ? "" : "; ") + driver.name + ": " + detected.message();
  }
  return nullptr;
}

}  // namespace

Result<SlideModel> open_model(std::shared_ptr<const io::Source> source, const OpenOptions& options) {
  const std::string name = source->name();
  TW_ASSIGN_OR_RETURN(Probe probe, probe_of(std::move(source)));
  if (options.scene && *options.scene < 0) {
    return invalid_argument(name + ": scene " + std::to_string(*options.scene) + " does not exist");
  }
  probe.scene = options.scene;
  std::string reasons;
  if (const FormatDriver* driver = recognising_driver(probe, reasons)) {
    auto model = driver->open(probe);
    if (!model.ok()) return driver_error(model.status(), name, driver->name);
    const size_t scene_count = std::max<size_t>(model->scenes.size(), 1);
    if (options.scene && static_cast<size_t>(*options.scene) >= scene_count) {
      return invalid_argument(name + ": scene " + std::to_string(*options.scene) + " does not exist (the file has " +
                              std::to_string(scene_count) + ")");
    }
    model->scene = options.scene;
    TW_RETURN_IF_ERROR(check_planes(*model, name));
    if (model->axes.rgb && model->axes.channel_info.empty()) {
      for (const char* c : {"R", "G", "B"}) model->axes.channel_info.push_back({c, {}, {}, {}, {}});
      model->axes.channel_info[0].color = std::array<uint8_t, 3>{255, 0, 0};
      model->axes.channel_info[1].color = std::array<uint8_t, 3>{0, 255, 0};
      model->axes.channel_info[2].color = std::array<uint8_t, 3>{0, 0, 255};
    }
    return model;
  }
  if (probe.tiff) return unsupported(name + ": not a slide format tilewise reads (" + reasons + ")");
  // An empty file can still be a slide (a MIRAX .mrxs: its folder holds the data).
  if (probe.source->size() == 0) return unsupported(name + ": file is empty");
  return unsupported(name + ": not a TIFF file, nor a slide file tilewise reads otherwise (" + reasons + ")");
}

std::string detect_vendor(std::shared_ptr<const io::Source> source) {
  auto probe = probe_of(std::move(source));
  if (!probe.ok()) return "";
  std::string reasons;
  const FormatDriver* driver = recognising_driver(*probe, reasons);
  return driver ? driver->name : "";
}

}  // namespace tilewise::formats
