// DICOM VL Whole Slide Microscopy Image series (OpenSlide's "dicom" vendor), from any one of its files.
//
// Detection, as OpenSlide 4.0.1: a Part 10 file whose Media Storage SOP Class is VL Whole Slide Microscopy
// Image Storage (1.2.840.10008.5.1.4.1.1.77.1.6); TIFF files are left to the TIFF drivers. The folder of
// the opened file is scanned (not recursively) for the other instances of its Series Instance UID (and of
// its Pyramid UID, where both have one: a series may hold several pyramids); the Image Type's third value
// (the flavour) gives each one's role: VOLUME instances are pyramid levels, grouped by Total Pixel Matrix
// size (several files of one size form one level when they share a Concatenation UID), LABEL, OVERVIEW and
// THUMBNAIL instances are the associated images label, macro and thumbnail; others are ignored with a
// warning, as are copies of an instance already seen (same SOP Instance UID). Over HTTP(S) or from memory
// there is no folder to scan: the opened instance alone is the slide.
//
// A DICOMweb series (io/dicomweb.h: the probe's source is the series; its instances: dicom_web.cc) is read from its metadata: each
// instance's DICOM JSON made a dataset (dicom/json_model.h), its frames fetched by number (UnitStream::kFrame)
// in the transfer syntax the server answers in; the same levels, planes, associated images and properties
// follow, but for the file meta elements only a file has (group length, version, implementation).
//
// A level is a grid of frames per plane: TILED_FULL frames in row-major order, then by focal plane, then by
// optical path (as the instance's Optical Path Sequence lists them), TILED_SPARSE frames where their Plane
// Position (Slide) puts them, in the focal plane of their Z offset and the optical path their Optical Path
// Identification names; tiles no frame covers absent (read as background; the openslide module makes them
// transparent, as OpenSlide does). Several instances of one size are one level: the parts of a
// concatenation, or instances of other optical paths or focal planes. Encapsulated frames are found through
// the Extended or Basic Offset Table or by walking the fragments (dicom/data_set.h); a frame of several
// fragments is read as a run of items (UnitStream::kItems).
//
// Planes: the optical paths are the channels (named by their description, else their identifier; the
// illumination wavelength is the excitation), the focal planes (Z offsets in micrometres: TILED_FULL
// planes at the instance's Z offset plus its Spacing Between Slices) the Z axis, in ascending order. One RGB
// plane is a brightfield slide; RGB images with several focal planes or optical paths read as RGB planes,
// MONOCHROME2 ones as their own 8- or 16-bit samples.
//
// Transfer syntaxes: explicit and implicit VR little endian (RGB; grey of 8 or 16 bits), JPEG baseline
// (YBR_FULL_422, YBR_FULL or RGB components; 8-bit grey), JPEG 2000 and JPEG 2000 lossless (RGB, YBR_ICT,
// YBR_RCT: the codestream's own colour transform; grey of 8 or 16 bits), and JPEG-LS lossless and
// near-lossless (CharLS; RGB, grey of 8 or 16 bits; OpenSlide refuses these).
//
// Properties: `dicom.*` from the level-0 instance (formats/dicom_properties.h); openslide.mpp-x/-y from its
// Pixel Spacing (column and row spacing, millimetres), objective power from the first optical path;
// quickhash-1 over the Series Instance UID; the ICC profile of the first optical path, per associated
// image too.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "dicom/data_set.h"
#include "formats/dicom_properties.h"
#include "formats/drivers/dicom_instance.h"
#include "formats/format_registry.h"
#include "formats/level_builder.h"
#include "formats/property_parsing.h"
#include "formats/quickhash.h"
#include "formats/tiff_properties.h"
#include "io/dicomweb.h"
#include "io/object_listing.h"
#include "util/checked_math.h"

namespace tilewise::formats {

using dicom_wsi::Instance;

namespace {

using dicom::tag;

constexpr const char* kWsiStorage = "1.2.840.10008.5.1.4.1.1.77.1.6";
constexpr uint32_t kMediaStorageSopClass = tag(0x0002, 0x0002);
constexpr uint32_t kImageType = tag(0x0008, 0x0008);
constexpr uint32_t kSopInstanceUid = tag(0x0008, 0x0018);
constexpr uint32_t kPyramidUid = tag(0x0008, 0x0019);
constexpr uint32_t kSeriesInstanceUid = tag(0x0020, 0x000E);
constexpr uint32_t kConcatenationUid = tag(0x0020, 0x9161);
constexpr uint32_t kInConcatenationNumber = tag(0x0020, 0x9162);
constexpr uint32_t kConcatenationFrameOffset = tag(0x0020, 0x9228);
constexpr uint32_t kSamplesPerPixel = tag(0x0028, 0x0002);
constexpr uint32_t kPhotometric = tag(0x0028, 0x0004);
constexpr uint32_t kPlanarConfiguration = tag(0x0028, 0x0006);
constexpr uint32_t kNumberOfFrames = tag(0x0028, 0x0008);
constexpr uint32_t kRows = tag(0x0028, 0x0010);
constexpr uint32_t kColumns = tag(0x0028, 0x0011);
constexpr uint32_t kBitsAllocated = tag(0x0028, 0x0100);
constexpr uint32_t kBitsStored = tag(0x0028, 0x0101);
constexpr uint32_t kPixelRepresentation = tag(0x0028, 0x0103);
constexpr uint32_t kIccProfile = tag(0x0028, 0x2000);
constexpr uint32_t kTotalColumns = tag(0x0048, 0x0006);
constexpr uint32_t kTotalRows = tag(0x0048, 0x0007);
constexpr uint32_t kOpticalPathSequence = tag(0x0048, 0x0105);
constexpr uint32_t kNumberOfOpticalPaths = tag(0x0048, 0x0302);
constexpr uint32_t kTotalFocalPlanes = tag(0x0048, 0x0303);
constexpr uint32_t kDimensionOrganization = tag(0x0020, 0x9311);
constexpr uint32_t kInstanceNumber = tag(0x0020, 0x0013);
constexpr uint32_t kOpticalPathIdentifier = tag(0x0048, 0x0106);
constexpr uint32_t kOpticalPathDescription = tag(0x0048, 0x0107);
constexpr uint32_t kIlluminationWavelength = tag(0x0022, 0x0055);
constexpr uint32_t kTotalPixelMatrixOrigin = tag(0x0048, 0x0008);
constexpr uint32_t kSharedGroups = tag(0x5200, 0x9229);
constexpr uint32_t kPlanePositionSlide = tag(0x0048, 0x021A);
constexpr uint32_t kPixelMeasures = tag(0x0028, 0x9110);
constexpr uint32_t kSpacingBetweenSlices = tag(0x0018, 0x0088);
constexpr uint32_t kZOffset = tag(0x0040, 0x074A);


// A number stored as a decimal string (DS) or a binary float (FL, FD).
std::optional<double> decimal(const dicom::DataSet* d, uint32_t t) {
  const dicom::Element* e = d ? d->find(t) : nullptr;
  if (e == nullptr) return std::nullopt;
  std::optional<double> v;
  if (e->vr_view() == "FL" || e->vr_view() == "FD") {
    const std::vector<double> values = dicom::float_values(*e);
    if (!values.empty()) v = values[0];
  } else if (auto text = d->string(t)) {
    v = parse_double(*text);
  }
  return v && std::isfinite(*v) ? v : std::nullopt;
}

// The instance's optical paths and focal planes (see the header comment).
void read_planes(Instance& in) {
  const dicom::DataSet& d = in.file.dataset;
  if (const dicom::Element* seq = d.find(kOpticalPathSequence)) {
    for (const dicom::DataSet& item : seq->items) in.paths.push_back(item.string(kOpticalPathIdentifier).value_or(""));
  }
  if (in.paths.empty()) in.paths.push_back("");
  in.focal_planes = std::clamp<int64_t>(d.integer(kTotalFocalPlanes).value_or(1), 1, 65535);
  const dicom::DataSet* shared = d.item(kSharedGroups);
  auto z = decimal(d.item(kTotalPixelMatrixOrigin), kZOffset);
  if (!z && shared) z = decimal(shared->item(kPlanePositionSlide), kZOffset);
  in.z0 = z.value_or(0);
  if (shared) in.z_spacing = decimal(shared->item(kPixelMeasures), kSpacingBetweenSlices).value_or(0) * 1000.0;
}

std::string name_of(const Instance& i) { return i.source->name(); }

}  // namespace

Status dicom_wsi::check_sop_class(const dicom::File& file) {
  auto sop = file.meta.string(kMediaStorageSopClass);
  if (!sop || *sop != kWsiStorage) return unsupported("Not a WSI DICOM: class UID " + sop.value_or("(none)"));
  return Status();
}

namespace {

Status is_dicom_wsi(const io::Source& source) {
  if (!dicom::has_part10_header(source)) return unsupported("not a DICOM file");
  TW_ASSIGN_OR_RETURN(dicom::File meta, dicom::parse(source, /*meta_only=*/true));
  return dicom_wsi::check_sop_class(meta);
}

}  // namespace

// An instance from its parsed file (or its DICOM JSON).
Result<Instance> dicom_wsi::load_parsed(std::shared_ptr<const io::Source> source, dicom::File file) {
  Instance in;
  in.file = std::move(file);
  in.source = std::move(source);
  TW_RETURN_IF_ERROR(dicom_wsi::check_sop_class(in.file));
  const dicom::DataSet& d = in.file.dataset;
  auto series = d.string(kSeriesInstanceUid);
  if (!series) return corrupt("SeriesInstanceUID not found");
  in.series = *series;
  in.sop_instance = d.string(kSopInstanceUid).value_or("");
  in.pyramid = d.string(kPyramidUid).value_or("");
  in.flavour = d.string(kImageType, 2).value_or("");
  in.concatenation = d.string(kConcatenationUid).value_or("");
  in.concat_number = d.integer(kInConcatenationNumber).value_or(1);
  in.frame_offset = d.integer(kConcatenationFrameOffset).value_or(0);
  in.frames = d.integer(kNumberOfFrames).value_or(1);
  in.instance_number = d.integer(kInstanceNumber).value_or(0);
  auto w = d.integer(kTotalColumns), h = d.integer(kTotalRows), tw = d.integer(kColumns), th = d.integer(kRows);
  if (!tw || !th) return corrupt("Couldn't read the frame size (Rows, Columns)");
  in.tile_width = static_cast<int32_t>(std::clamp<int64_t>(*tw, 0, 1 << 30));
  in.tile_height = static_cast<int32_t>(std::clamp<int64_t>(*th, 0, 1 << 30));
  in.width = w.value_or(*tw);
  in.height = h.value_or(*th);
  if (in.width <= 0 || in.height <= 0 || in.tile_width <= 0 || in.tile_height <= 0 || in.width > (1ll << 31) ||
      in.height > (1ll << 31)) {
    return corrupt("invalid image size " + std::to_string(in.width) + "x" + std::to_string(in.height) +
                   " in frames of " + std::to_string(*tw) + "x" + std::to_string(*th));
  }
  if (in.frames <= 0 || in.frames > 50'000'000) return corrupt("invalid NumberOfFrames " + std::to_string(in.frames));
  if (in.frame_offset < 0) return corrupt("invalid ConcatenationFrameOffsetNumber");
  read_planes(in);
  return in;
}

namespace {

Result<Instance> load(std::shared_ptr<const io::Source> source) {
  TW_ASSIGN_OR_RETURN(dicom::File file, dicom::parse(*source));
  return dicom_wsi::load_parsed(std::move(source), std::move(file));
}

Status expect(const dicom::DataSet& d, uint32_t t, int64_t value, const char* name, bool required) {
  auto v = d.integer(t);
  if (!v) return required ? corrupt(std::string("Couldn't read ") + name) : Status();
  if (*v != value) {
    return unsupported(std::string("Attribute ") + name + " value " + std::to_string(*v) +
                       " != " + std::to_string(value));
  }
  return Status();
}

// The codec description of an instance's frames, refusing what tilewise cannot decode.
Result<codecs::TileDesc> describe(const Instance& in) {
  const dicom::DataSet& d = in.file.dataset;
  const int64_t samples = d.integer(kSamplesPerPixel).value_or(0);
  if (samples != 1 && samples != 3) {
    TW_RETURN_IF_ERROR(expect(d, kSamplesPerPixel, 3, "SamplesPerPixel", true));
  }
  const bool grey = samples == 1;
  const int64_t bits = d.integer(kBitsAllocated).value_or(0);
  if (!(bits == 8 || (grey && bits == 16))) TW_RETURN_IF_ERROR(expect(d, kBitsAllocated, 8, "BitsAllocated", true));
  const int64_t stored = d.integer(kBitsStored).value_or(0);
  if (stored < 1 || stored > bits) TW_RETURN_IF_ERROR(expect(d, kBitsStored, bits, "BitsStored", true));
  TW_RETURN_IF_ERROR(expect(d, kPixelRepresentation, 0, "PixelRepresentation", true));
  TW_RETURN_IF_ERROR(expect(d, kPlanarConfiguration, 0, "PlanarConfiguration", false));
  const std::string photometric = d.string(kPhotometric).value_or("");
  const std::string& ts = in.file.transfer_syntax;
  codecs::TileDesc desc;
  desc.width = in.tile_width;
  desc.height = in.tile_height;
  desc.samples_per_pixel = static_cast<int32_t>(samples);
  desc.bits_per_sample = static_cast<int32_t>(bits);
  desc.color = grey ? codecs::ColorSpace::kMinIsBlack : codecs::ColorSpace::kRgb;
  auto refuse = [&] { return unsupported("Unsupported photometric interpretation " + photometric + " for " + ts); };
  if (grey && photometric != "MONOCHROME2") return refuse();
  const bool rgb = !grey && photometric == "RGB";
  if (ts == "1.2.840.10008.1.2.1" || ts == "1.2.840.10008.1.2") {
    desc.compression = codecs::Compression::kNone;
    if (!grey && !rgb) return refuse();
  } else if (ts == "1.2.840.10008.1.2.4.50") {
    desc.compression = codecs::Compression::kJpeg;
    if (bits != 8) return unsupported(std::to_string(bits) + "-bit samples in " + ts);
    if (photometric == "YBR_FULL_422" || photometric == "YBR_FULL") {
      desc.color = codecs::ColorSpace::kYCbCr;
    } else if (!grey && !rgb) {
      return refuse();
    }
  } else if (ts == "1.2.840.10008.1.2.4.90" || ts == "1.2.840.10008.1.2.4.91") {
    desc.compression = codecs::Compression::kJpeg2000;  // the codestream's component transform gives RGB
    if (!grey && !rgb && photometric != "YBR_ICT" && photometric != "YBR_RCT") return refuse();
  } else if (ts == "1.2.840.10008.1.2.4.80" || ts == "1.2.840.10008.1.2.4.81") {
    desc.compression = codecs::Compression::kJpegLs;
    if (!grey && !rgb) return refuse();
  } else {
    return unsupported("Unsupported transfer syntax " + ts);
  }
  if (in.by_number) return desc;  // no Pixel Data element: the server answers frame by frame
  if (!in.file.pixel_data) return corrupt("no Pixel Data");
  if (in.file.pixel_data->encapsulated != (desc.compression != codecs::Compression::kNone)) {
    return corrupt(std::string("Pixel Data is ") + (in.file.pixel_data->encapsulated ? "" : "not ") +
                   "encapsulated, but the transfer syntax is " + ts);
  }
  if (!ModelLimits{}.unit_fits(static_cast<uint64_t>(desc.width), static_cast<uint64_t>(desc.height))) {
    return unsupported("frames of " + std::to_string(uint64_t(desc.width) * uint64_t(desc.height) * 3) +
                       " bytes are too large to decode");
  }
  return desc;
}

}  // namespace

// The transfer syntaxes describe() (above) accepts.
bool dicom_wsi::decodable(const std::string& ts) {
  static const std::set<std::string> kDecoded = {"1.2.840.10008.1.2",      "1.2.840.10008.1.2.1",
                                                 "1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.4.90",
                                                 "1.2.840.10008.1.2.4.91", "1.2.840.10008.1.2.4.80",
                                                 "1.2.840.10008.1.2.4.81"};
  return kDecoded.count(ts) > 0;
}

namespace {

// Every frame's byte range in an instance.
Result<std::vector<dicom::FrameRange>> frame_ranges(const Instance& in, const codecs::TileDesc& desc) {
  if (in.by_number) {
    // UnitStream::kFrame: the frame number, and an estimate of its bytes (its samples; an eighth of them
    // compressed), which bounds how many regions' frames one prefetch of a batch gathers
    uint64_t estimate = uint64_t(desc.width) * uint64_t(desc.height) *
                        static_cast<uint64_t>(desc.samples_per_pixel * desc.bits_per_sample / 8);
    if (desc.compression != codecs::Compression::kNone) estimate = std::max<uint64_t>(1, estimate / 8);
    std::vector<dicom::FrameRange> out;
    for (int64_t i = 0; i < in.frames; ++i) out.push_back({static_cast<uint64_t>(i + 1), estimate, false});
    return out;
  }
  const dicom::PixelData& pd = *in.file.pixel_data;
  if (pd.encapsulated) return dicom::locate_frames(*in.source, in.file, static_cast<uint64_t>(in.frames));
  const uint64_t frame_bytes = uint64_t(desc.width) * uint64_t(desc.height) *
                               static_cast<uint64_t>(desc.samples_per_pixel * desc.bits_per_sample / 8);
  auto total = internal::checked_mul(frame_bytes, static_cast<uint64_t>(in.frames));
  if (!total || pd.length < *total || !internal::range_inside(pd.offset, *total, in.source->size())) {
    return corrupt("Pixel Data holds " + std::to_string(pd.length) + " bytes, " + std::to_string(in.frames) +
                   " frames of " + std::to_string(frame_bytes) + " need more (or the file is cut short)");
  }
  std::vector<dicom::FrameRange> out;
  for (int64_t i = 0; i < in.frames; ++i)
    out.push_back({pd.offset + static_cast<uint64_t>(i) * frame_bytes, frame_bytes, false});
  return out;
}

// A plane of a level: its optical path and focal plane (micrometres, rounded to 0.1 nm so that equal
// offsets computed two ways compare equal).
struct PlaneKey {
  std::string path;
  double z = 0;
  bool operator==(const PlaneKey& o) const { return path == o.path && z == o.z; }
};

double rounded_z(double z) { return std::round(z * 1e4) / 1e4; }

// Where frame i of an instance goes: its plane and its tile index, or false for a frame past the instance's
// planes (TILED_FULL) or off the grid. `tiles`: the level's tile count per plane.
struct FramePlace {
  PlaneKey key;
  int64_t index = 0;
};

Result<std::optional<FramePlace>> place_frame(const Instance& in, int64_t i, bool positioned, const LevelModel& level,
                                              const codecs::TileDesc& desc, int64_t width, int64_t height) {
  FramePlace place;
  if (positioned) {
    const dicom::FramePosition& p = in.file.frame_positions[static_cast<size_t>(i)];
    if (!p.has_position) return corrupt(name_of(in) + ": frame " + std::to_string(i + 1) + " has no Plane Position (Slide)");
    const int64_t x = p.column - 1, y = p.row - 1;
    if (x < 0 || y < 0 || x % desc.width || y % desc.height || x >= width || y >= height) {
      return unsupported(name_of(in) + ": frame " + std::to_string(i + 1) + " at (" + std::to_string(p.column) + "," +
                         std::to_string(p.row) + ") is not on the " + std::to_string(desc.width) + "x" +
                         std::to_string(desc.height) + " tile grid");
    }
    place.index = (y / desc.height) * level.tiles_across + x / desc.width;
    place.key.path = p.optical_path < in.file.frame_optical_paths.size() ? in.file.frame_optical_paths[p.optical_path]
                                                                         : in.paths[0];
    place.key.z = rounded_z(p.has_z ? p.z_offset : in.z0);
    return std::optional<FramePlace>(place);
  }
  const int64_t tiles = level.tiles_across * level.tiles_down;
  const int64_t frame = in.frame_offset + i, plane = frame / tiles;
  const int64_t path = plane / in.focal_planes;
  if (path >= static_cast<int64_t>(in.paths.size())) return std::optional<FramePlace>();
  place.index = frame % tiles;
  place.key.path = in.paths[static_cast<size_t>(path)];
  const double spacing = in.z_spacing > 0 ? in.z_spacing : 1.0;  // planes without a spacing: 1 um apart
  place.key.z = rounded_z(in.z0 + static_cast<double>(plane % in.focal_planes) * spacing);
  return std::optional<FramePlace>(place);
}

// One level (or associated image) from the instances of one size - a concatenation, instances of other
// optical paths or focal planes, or a single instance - as one LevelModel per plane, in the order the
// frames name them.
Result<std::vector<std::pair<PlaneKey, LevelModel>>> build_planes(const std::vector<const Instance*>& files,
                                                                  std::vector<std::string>& warnings,
                                                                  const std::string& what) {
  const Instance& first = *files[0];
  auto described = describe(first);
  if (!described.ok()) return described.status().with_context(name_of(first));
  const codecs::TileDesc desc = *described;
  LevelModel level = grid_level(first.width, first.height, desc);
  level.info.samples_per_pixel = desc.samples_per_pixel;
  // The frames first: where they lie is checked against the file, so their number bounds the grid below.
  std::vector<std::vector<dicom::FrameRange>> ranges_of(files.size());
  uint64_t frames = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const Instance& in = *files[f];
    codecs::TileDesc d = desc;  // the first file's, described above; the others of the level must agree
    if (f > 0) {
      auto other = describe(in);
      if (!other.ok()) return other.status().with_context(name_of(in));  // the instance that failed
      d = *other;
    }
    if (d.width != desc.width || d.height != desc.height || d.compression != desc.compression ||
        d.color != desc.color || d.samples_per_pixel != desc.samples_per_pixel ||
        d.bits_per_sample != desc.bits_per_sample || in.width != first.width || in.height != first.height) {
      return corrupt(name_of(in) + ": frames differ from the level's (" + std::to_string(d.width) + "x" +
                     std::to_string(d.height) + " " + codecs::compression_name(d.compression) + ")");
    }
    auto ranges = frame_ranges(in, desc);
    if (!ranges.ok()) return ranges.status().with_context(name_of(in));
    ranges_of[f] = std::move(ranges).value();
    frames += ranges_of[f].size();
  }
  // The unit tables hold every grid position of every plane. A sparse (TILED_SPARSE) level may leave most of
  // them empty, but not more than 1,023 in 1,024: a small file that claims a huge matrix fails here instead
  // of allocating gigabytes of tables (a fuzz input asked for 1.3 GB).
  const auto count =
      internal::checked_mul(static_cast<uint64_t>(level.tiles_across), static_cast<uint64_t>(level.tiles_down));
  if (!count || *count > 200'000'000 || *count > std::max<uint64_t>(frames * 1024, uint64_t{1} << 20)) {
    return corrupt(name_of(first) + ": " + what + ": too many tiles (" +
                   (count ? std::to_string(*count) : std::string("an overflowing number of")) + " for " +
                   std::to_string(frames) + " frames)");
  }
  struct Building {
    PlaneKey key;
    UnitTable units;
    std::vector<bool> items_form;
  };
  std::vector<Building> planes;
  auto plane_of = [&](const PlaneKey& key) -> Result<Building*> {
    for (Building& b : planes) {
      if (b.key == key) return &b;
    }
    if (planes.size() >= 4096 || (planes.size() + 1) * *count > std::max<uint64_t>(frames * 1024, uint64_t{1} << 20)) {
      return corrupt(name_of(first) + ": " + what + ": frames name too many planes (" + std::to_string(planes.size() + 1) +
                     " for " + std::to_string(frames) + " frames)");
    }
    Building& b = planes.emplace_back();
    b.key = key;
    b.units.offsets.assign(*count, 0);
    b.units.lengths.assign(*count, 0);
    if (files.size() > 1) b.units.part.assign(*count, 0);
    b.items_form.assign(*count, false);
    return &b;
  };
  auto parts = std::make_shared<std::vector<UnitPart>>();
  int64_t extra = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const Instance& in = *files[f];
    const std::vector<dicom::FrameRange>& ranges = ranges_of[f];
    const std::string organisation = in.file.dataset.string(kDimensionOrganization).value_or("");
    const bool positioned =
        organisation != "TILED_FULL" && in.file.frame_positions.size() == static_cast<size_t>(in.frames);
    parts->push_back({in.source, {}, nullptr});
    for (int64_t i = 0; i < in.frames; ++i) {
      TW_ASSIGN_OR_RETURN(const std::optional<FramePlace> place,
                          place_frame(in, i, positioned, level, desc, first.width, first.height));
      if (!place) {
        ++extra;
        continue;
      }
      TW_ASSIGN_OR_RETURN(Building* plane, plane_of(place->key));
      const size_t index = static_cast<size_t>(place->index);
      if (plane->units.lengths[index] != 0) {
        ++extra;  // a second frame for one tile of a plane: the first is read
        continue;
      }
      const dicom::FrameRange& r = ranges[static_cast<size_t>(i)];
      if (r.length == 0) continue;
      plane->units.offsets[index] = r.offset;
      plane->units.lengths[index] = r.length;
      plane->items_form[index] = r.items;
      if (!plane->units.part.empty()) plane->units.part[index] = static_cast<uint32_t>(f);
    }
  }
  if (extra > 0) {
    warnings.push_back(what + ": " + std::to_string(extra) +
                       " frames beyond the instances' optical paths or repeating a tile of their plane are not read");
  }
  if (planes.empty()) planes.push_back({PlaneKey{first.paths[0], rounded_z(first.z0)}, {}, {}});  // no frames
  std::vector<std::pair<PlaneKey, LevelModel>> out;
  for (Building& b : planes) {
    LevelModel plane = level;
    if (b.units.offsets.empty()) {
      b.units.offsets.assign(*count, 0);
      b.units.lengths.assign(*count, 0);
    }
    if (first.by_number) {
      plane.stream = UnitStream::kFrame;
    } else if (std::find(b.items_form.begin(), b.items_form.end(), true) != b.items_form.end()) {
      plane.stream = UnitStream::kItems;
      for (size_t i = 0; i < *count; ++i) {
        if (b.units.lengths[i] != 0 && !b.items_form[i]) {
          b.units.offsets[i] -= 8;
          b.units.lengths[i] += 8;
        }
      }
    }
    plane.units = std::make_shared<const UnitTable>(std::move(b.units));
    plane.parts = parts;
    out.emplace_back(std::move(b.key), std::move(plane));
  }
  return out;
}

// An associated image: the first plane of its instance.
Result<LevelModel> build_grid(const Instance& in, std::vector<std::string>& warnings, const std::string& what) {
  TW_ASSIGN_OR_RETURN(auto planes, build_planes({&in}, warnings, what));
  return std::move(planes.front().second);
}

std::vector<uint8_t> icc_of(const Instance& in) {
  const dicom::DataSet* path = in.file.dataset.item(kOpticalPathSequence);
  const dicom::Element* icc = path ? path->find(kIccProfile) : nullptr;
  return icc ? icc->value : std::vector<uint8_t>{};
}

bool is_url(const std::string& name) { return name.find("://") != std::string::npos; }

// A folder's regular files (a local folder, or the objects of a bucket's folder), sorted by name.
Result<std::vector<std::string>> sorted_files(const std::string& folder) {
  if (io::is_listable_url(folder)) return io::list_objects_beside(folder);
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) out.push_back(it->path().string());
  }
  if (ec) return io_error(folder + ": cannot list the folder: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// The other files of the opened file's folder, by name (the order decides which of two conflicting
// instances wins, so it must not depend on the file system). From memory there is no folder; a bucket that
// cannot be listed (read access without list access) or an HTTP server that offers no index of the folder
// leaves the instance alone, with a warning.
std::vector<std::string> folder_files(const io::Source& source, std::vector<std::string>& warnings) {
  const std::string& name = source.name();
  if (!source.is_local_file() && !io::is_listable_url(name)) {
    warnings.push_back("opened as one instance: from memory there is no folder to list, so the other instances "
                       "of its series (further levels, label, overview) were not looked for");
    return {};
  }
  std::string folder = name.substr(0, name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  if (source.is_local_file() && folder.empty()) folder = ".";
  auto listed = sorted_files(io::is_listable_url(name) ? name : folder);
  if (!listed.ok() && io::is_http_url(name)) {
    warnings.push_back("opened as one instance: the server offers no index of its folder (" + listed.status().message() +
                       "), so the other instances of its series (further levels, label, overview) were not looked for");
    return {};
  }
  if (!listed.ok()) {
    warnings.push_back(name + ": the other instances of its series were not looked for: " + listed.status().message());
    return {};
  }
  std::vector<std::string> out = std::move(listed).value();
  const std::string own = std::filesystem::path(name).filename().string();
  std::erase_if(out, [&](const std::string& f) { return std::filesystem::path(f).filename() == own; });
  return out;
}

// The channel an optical path is: its description (else its identifier) and illumination wavelength, from
// the level-0 instance that lists it.
ChannelInfo channel_of(const std::string& path, const std::vector<const Instance*>& level0) {
  ChannelInfo info;
  info.name = path;
  for (const Instance* in : level0) {
    const dicom::Element* seq = in->file.dataset.find(kOpticalPathSequence);
    for (const dicom::DataSet& item : seq ? seq->items : std::vector<dicom::DataSet>{}) {
      if (item.string(kOpticalPathIdentifier).value_or("") != path) continue;
      if (auto d = item.string(kOpticalPathDescription); d && !d->empty()) info.name = *d;
      if (auto nm = decimal(&item, kIlluminationWavelength); nm && *nm > 0) info.excitation_nm = nm;
      return info;
    }
  }
  return info;
}

// The model's levels and planes: the optical paths level 0 has are the channels, its focal planes the Z
// axis (ascending). One RGB plane is a brightfield slide; RGB images keep the first optical path only. A
// smaller level without every plane is left out with a warning.
Status add_planes(std::vector<std::vector<std::pair<PlaneKey, LevelModel>>>& levels,
                  const std::vector<const Instance*>& level0, SlideModel& model, std::vector<std::string>& warnings) {
  const std::vector<std::pair<PlaneKey, LevelModel>>& base = levels.front();
  const bool rgb = base.front().second.desc.samples_per_pixel == 3;
  std::vector<std::string> paths;
  std::vector<double> zs;
  for (const auto& [key, level] : base) {
    if (std::find(paths.begin(), paths.end(), key.path) == paths.end()) paths.push_back(key.path);
    if (std::find(zs.begin(), zs.end(), key.z) == zs.end()) zs.push_back(key.z);
  }
  std::sort(zs.begin(), zs.end());
  if (rgb && paths.size() > 1) {
    warnings.push_back(std::to_string(paths.size()) + " optical paths of RGB frames: the first (\"" + paths[0] +
                             "\") is read");
    paths.resize(1);
  }
  ImageAxes& axes = model.axes;
  axes.z = static_cast<int32_t>(zs.size());
  if (zs.size() > 1) axes.z_spacing = zs[1] - zs[0];  // micrometres (plane positions, sorted)
  if (!rgb) {
    axes.rgb = false;
    axes.channels = static_cast<int32_t>(paths.size());
    axes.sample_type = base.front().second.desc.bits_per_sample == 16 ? SampleType::kUint16 : SampleType::kUint8;
    for (const std::string& p : paths) axes.channel_info.push_back(channel_of(p, level0));
  }
  // plane (c, z) -> its level in each pyramid level, where that level has it
  auto find = [](const std::vector<std::pair<PlaneKey, LevelModel>>& level, const std::string& path,
                 double z) -> const LevelModel* {
    for (const auto& [key, model] : level) {
      if (key.path == path && key.z == z) return &model;
    }
    return nullptr;
  };
  std::vector<size_t> kept;
  for (size_t l = 0; l < levels.size(); ++l) {
    bool complete = true;
    for (const std::string& p : paths) {
      for (double z : zs) complete = complete && find(levels[l], p, z) != nullptr;
    }
    if (complete) {
      kept.push_back(l);
    } else {
      warnings.push_back("level of " + std::to_string(levels[l].front().second.info.width) + "x" +
                               std::to_string(levels[l].front().second.info.height) +
                               " pixels left out: it lacks planes level 0 has");
    }
  }
  for (size_t c = 0; c < paths.size(); ++c) {
    for (size_t zi = 0; zi < zs.size(); ++zi) {
      PlaneModel plane{static_cast<int32_t>(c), rgb ? 3 : 1, static_cast<int32_t>(zi), 0, {}};
      for (size_t l : kept) plane.levels.push_back(*find(levels[l], paths[c], zs[zi]));
      compute_downsamples(plane.levels);
      model.planes.push_back(std::move(plane));
    }
  }
  model.levels = model.planes.front().levels;
  if (rgb && model.planes.size() == 1) model.planes.clear();  // brightfield
  return Status();
}

Status detect(const Probe& probe) {
  if (dynamic_cast<const io::DicomWebSeries*>(probe.source.get())) return Status();
  return is_dicom_wsi(*probe.source);
}

// The opened file and the other instances of its folder.
Result<std::vector<Instance>> folder_instances(const std::shared_ptr<const io::Source>& source,
                                               std::vector<std::string>& warnings) {
  TW_ASSIGN_OR_RETURN(Instance start, load(source));
  std::vector<Instance> instances;
  instances.push_back(std::move(start));
  for (const std::string& path : folder_files(*source, warnings)) {
    auto s = io::open_file(path);
    if (!s.ok() || !is_dicom_wsi(**s).ok()) continue;  // not a DICOM WSI file (its file meta alone says so)
    auto in = load(*s);
    if (!in.ok()) {
      warnings.push_back(path + ": ignored: " + in.status().message());
      continue;
    }
    if (in->series != instances[0].series) continue;
    if (!in->pyramid.empty() && !instances[0].pyramid.empty() && in->pyramid != instances[0].pyramid) {
      warnings.push_back(path + ": ignored: another pyramid of the series (Pyramid UID " + in->pyramid + ")");
      continue;
    }
    instances.push_back(std::move(in).value());
  }
  return instances;
}

Result<SlideModel> open(const Probe& probe) {
  std::vector<std::string> warnings;
  const auto* web = dynamic_cast<const io::DicomWebSeries*>(probe.source.get());
  TW_ASSIGN_OR_RETURN(std::vector<Instance> instances,
                      web ? dicom_wsi::web_instances(*web, warnings) : folder_instances(probe.source, warnings));
  if (web) {  // several pyramids in the series: the level-0 instance's
    const std::string pyramid = instances[0].pyramid;
    std::erase_if(instances, [&](const Instance& in) {
      if (in.pyramid.empty() || pyramid.empty() || in.pyramid == pyramid) return false;
      warnings.push_back(name_of(in) + ": ignored: another pyramid of the series (Pyramid UID " + in.pyramid + ")");
      return true;
    });
  }

  SlideModel model;
  model.vendor = "dicom";
  // Levels by size, each the instances of one concatenation in their order; associated images by flavour.
  std::map<std::pair<int64_t, int64_t>, std::vector<const Instance*>, std::greater<>> by_size;
  std::map<std::string, const Instance*> associated;
  std::set<std::string> seen;
  static const std::map<std::string, std::string> kAssociated = {
      {"LABEL", "label"}, {"OVERVIEW", "macro"}, {"THUMBNAIL", "thumbnail"}};
  for (const Instance& in : instances) {
    if (!in.sop_instance.empty() && !seen.insert(in.sop_instance).second) continue;  // a copy of one already seen
    if (in.flavour == "VOLUME") {
      auto& files = by_size[{in.width, in.height}];
      // Instances of one size: the parts of a concatenation, or images of other optical paths or focal planes
      const bool joins = std::all_of(files.begin(), files.end(), [&](const Instance* other) {
        return (!in.concatenation.empty() && in.concatenation == other->concatenation) || in.paths != other->paths ||
               in.z0 != other->z0 || in.focal_planes != other->focal_planes;
      });
      if (!joins) {
        warnings.push_back(name_of(in) + ": ignored: another instance of the series has its size (" +
                           std::to_string(in.width) + "x" + std::to_string(in.height) +
                           "), optical paths and focal planes and is not of its concatenation");
        continue;
      }
      files.push_back(&in);
    } else if (auto a = kAssociated.find(in.flavour); a != kAssociated.end()) {
      if (!associated.emplace(a->second, &in).second) {
        warnings.push_back(name_of(in) + ": ignored: a second " + a->second + " image");
      }
    } else {
      warnings.push_back(name_of(in) + ": ignored: image flavour \"" + in.flavour +
                         "\" is neither a level nor an associated image");
    }
  }
  if (by_size.empty()) return corrupt("No pyramid levels found");
  std::vector<std::vector<std::pair<PlaneKey, LevelModel>>> levels;
  for (auto& [size, files] : by_size) {
    // concatenation parts in their order; instances of other planes by instance number, then name, so that
    // the channels' order does not depend on which file was opened
    std::stable_sort(files.begin(), files.end(), [](const Instance* a, const Instance* b) {
      return std::make_tuple(a->concat_number, a->instance_number, name_of(*a)) <
             std::make_tuple(b->concat_number, b->instance_number, name_of(*b));
    });
    const std::string what = "level " + std::to_string(levels.size());
    auto level = build_planes(files, warnings, what);
    if (!level.ok()) return level.status();  // it names the instance that failed
    levels.push_back(std::move(level).value());
  }
  const Instance& level0 = *by_size.begin()->second[0];
  TW_RETURN_IF_ERROR(add_planes(levels, by_size.begin()->second, model, warnings));

  PropertyMap props;
  for (const auto& [name, in] : associated) {
    auto image = build_grid(*in, warnings, "associated image " + name);
    if (!image.ok()) {
      warnings.push_back("associated image " + name + " not readable: " + image.status().message());
      continue;
    }
    AssociatedModel a{name, std::move(image).value(), {}, icc_of(*in)};
    a.image.info.downsample = 1.0;
    model.associated.push_back(std::move(a));
  }

  add_dicom_properties(level0.file.meta, "dicom", props);
  add_dicom_properties(level0.file.dataset, "dicom", props);
  auto scaled = [&](const std::string& from, const char* to) {
    auto it = props.find(from);
    if (it == props.end()) return;
    if (auto v = parse_double(it->second)) props[to] = format_double(*v * 1000.0);
  };
  const std::string spacing = "dicom.SharedFunctionalGroupsSequence[0].PixelMeasuresSequence[0].PixelSpacing";
  scaled(spacing + "[0]", "openslide.mpp-y");  // row spacing, then column spacing
  scaled(spacing + "[1]", "openslide.mpp-x");
  if (auto it = props.find("dicom.OpticalPathSequence[0].ObjectiveLensPower"); it != props.end()) {
    if (auto v = parse_double(it->second)) props["openslide.objective-power"] = format_double(*v);
  }
  props["openslide.quickhash-1"] = quickhash1_of_string(level0.series);
  model.icc_profile = icc_of(level0);
  model.warnings = std::move(warnings);
  add_standard_properties(model, props);
  return model;
}

}  // namespace

bool is_folder(const std::string& path) {
  // s3://bucket/series/, https://host/series/ (a DICOMweb series URL is no folder)
  if (io::is_listable_url(path)) return path.back() == '/' && !io::is_dicomweb_url(path);
  std::error_code ec;
  return !is_url(path) && std::filesystem::is_directory(path, ec);
}

Result<std::string> slide_file_in_folder(const std::string& folder) {
  TW_ASSIGN_OR_RETURN(const std::vector<std::string> files, sorted_files(folder));
  for (const std::string& f : files) {
    auto s = io::open_file(f);
    if (s.ok() && is_dicom_wsi(**s).ok()) return f;
  }
  return invalid_argument(folder + ": a directory holding no DICOM whole-slide image file");
}

const FormatDriver kDicomDriver = {"dicom", Reads::kSource, &detect, &open};

}  // namespace tilewise::formats
