// The instances of a DICOMweb series for the DICOM WSI driver: the series' metadata (DICOM JSON) made the
// datasets a folder's files give (dicom/json_model.h), ICC profiles fetched where the metadata points to
// them, and each instance's frame source in a transfer syntax the driver decodes (io/dicomweb.h).
#include <algorithm>
#include <future>
#include <set>
#include <tuple>

#include "dicom/json_model.h"
#include "formats/drivers/dicom_instance.h"

namespace tilewise::formats::dicom_wsi {

namespace {

using dicom::tag;

constexpr uint32_t kSopInstanceUid = tag(0x0008, 0x0018);
constexpr uint32_t kSamplesPerPixel = tag(0x0028, 0x0002);
constexpr uint32_t kNumberOfFrames = tag(0x0028, 0x0008);
constexpr uint32_t kRows = tag(0x0028, 0x0010);
constexpr uint32_t kColumns = tag(0x0028, 0x0011);
constexpr uint32_t kBitsAllocated = tag(0x0028, 0x0100);
constexpr uint32_t kIccProfile = tag(0x0028, 0x2000);
constexpr uint32_t kOpticalPathSequence = tag(0x0048, 0x0105);


// The ICC profiles the metadata gives as BulkDataURIs (the element is there, its value empty), fetched at once.
void fetch_icc_profiles(const io::DicomWebSeries& series, std::vector<dicom::JsonInstance>& instances,
                        std::vector<std::string>& warnings) {
  std::vector<std::future<Result<std::vector<uint8_t>>>> fetched;
  for (const dicom::JsonInstance& in : instances) {
    fetched.push_back(in.icc_profile_uri.empty()
                          ? std::future<Result<std::vector<uint8_t>>>()
                          : std::async(std::launch::async, [&series, &in] { return series.bulk_data(in.icc_profile_uri); }));
  }
  for (size_t i = 0; i < instances.size(); ++i) {
    if (!fetched[i].valid()) continue;
    Result<std::vector<uint8_t>> icc = fetched[i].get();
    if (!icc.ok()) {
      warnings.push_back(icc.status().message());
      continue;
    }
    for (dicom::Element& e : instances[i].file.dataset.elements) {
      if (e.tag != kOpticalPathSequence || e.items.empty()) continue;
      std::vector<dicom::Element>& path = e.items[0].elements;
      auto it = std::find_if(path.begin(), path.end(), [](const dicom::Element& p) { return p.tag == kIccProfile; });
      if (it == path.end()) it = path.insert(path.end(), {kIccProfile, {'O', 'B'}, {}, {}});
      it->value = std::move(icc).value();
      std::sort(path.begin(), path.end(), [](const dicom::Element& x, const dicom::Element& y) { return x.tag < y.tag; });
      break;
    }
  }
}

}  // namespace

Result<std::vector<Instance>> web_instances(const io::DicomWebSeries& series, std::vector<std::string>& warnings) {
  auto parsed = dicom::parse_json_metadata(series.metadata());
  if (!parsed.ok()) return parsed.status().with_context(series.name() + "/metadata");
  std::vector<dicom::JsonInstance> wsi;
  std::set<std::string> described;
  for (dicom::JsonInstance& in : *parsed) {
    const std::string uid = in.file.dataset.string(kSopInstanceUid).value_or("");
    described.insert(uid);
    if (check_sop_class(in.file).ok() && !uid.empty()) wsi.push_back(std::move(in));
  }
  for (const std::string& uid : series.listed()) {
    if (!described.count(uid)) warnings.push_back(series.name() + ": instance " + uid + " is listed but has no metadata");
  }
  std::vector<io::DicomWebSeries::Wanted> wanted;
  for (const dicom::JsonInstance& in : wsi) {
    const dicom::DataSet& d = in.file.dataset;
    io::DicomWebSeries::Wanted w;
    w.uid = *d.string(kSopInstanceUid);
    for (const std::string& t : in.transfer_syntaxes) {
      if (w.syntax.empty() || (decodable(t) && !decodable(w.syntax))) w.syntax = t;
    }
    // the frames' samples uncompressed (what the disk cache keeps per frame), bounded
    w.frames = static_cast<uint64_t>(std::clamp<int64_t>(d.integer(kNumberOfFrames).value_or(1), 0, 50'000'000));
    const int64_t bytes = std::clamp<int64_t>(d.integer(kRows).value_or(0), 0, 65535) *
                          std::clamp<int64_t>(d.integer(kColumns).value_or(0), 0, 65535) *
                          std::clamp<int64_t>(d.integer(kSamplesPerPixel).value_or(0), 0, 4) *
                          ((std::clamp<int64_t>(d.integer(kBitsAllocated).value_or(8), 1, 32) + 7) / 8);
    w.frame_bytes = bytes <= (int64_t{1} << 30) ? static_cast<uint64_t>(bytes) : 0;
    wanted.push_back(std::move(w));
  }
  TW_ASSIGN_OR_RETURN(auto frames, series.instances(wanted, decodable));
  fetch_icc_profiles(series, wsi, warnings);
  std::vector<Instance> out;
  for (size_t i = 0; i < wsi.size(); ++i) {
    dicom::File& file = wsi[i].file;
    file.transfer_syntax = frames[i]->transfer_syntax();
    dicom::Element ts{tag(0x0002, 0x0010), {'U', 'I'}, {}, {}};
    std::string text = file.transfer_syntax;
    if (text.size() % 2) text += '\0';
    ts.value.assign(text.begin(), text.end());
    std::erase_if(file.meta.elements, [](const dicom::Element& e) { return e.tag == tag(0x0002, 0x0010); });
    file.meta.elements.push_back(std::move(ts));
    std::sort(file.meta.elements.begin(), file.meta.elements.end(),
              [](const dicom::Element& a, const dicom::Element& b) { return a.tag < b.tag; });
    auto in = load_parsed(frames[i], std::move(file));
    if (!in.ok()) {
      warnings.push_back(frames[i]->name() + ": ignored: " + in.status().message());
      continue;
    }
    in->by_number = true;
    out.push_back(std::move(in).value());
  }
  if (out.empty()) return corrupt(series.name() + ": the series holds no whole-slide image instance");
  std::stable_sort(out.begin(), out.end(), [](const Instance& a, const Instance& b) {
    return std::make_tuple(a.flavour != "VOLUME", -(a.width * a.height), a.instance_number) <
           std::make_tuple(b.flavour != "VOLUME", -(b.width * b.height), b.instance_number);
  });
  return out;
}


}  // namespace tilewise::formats::dicom_wsi
