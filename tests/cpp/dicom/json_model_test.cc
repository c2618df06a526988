// DICOM JSON (DICOMweb metadata) made datasets: values as a Part 10 file would hold them, frame positions
// from the per-frame groups, and refusals of what is not DICOM JSON.
#include "dicom/json_model.h"

#include <gtest/gtest.h>

#include <string>

namespace tilewise::dicom {
namespace {

const char* kInstance = R"([{
  "00080016": {"vr": "UI", "Value": ["1.2.840.10008.5.1.4.1.1.77.1.6"]},
  "00080018": {"vr": "UI", "Value": ["1.2.3"]},
  "00083002": {"vr": "UI", "Value": ["1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.1"]},
  "00080008": {"vr": "CS", "Value": ["ORIGINAL", "PRIMARY", "VOLUME", "NONE"]},
  "00100010": {"vr": "PN", "Value": [{"Alphabetic": "Test^Slide"}]},
  "00280010": {"vr": "US", "Value": [256]},
  "00480006": {"vr": "UL", "Value": [70000]},
  "00480001": {"vr": "FL", "Value": [1.2000000476837158]},
  "00200013": {"vr": "IS", "Value": [3]},
  "00480008": {"vr": "SQ", "Value": [{"0040072A": {"vr": "DS", "Value": [20.5]}}]},
  "00480105": {"vr": "SQ", "Value": [{"00480106": {"vr": "SH", "Value": ["1"]},
                                      "00282000": {"vr": "OB", "BulkDataURI": "http://h/bulk/icc"}}]},
  "00209311": {"vr": "CS", "Value": ["TILED_SPARSE"]},
  "00091001": {"vr": "OB", "InlineBinary": "AQID"},
  "00400512": {"vr": "LO"},
  "52009230": {"vr": "SQ", "Value": [
    {"0048021A": {"vr": "SQ", "Value": [{"0048021E": {"vr": "SL", "Value": [257]}, "0048021F": {"vr": "SL", "Value": [1]},
                                         "0040074A": {"vr": "DS", "Value": [1.5]}}]},
     "00480207": {"vr": "SQ", "Value": [{"00480106": {"vr": "SH", "Value": ["2"]}}]}},
    {"0048021A": {"vr": "SQ", "Value": [{"0048021E": {"vr": "SL", "Value": [1]}, "0048021F": {"vr": "SL", "Value": [257]}}]}}
  ]}
}])";

TEST(JsonModel, ValuesAsAFileHoldsThem) {
  auto parsed = parse_json_metadata(kInstance);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 1u);
  const JsonInstance& in = (*parsed)[0];
  const DataSet& d = in.file.dataset;
  EXPECT_EQ(d.string(tag(0x0008, 0x0008), 2), "VOLUME");
  EXPECT_EQ(d.string(tag(0x0010, 0x0010)), "Test^Slide");
  EXPECT_EQ(d.integer(tag(0x0028, 0x0010)), 256);
  EXPECT_EQ(d.integer(tag(0x0048, 0x0006)), 70000);
  EXPECT_EQ(d.integer(tag(0x0020, 0x0013)), 3);
  EXPECT_FLOAT_EQ(static_cast<float>(float_values(*d.find(tag(0x0048, 0x0001)))[0]), 1.2f);
  EXPECT_EQ(d.item(tag(0x0048, 0x0008))->string(tag(0x0040, 0x072A)), "20.5");
  EXPECT_EQ(d.find(tag(0x0009, 0x1001))->value, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_TRUE(d.find(tag(0x0040, 0x0512))->value.empty());
  EXPECT_EQ(d.find(tag(0x5200, 0x9230)), nullptr);  // dropped once read
  EXPECT_EQ(in.icc_profile_uri, "http://h/bulk/icc");
  EXPECT_EQ(in.transfer_syntaxes, (std::vector<std::string>{"1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.1"}));
  EXPECT_EQ(in.file.meta.string(tag(0x0002, 0x0002)), "1.2.840.10008.5.1.4.1.1.77.1.6");
  EXPECT_EQ(in.file.meta.string(tag(0x0002, 0x0003)), "1.2.3");
  ASSERT_EQ(in.file.frame_positions.size(), 2u);
  const FramePosition& a = in.file.frame_positions[0];
  EXPECT_TRUE(a.has_position && a.has_z);
  EXPECT_EQ(a.column, 257);
  EXPECT_EQ(a.row, 1);
  EXPECT_DOUBLE_EQ(a.z_offset, 1.5);
  ASSERT_LT(a.optical_path, in.file.frame_optical_paths.size());
  EXPECT_EQ(in.file.frame_optical_paths[a.optical_path], "2");
  EXPECT_FALSE(in.file.frame_positions[1].has_z);
  EXPECT_EQ(in.file.frame_positions[1].optical_path, FramePosition::kNoPath);
}

TEST(JsonModel, WhatIsNotDicomJsonIsCorrupt) {
  for (const char* bad : {"", "{", "{}", "[1]", R"([{"0008": {"vr": "CS"}}])", R"([{"00080008": 5}])",
                          R"([{"00280010": {"vr": "US", "Value": ["x"]}}])", R"([{"00091001": {"vr": "OB", "InlineBinary": "*"}}])",
                          R"([{"00480105": {"vr": "SQ", "Value": [7]}}])"}) {
    auto parsed = parse_json_metadata(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) EXPECT_EQ(parsed.status().code(), StatusCode::kCorrupt) << bad;
  }
  std::string deep = R"([{"00480105": {"vr": "SQ", "Value": [)";
  for (int i = 0; i < 40; ++i) deep += R"({"00480105": {"vr": "SQ", "Value": [)";
  deep += "{}";
  for (int i = 0; i < 41; ++i) deep += "]}}";
  deep += "]";
  EXPECT_EQ(parse_json_metadata(deep).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace tilewise::dicom
