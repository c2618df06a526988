#include "write/dicom_wsi_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <sstream>

#include "write/dicom_elements.h"
#include "write/partial_name.h"

namespace tilewise::write {

namespace {

constexpr const char* kWsmImage = "1.2.840.10008.5.1.4.1.1.77.1.6";  // VL Whole Slide Microscopy Image Storage
constexpr const char* kExplicitLittle = "1.2.840.10008.1.2.1";
constexpr const char* kJpegBaseline = "1.2.840.10008.1.2.4.50";
constexpr const char* kJpegLsLossless = "1.2.840.10008.1.2.4.80";
constexpr const char* kJpeg2000Lossless = "1.2.840.10008.1.2.4.90";
constexpr const char* kJpeg2000 = "1.2.840.10008.1.2.4.91";
// tilewise's Implementation Class UID (a UUID-derived OID, PS3.5 B.2)
constexpr const char* kImplementationClass = "2.25.32974590903554012932822747234319577605";
constexpr size_t kRatioWidth = 16;  // a DS value's longest

std::string decimal(double v) {  // a DS value: at most 16 characters
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

template <typename T>
void put_le(std::vector<uint8_t>& out, T value) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

// The level's data set up to Pixel Data (PS3.3 A.32.8: the VL Whole Slide Microscopy Image IOD's modules).
DicomDataSet level_data_set(const DicomSeries& s, const LevelSpec& level, int index, const std::string& sop_uid,
                            int64_t frames) {
  const bool jpeg = level.codec == TileCodec::kJpeg, lossy = jpeg || level.codec == TileCodec::kJpeg2000;
  const std::string image_type = level.associated == "label"   ? "ORIGINAL\\PRIMARY\\LABEL\\NONE"
                                 : level.associated == "macro" ? "ORIGINAL\\PRIMARY\\OVERVIEW\\NONE"
                                 : index == 0                  ? "ORIGINAL\\PRIMARY\\VOLUME\\NONE"
                                                               : "DERIVED\\PRIMARY\\VOLUME\\RESAMPLED";
  const double spacing_x = level.mpp ? level.mpp->first / 1000.0 : s.mpp.first / 1000.0;  // mm
  const double spacing_y = level.mpp ? level.mpp->second / 1000.0 : s.mpp.second / 1000.0;
  DicomDataSet d;
  // SOP Common, General Study, Patient (type 2: empty), General Series, Whole Slide Microscopy Series
  d.str(0x00080005, "CS", "ISO_IR 192");
  d.str(0x00080008, "CS", image_type);
  d.str(0x00080012, "DA", s.date).str(0x00080013, "TM", s.time);
  d.str(0x00080016, "UI", kWsmImage).str(0x00080018, "UI", sop_uid);
  d.str(0x00080019, "UI", s.pyramid_uid);
  d.str(0x00080020, "DA", s.date).str(0x00080023, "DA", s.date).str(0x0008002A, "DT", s.date + s.time);
  d.str(0x00080030, "TM", s.time).str(0x00080033, "TM", s.time);
  d.str(0x00080050, "SH", "").str(0x00080060, "CS", "SM").str(0x00080090, "PN", "");
  d.str(0x00100010, "PN", "").str(0x00100020, "LO", "").str(0x00100030, "DA", "").str(0x00100040, "CS", "");
  d.str(0x0020000D, "UI", s.study_uid).str(0x0020000E, "UI", s.series_uid);
  d.str(0x00200010, "SH", "").str(0x00200011, "IS", "1").str(0x00200013, "IS", std::to_string(index + 1));
  // Enhanced General Equipment: the converter (the scanner is not known to it)
  d.str(0x00080070, "LO", "tilewise").str(0x00081090, "LO", "tilewise convert");
  d.str(0x00181000, "LO", "0").str(0x00181020, "LO", s.software);
  // Frame of Reference
  d.str(0x00200052, "UI", s.frame_of_reference_uid).str(0x00201040, "LO", "SLIDE_CORNER");
  // Multi-frame Dimension: frames indexed by their column and row in the total pixel matrix
  DicomDataSet organization;
  organization.str(0x00209164, "UI", s.dimension_organization_uid);
  d.sequence(0x00209221, {organization});
  std::vector<DicomDataSet> indices;
  for (uint32_t pointer : {0x0048021Eu, 0x0048021Fu}) {  // Column / Row Position In Total Image Pixel Matrix
    DicomDataSet i;
    i.str(0x00209164, "UI", s.dimension_organization_uid).at(0x00209165, pointer).at(0x00209167, 0x0048021A);
    indices.push_back(i);
  }
  d.sequence(0x00209222, indices);
  d.str(0x00209311, "CS", "TILED_FULL");
  // Image Pixel and Whole Slide Microscopy Image
  const bool monochrome = !s.optical_paths.empty() && level.associated.empty();
  if (monochrome) {
    d.us(0x00280002, {1}).str(0x00280004, "CS", "MONOCHROME2");
  } else {
    // JPEG 2000: the codestream's own colour transform, irreversible (lossy) or reversible
    d.us(0x00280002, {3}).str(0x00280004, "CS", jpeg ? (level.ycbcr_subsampling == 2 ? "YBR_FULL_422" : "YBR_FULL")
                                                : level.codec == TileCodec::kJpeg2000         ? "YBR_ICT"
                                                : level.codec == TileCodec::kJpeg2000Lossless ? "YBR_RCT"
                                                                                              : "RGB");
    d.us(0x00280006, {0});
  }
  d.str(0x00280008, "IS", std::to_string(frames));
  if (monochrome) {  // the samples as they are: no rescale, no inversion
    d.str(0x00281052, "DS", "0").str(0x00281053, "DS", "1");
    d.str(0x20500020, "CS", "IDENTITY");
  }
  d.us(0x00280010, {static_cast<uint16_t>(level.frame_height())}).us(0x00280011, {static_cast<uint16_t>(level.frame_width())});
  d.us(0x00280100, {level.bits}).us(0x00280101, {level.bits}).us(0x00280102, {static_cast<uint16_t>(level.bits - 1)});
  d.us(0x00280103, {0});
  d.str(0x00280301, "CS", "NO");
  d.str(0x00282110, "CS", lossy ? "01" : "00");
  if (lossy) {
    d.str(0x00282112, "DS", std::string(kRatioWidth, ' '));  // Lossy Image Compression Ratio: set by finish()
    d.str(0x00282114, "CS", jpeg ? "ISO_10918_1" : "ISO_15444_1");
  }
  d.str(0x00089206, "CS", "VOLUME");
  d.fd(0x00189073, 0.0);  // Acquisition Duration: not known to a converter
  d.fl(0x00480001, static_cast<float>(spacing_x * static_cast<double>(level.width)));   // Imaged Volume Width (mm)
  d.fl(0x00480002, static_cast<float>(spacing_y * static_cast<double>(level.height)));  // Imaged Volume Height
  const uint32_t focal_planes = level.associated.empty() ? static_cast<uint32_t>(s.focal_planes) : 1;
  const double z_spacing_mm = s.z_spacing / 1000.0;
  // Imaged Volume Depth (mm): the focal planes' span where there are several
  d.fl(0x00480003, focal_planes > 1 ? static_cast<float>(z_spacing_mm * (focal_planes - 1)) : 0.001f);
  d.ul(0x00480006, static_cast<uint32_t>(level.width)).ul(0x00480007, static_cast<uint32_t>(level.height));
  DicomDataSet origin;
  origin.str(0x0040072A, "DS", "0").str(0x0040073A, "DS", "0");
  d.sequence(0x00480008, {origin});
  d.str(0x00480010, "CS", level.associated.empty() ? "NO" : "YES").str(0x00480011, "CS", "AUTO").str(0x00480012, "CS", "NO");
  // Slide Label: its text is not known; the barcode where the source states it. (OpenSlide 4.0.1 leaves a
  // label whose Barcode Value is empty out of its associated images.)
  if (level.associated == "label") d.str(0x22000002, "UT", "").str(0x22000005, "LT", s.barcode.substr(0, 1024));
  d.str(0x00480102, "DS", "0\\-1\\0\\-1\\0\\0");  // Image Orientation (Slide): rows along -Y, columns along -X
  const uint32_t paths = monochrome ? static_cast<uint32_t>(s.optical_paths.size()) : 1;
  d.ul(0x00480302, paths).ul(0x00480303, focal_planes);  // Number of Optical Paths, Total Pixel Matrix Focal Planes
  // Specimen: the slide as the container, one specimen on it
  d.str(0x00400512, "LO", s.container_id);
  d.sequence(0x00400513, {});
  d.sequence(0x00400518, {code_item("433466003", "SCT", "Microscope slide")});
  d.sequence(0x00400555, {});  // Acquisition Context
  DicomDataSet specimen;
  specimen.str(0x00400551, "LO", s.container_id).str(0x00400554, "UI", s.specimen_uid);
  specimen.sequence(0x00400562, {}).sequence(0x00400610, {});
  d.sequence(0x00400560, {specimen});
  // Optical Paths: brightfield, full spectrum, with its ICC profile; or one per channel, epifluorescence at
  // its excitation wavelength where the file states it, its name as the description
  std::vector<DicomDataSet> optical_paths;
  // The brightfield path's identifier: "1", or in a series of channels (a label or overview instance among
  // them) the one after the channels', so that no identifier names two paths in the series
  const std::string brightfield_id = std::to_string(s.optical_paths.size() + 1);
  if (monochrome) {
    for (size_t c = 0; c < s.optical_paths.size(); ++c) {
      const ChannelInfo& info = s.optical_paths[c];
      DicomDataSet path;
      path.sequence(0x00220016, {code_item("111743", "DCM", "Epifluorescence illumination")});
      if (info.excitation_nm) {
        path.fl(0x00220055, static_cast<float>(*info.excitation_nm));
      } else {
        path.sequence(0x00480108, {code_item("414298005", "SCT", "Full Spectrum")});
      }
      path.str(0x00480106, "SH", std::to_string(c + 1));
      if (!info.name.empty()) path.str(0x00480107, "ST", info.name.substr(0, 1024));
      optical_paths.push_back(std::move(path));
    }
  } else {
    DicomDataSet path;
    path.sequence(0x00220016, {code_item("111744", "DCM", "Brightfield illumination")});
    path.ob(0x00282000, s.icc_profile);
    path.str(0x00480106, "SH", brightfield_id);
    path.sequence(0x00480108, {code_item("414298005", "SCT", "Full Spectrum")});
    optical_paths.push_back(std::move(path));
  }
  d.sequence(0x00480105, optical_paths);
  // Shared Functional Groups: pixel measures, frame type, optical path
  DicomDataSet measures;
  measures.str(0x00180050, "DS", "0.001").str(0x00280030, "DS", decimal(spacing_y) + "\\" + decimal(spacing_x));
  // TILED_FULL focal plane k lies k x Spacing Between Slices (mm) from the first
  if (focal_planes > 1) measures.str(0x00180088, "DS", decimal(z_spacing_mm));
  DicomDataSet frame_type;
  frame_type.str(0x00089007, "CS", image_type);
  DicomDataSet path_id;
  path_id.str(0x00480106, "SH", monochrome ? "1" : brightfield_id);
  DicomDataSet shared;
  shared.sequence(0x00289110, {measures}).sequence(0x00400710, {frame_type});
  // The optical path of every frame, where there is one (several: each frame's from its place in TILED_FULL)
  if (paths == 1) shared.sequence(0x00480207, {path_id});
  d.sequence(0x52009229, {shared});
  return d;
}


}  // namespace

DicomSeries DicomSeries::make(std::string container_id, std::string software) {
  DicomSeries s;
  s.study_uid = new_uid();
  s.series_uid = new_uid();
  s.frame_of_reference_uid = new_uid();
  s.dimension_organization_uid = new_uid();
  s.pyramid_uid = new_uid();
  s.specimen_uid = new_uid();
  s.container_id = std::move(container_id);
  s.software = std::move(software);
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[16], time[16];
  std::strftime(date, sizeof date, "%Y%m%d", &utc);
  std::strftime(time, sizeof time, "%H%M%S", &utc);
  s.date = date;
  s.time = time;
  return s;
}

Result<DicomWsiWriter> DicomWsiWriter::create(const std::string& folder, DicomSeries series) {
  if (series.focal_planes > 1 && !(series.z_spacing > 0)) {
    return invalid_argument(folder + ": " + std::to_string(series.focal_planes) +
                            " focal planes need their spacing (Spacing Between Slices)");
  }
  TW_ASSIGN_OR_RETURN(PartialFolder partial, PartialFolder::create(folder, "DICOM series"));
  return DicomWsiWriter(std::move(partial), std::move(series));
}

DicomWsiWriter::DicomWsiWriter(DicomWsiWriter&& other) noexcept
    : folder_(std::move(other.folder_)),
      series_(std::move(other.series_)),
      instances_(std::move(other.instances_)),
      error_(std::move(other.error_)),
      plane_(other.plane_),
      plane_levels_(other.plane_levels_) {
  other.instances_.clear();
}

DicomWsiWriter::~DicomWsiWriter() {
  for (Instance& i : instances_) {
    if (i.file) std::fclose(i.file);
  }
}

Status DicomWsiWriter::put(Instance& instance, std::span<const uint8_t> bytes) {
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), instance.file) != bytes.size()) {
    return io_error(instance.path + ": write failed (" + std::strerror(errno) + ")");
  }
  return Status();
}

Status DicomWsiWriter::start(Instance& instance, int index) {
  const LevelSpec& level = instance.spec;
  const bool monochrome = !series_.optical_paths.empty() && level.associated.empty();
  const bool jpeg = level.codec == TileCodec::kJpeg, jpegls = level.codec == TileCodec::kJpegLs;
  const bool j2k = is_jpeg2000(level.codec), lossy = jpeg || level.codec == TileCodec::kJpeg2000;
  if (monochrome ? (level.samples != 1 || (level.bits != 8 && level.bits != 16) || level.sample_format != 1 ||
                    (!jpegls && !j2k && level.codec != TileCodec::kNone))
                 : (level.samples != 3 || level.bits != 8 || (!jpeg && !jpegls && !j2k && level.codec != TileCodec::kNone))) {
    return invalid_argument(folder_.output() + ": DICOM WSI frames are written as 8-bit RGB (JPEG, JPEG-LS, JPEG 2000 or "
                            "uncompressed) or unsigned 8- or 16-bit channels (JPEG-LS, JPEG 2000 or uncompressed)");
  }
  if (level.frame_width() > 65535 || level.frame_height() > 65535) {
    return invalid_argument(folder_.output() + ": frames larger than 65535 pixels");
  }
  instance.path = folder_.temp() + "/" +
                  (level.associated.empty() ? "level-" + std::to_string(index)
                                            : level.associated == "macro" ? std::string("overview") : level.associated) +
                  ".dcm";
  instance.file = std::fopen(instance.path.c_str(), "wb");
  if (!instance.file) return io_error(instance.path + ": cannot create (" + std::strerror(errno) + ")");
  std::setvbuf(instance.file, nullptr, _IOFBF, 1 << 20);
  const int64_t planes = level.associated.empty() ? int64_t{std::max<int32_t>(1, static_cast<int32_t>(series_.optical_paths.size()))} *
                                                       series_.focal_planes
                                                 : 1;
  instance.frames = level.tiles_across() * level.tiles_down() * planes;
  instance.encapsulated = jpeg || jpegls || j2k;
  // An Extended Offset Table where the frames may pass the 4 GiB a Basic one addresses: lossless frames, and
  // JPEG frames whose pixels pass 4 GiB (JPEG codes tissue in well under a byte a pixel)
  const uint64_t raw = static_cast<uint64_t>(instance.frames) * static_cast<uint64_t>(level.frame_width()) *
                       static_cast<uint64_t>(level.frame_height()) * level.samples * (level.bits / 8);
  instance.extended = jpegls || level.codec == TileCodec::kJpeg2000Lossless || (lossy && raw >= (uint64_t{4} << 30));
  const std::string sop_uid = new_uid();
  // File meta information (explicit VR little endian), its group length first
  DicomDataSet meta;
  const uint8_t version[2] = {0, 1};
  meta.ob(0x00020001, version);
  meta.str(0x00020002, "UI", kWsmImage).str(0x00020003, "UI", sop_uid);
  meta.str(0x00020010, "UI", jpeg       ? kJpegBaseline
                             : jpegls   ? kJpegLsLossless
                             : level.codec == TileCodec::kJpeg2000 ? kJpeg2000
                             : level.codec == TileCodec::kJpeg2000Lossless ? kJpeg2000Lossless
                                        : kExplicitLittle);
  meta.str(0x00020012, "UI", kImplementationClass).str(0x00020013, "SH", "TILEWISE");
  std::vector<uint8_t> head(132, 0);  // the preamble, then "DICM"
  std::memcpy(head.data() + 128, "DICM", 4);
  const std::vector<uint8_t> meta_bytes = meta.encode();
  DicomDataSet group;
  group.ul(0x00020000, static_cast<uint32_t>(meta_bytes.size()));
  const std::vector<uint8_t> group_bytes = group.encode();
  head.insert(head.end(), group_bytes.begin(), group_bytes.end());
  head.insert(head.end(), meta_bytes.begin(), meta_bytes.end());
  const std::vector<uint8_t> body = level_data_set(series_, level, index, sop_uid, instance.frames).encode();
  if (lossy) {
    // Where the compression ratio's value lies: its element is the first of the data set with these 8 bytes
    // (the elements before it are strings and numbers that cannot hold them)
    const uint8_t ratio[8] = {0x28, 0x00, 0x12, 0x21, 'D', 'S', kRatioWidth, 0};
    const auto at = std::search(body.begin(), body.end(), std::begin(ratio), std::end(ratio));
    instance.ratio_at = head.size() + static_cast<size_t>(at - body.begin()) + 8;
  }
  head.insert(head.end(), body.begin(), body.end());
  if (instance.extended) {
    // Extended Offset Table and its Lengths (OV), filled by finish(); the Basic Offset Table stays empty
    for (uint16_t element : {uint16_t{0x0001}, uint16_t{0x0002}}) {
      put_le(head, uint16_t{0x7FE0});
      put_le(head, element);
      put_le(head, uint16_t{0x564F});  // "OV", then two reserved bytes
      put_le(head, uint16_t{0});
      put_le(head, static_cast<uint32_t>(8 * instance.frames));
      if (element == 0x0001) instance.table_at = head.size();
      head.resize(head.size() + static_cast<size_t>(8 * instance.frames), 0);
    }
  }
  // Pixel Data
  put_le(head, uint16_t{0x7FE0});
  put_le(head, uint16_t{0x0010});
  const bool words = !instance.encapsulated && level.bits == 16;  // native 16-bit samples: OW
  head.insert(head.end(), {'O', static_cast<uint8_t>(words ? 'W' : 'B'), 0, 0});
  if (instance.encapsulated) {
    put_le(head, uint32_t{0xFFFFFFFF});  // undefined length: items follow
    put_le(head, uint16_t{0xFFFE});
    put_le(head, uint16_t{0xE000});
    if (instance.extended) {
      put_le(head, uint32_t{0});  // an empty Basic Offset Table
    } else {
      put_le(head, static_cast<uint32_t>(4 * instance.frames));  // the Basic Offset Table, filled by finish()
      instance.table_at = head.size();
      head.resize(head.size() + static_cast<size_t>(4 * instance.frames), 0);
    }
  } else {
    const uint64_t bytes = static_cast<uint64_t>(instance.frames) * static_cast<uint64_t>(level.frame_width()) *
                           static_cast<uint64_t>(level.frame_height()) * level.samples * (level.bits / 8);
    if (bytes >= 0xFFFFFFFFull) {
      return invalid_argument(folder_.output() + ": level " + std::to_string(index) + " holds " + std::to_string(bytes) +
                              " bytes of uncompressed frames, more than a Pixel Data element's 4 GiB: write JPEG");
    }
    put_le(head, static_cast<uint32_t>(bytes));
  }
  return put(instance, head);
}

void DicomWsiWriter::begin_plane(int32_t c, int32_t z, int32_t /*t*/) {
  plane_ = int64_t{c} * series_.focal_planes + z;
  plane_levels_ = 0;
}

int DicomWsiWriter::add_level(LevelSpec level) {
  const size_t k = plane_levels_++;
  if (level.associated.empty() && k < instances_.size()) {  // a later plane's level: the first plane's instance
    if (error_.ok()) error_ = check_plane_level(folder_.output(), k, instances_[k].spec, level);
    return static_cast<int>(k);
  }
  Instance instance;
  instance.spec = std::move(level);
  const int index = static_cast<int>(instances_.size());
  instances_.push_back(std::move(instance));
  if (error_.ok()) error_ = start(instances_.back(), index);
  return index;
}

Status DicomWsiWriter::write_tile(int level, int64_t index, std::span<const uint8_t> bytes) {
  TW_RETURN_IF_ERROR(error_);
  if (level < 0 || static_cast<size_t>(level) >= instances_.size()) return internal_error(folder_.output() + ": no level " + std::to_string(level));
  Instance& i = instances_[static_cast<size_t>(level)];
  if (i.spec.associated.empty()) index += plane_ * i.spec.tiles_across() * i.spec.tiles_down();
  if (index != i.next || index >= i.frames) {
    return internal_error(i.path + ": frame " + std::to_string(index) + " given where frame " + std::to_string(i.next) +
                          " of " + std::to_string(i.frames) + " comes next (TILED_FULL order)");
  }
  if (i.encapsulated) {
    if (!i.extended && i.fragments > 0xFFFFFFFFull) {
      return unsupported(i.path + ": the JPEG frames pass 4 GiB, beyond a Basic Offset Table");
    }
    const uint32_t length = static_cast<uint32_t>(bytes.size() + bytes.size() % 2);
    i.offsets.push_back(i.fragments);
    i.lengths.push_back(length);
    std::vector<uint8_t> item;
    put_le(item, uint16_t{0xFFFE});
    put_le(item, uint16_t{0xE000});
    put_le(item, length);
    TW_RETURN_IF_ERROR(put(i, item));
    TW_RETURN_IF_ERROR(put(i, bytes));
    if (bytes.size() % 2) TW_RETURN_IF_ERROR(put(i, std::vector<uint8_t>{0}));  // after EOI: ignored by decoders
    i.fragments += 8 + length;
  } else {
    const size_t frame = static_cast<size_t>(i.spec.frame_width()) * static_cast<size_t>(i.spec.frame_height()) *
                         i.spec.samples * (i.spec.bits / 8);
    if (bytes.size() != frame) return internal_error(i.path + ": an uncompressed frame of " + std::to_string(bytes.size()) + " bytes");
    TW_RETURN_IF_ERROR(put(i, bytes));
  }
  ++i.next;
  return Status();
}

Status DicomWsiWriter::finish() {
  TW_RETURN_IF_ERROR(error_);
  if (instances_.empty()) return internal_error(folder_.output() + ": no level to write");
  for (Instance& i : instances_) {
    if (i.next != i.frames) {
      return internal_error(i.path + ": " + std::to_string(i.frames - i.next) + " frames were never written");
    }
    if (i.encapsulated) {
      if (!i.extended && i.fragments > 0xFFFFFFFFull) {
        return unsupported(i.path + ": the JPEG frames pass 4 GiB, beyond a Basic Offset Table");
      }
      const uint8_t end[8] = {0xFE, 0xFF, 0xDD, 0xE0, 0, 0, 0, 0};  // Sequence Delimitation Item (FFFE,E0DD)
      TW_RETURN_IF_ERROR(put(i, end));
      std::vector<uint8_t> table;  // BOT: 32-bit offsets; EOT: 64-bit offsets, then the Lengths element's values
      for (uint64_t o : i.offsets) i.extended ? put_le(table, o) : put_le(table, static_cast<uint32_t>(o));
      if (i.extended) {
        put_le(table, uint16_t{0x7FE0});  // the Lengths element's header again, as start() wrote it
        put_le(table, uint16_t{0x0002});
        put_le(table, uint16_t{0x564F});  // "OV"
        put_le(table, uint16_t{0});
        put_le(table, static_cast<uint32_t>(8 * i.frames));
        for (uint64_t n : i.lengths) put_le(table, n);
      }
      if (std::fflush(i.file) != 0 || ::fseeko(i.file, static_cast<off_t>(i.table_at), SEEK_SET) != 0) {
        return io_error(i.path + ": cannot seek to the offset table (" + std::strerror(errno) + ")");
      }
      TW_RETURN_IF_ERROR(put(i, table));
    }
    if (i.spec.codec == TileCodec::kJpeg || i.spec.codec == TileCodec::kJpeg2000) {
      // The compression ratio: the frames' pixel bytes over their coded bytes
      const double pixels = static_cast<double>(i.frames) * static_cast<double>(i.spec.frame_width() * i.spec.frame_height()) *
                            i.spec.samples * (i.spec.bits / 8);
      std::string ratio = decimal(pixels / static_cast<double>(std::max<uint64_t>(i.fragments, 1))).substr(0, kRatioWidth);
      ratio.resize(kRatioWidth, ' ');
      if (std::fflush(i.file) != 0 || ::fseeko(i.file, static_cast<off_t>(i.ratio_at), SEEK_SET) != 0) {
        return io_error(i.path + ": cannot seek to the compression ratio (" + std::strerror(errno) + ")");
      }
      TW_RETURN_IF_ERROR(put(i, {reinterpret_cast<const uint8_t*>(ratio.data()), ratio.size()}));
    }
    std::FILE* file = std::exchange(i.file, nullptr);
    if (std::fclose(file) != 0) return io_error(i.path + ": cannot close (" + std::strerror(errno) + ")");
  }
  return folder_.commit();
}

}  // namespace tilewise::write
