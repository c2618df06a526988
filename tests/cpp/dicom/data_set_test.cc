// The DICOM reader on hand-built files: what it keeps, how it finds frames, and how it refuses damage.
#include "dicom/data_set.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace tilewise::dicom {
namespace {

// Writes explicit VR little endian elements (implicit with `explicit_vr` off).
class Builder {
 public:
  explicit Builder(bool explicit_vr = true) : explicit_(explicit_vr) {}
  Builder& element(uint32_t t, const char* vr, const std::string& value) {
    return raw_element(t, vr, std::vector<uint8_t>(value.begin(), value.end()));
  }
  // `length` -1: the value's own; otherwise written as given (0xFFFFFFFF: undefined, 4000: a lie).
  Builder& raw_element(uint32_t t, const char* vr, std::vector<uint8_t> value, int64_t length = -1) {
    if (value.size() % 2) value.push_back(vr[0] == 'U' && vr[1] == 'I' ? 0 : ' ');
    tag(t);
    const uint32_t len = length < 0 ? static_cast<uint32_t>(value.size()) : static_cast<uint32_t>(length);
    header(vr, len);
    bytes_.insert(bytes_.end(), value.begin(), value.end());
    return *this;
  }
  Builder& us(uint32_t t, uint16_t v) {
    return raw_element(t, "US", {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8)});
  }
  // A sequence of undefined length whose items (of undefined length) hold what `fill` writes.
  Builder& sequence(uint32_t t, int items, const std::function<void(Builder&)>& fill) {
    tag(t);
    header("SQ", 0xFFFFFFFFu);
    for (int i = 0; i < items; ++i) {
      tag(0xFFFEE000u);
      u32(0xFFFFFFFFu);
      fill(*this);
      tag(0xFFFEE00Du);
      u32(0);
    }
    tag(0xFFFEE0DDu);
    u32(0);
    return *this;
  }
  // Encapsulated pixel data: the Basic Offset Table (`bot` offsets, maybe none), then the fragments.
  Builder& pixel_data(const std::vector<uint32_t>& bot, const std::vector<std::vector<uint8_t>>& fragments,
                      bool delimiter = true) {
    tag(0x7FE00010u);
    header("OB", 0xFFFFFFFFu);
    item(std::vector<uint8_t>(bot.size() * 4));
    for (size_t i = 0; i < bot.size(); ++i) put32(bytes_.size() - bot.size() * 4 + i * 4, bot[i]);
    for (const auto& f : fragments) item(f);
    if (delimiter) {
      tag(0xFFFEE0DDu);
      u32(0);
    }
    return *this;
  }
  // An item or delimiter header: its tag and a 32-bit length (0xFFFFFFFF: undefined).
  Builder& item_header(uint32_t t, uint32_t length) {
    tag(t);
    u32(length);
    return *this;
  }
  Builder& append(const Builder& other) {
    bytes_.insert(bytes_.end(), other.bytes_.begin(), other.bytes_.end());
    return *this;
  }
  void item(const std::vector<uint8_t>& v) {
    tag(0xFFFEE000u);
    u32(static_cast<uint32_t>(v.size()));
    bytes_.insert(bytes_.end(), v.begin(), v.end());
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void put32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

  // A Part 10 file: preamble, DICM, the file meta with `syntax`, then this builder's dataset.
  std::shared_ptr<const io::Source> file(const std::string& syntax = "1.2.840.10008.1.2.1") {
    Builder meta;
    meta.element(0x00020002u, "UI", "1.2.840.10008.5.1.4.1.1.77.1.6").element(0x00020010u, "UI", syntax);
    std::vector<uint8_t> out(128, 0);
    out.insert(out.end(), {'D', 'I', 'C', 'M'});
    out.insert(out.end(), meta.bytes_.begin(), meta.bytes_.end());
    out.insert(out.end(), bytes_.begin(), bytes_.end());
    return io::memory_source(std::move(out), "test.dcm");
  }

 private:
  void tag(uint32_t t) {
    bytes_.push_back(static_cast<uint8_t>(t >> 16));
    bytes_.push_back(static_cast<uint8_t>(t >> 24));
    bytes_.push_back(static_cast<uint8_t>(t));
    bytes_.push_back(static_cast<uint8_t>(t >> 8));
  }
  void header(const char* vr, uint32_t len) {
    if (!explicit_) return u32(len);
    bytes_.push_back(static_cast<uint8_t>(vr[0]));
    bytes_.push_back(static_cast<uint8_t>(vr[1]));
    const std::string v(vr, 2);
    if (v == "OB" || v == "OW" || v == "SQ" || v == "UN" || v == "UT" || v == "OV") {
      bytes_.push_back(0);
      bytes_.push_back(0);
      u32(len);
    } else {
      bytes_.push_back(static_cast<uint8_t>(len));
      bytes_.push_back(static_cast<uint8_t>(len >> 8));
    }
  }
  bool explicit_;
  std::vector<uint8_t> bytes_;
};

const std::vector<uint8_t> kJpegA = {0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9, 0};
const std::vector<uint8_t> kJpegB = {0xFF, 0xD8, 4, 5, 0xFF, 0xD9};

TEST(DicomDataSet, KeepsElementsSequencesAndFindsPixelData) {
  Builder b;
  b.element(0x00080008u, "CS", "ORIGINAL\\PRIMARY\\VOLUME\\NONE")
      .element(0x00200013u, "IS", " 7 ")
      .us(0x00280010u, 256);
  b.sequence(0x00480105u, 2, [](Builder& item) { item.element(0x00480112u, "DS", "20.0"); });
  b.pixel_data({}, {kJpegA});
  auto file = parse(*b.file("1.2.840.10008.1.2.4.50"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->transfer_syntax, "1.2.840.10008.1.2.4.50");
  EXPECT_EQ(file->dataset.string(0x00080008u, 2).value(), "VOLUME");
  EXPECT_EQ(file->dataset.integer(0x00200013u).value(), 7);
  EXPECT_EQ(file->dataset.integer(0x00280010u).value(), 256);
  ASSERT_NE(file->dataset.item(0x00480105u, 1), nullptr);
  EXPECT_EQ(file->dataset.item(0x00480105u, 1)->string(0x00480112u).value(), "20.0");
  ASSERT_TRUE(file->pixel_data.has_value());
  EXPECT_TRUE(file->pixel_data->encapsulated);
  EXPECT_EQ(keyword(0x00480112u), "ObjectiveLensPower");
  EXPECT_EQ(dictionary_vr(0x00280010u), "US");
}

TEST(DicomDataSet, ReadsImplicitVrFromTheDictionary) {
  Builder b(/*explicit_vr=*/false);
  b.us(0x00280011u, 512).element(0x0020000Eu, "UI", "1.2.3");
  auto file = parse(*b.file("1.2.840.10008.1.2"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->dataset.integer(0x00280011u).value(), 512);
  EXPECT_EQ(file->dataset.string(0x0020000Eu).value(), "1.2.3");
}

TEST(DicomDataSet, AnUndefinedLengthUnElementHoldsImplicitVrItems) {
  Builder implicit(/*explicit_vr=*/false);
  implicit.us(0x00280010u, 77);
  Builder b;
  b.raw_element(0x00091010u, "UN", {}, 0xFFFFFFFFu);  // a private sequence, stored as UN
  b.item_header(0xFFFEE000u, 0xFFFFFFFFu).append(implicit).item_header(0xFFFEE00Du, 0).item_header(0xFFFEE0DDu, 0);
  b.us(0x00280011u, 512);
  auto file = parse(*b.file());
  ASSERT_TRUE(file.ok()) << file.status().message();
  const DataSet* item = file->dataset.item(0x00091010u);
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(item->integer(0x00280010u).value(), 77);
  EXPECT_EQ(file->dataset.integer(0x00280011u).value(), 512);  // explicit VR again after the sequence
}

TEST(DicomDataSet, RefusesWhatItCannotRead) {
  EXPECT_EQ(parse(*io::memory_source(std::vector<uint8_t>(200, 0), "zeros")).status().code(), StatusCode::kUnsupported);
  Builder b;
  b.us(0x00280010u, 1);
  EXPECT_EQ(parse(*b.file("1.2.840.10008.1.2.2")).status().code(), StatusCode::kUnsupported);     // big endian
  EXPECT_EQ(parse(*b.file("1.2.840.10008.1.2.1.99")).status().code(), StatusCode::kUnsupported);  // deflated
}

TEST(DicomDataSet, DamageIsCorruptAndSaysWhere) {
  {  // an element longer than the file
    Builder b;
    b.raw_element(0x00100010u, "LO", {'a', 'b'}, 4000);
    auto r = parse(*b.file());
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(r.status().message().find("past the end"), std::string::npos) << r.status().message();
  }
  {  // sequences nested past the limit
    Builder b;
    std::function<void(Builder&, int)> nest = [&](Builder& item, int depth) {
      if (depth == 0) return;
      item.sequence(0x00400555u, 1, [&](Builder& inner) { nest(inner, depth - 1); });
    };
    nest(b, 20);
    auto r = parse(*b.file());
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(r.status().message().find("nested deeper"), std::string::npos) << r.status().message();
  }
  {  // an undefined-length sequence that never ends
    Builder b;
    b.sequence(0x00400555u, 1, [](Builder&) {});
    b.bytes().resize(b.bytes().size() - 8);
    EXPECT_EQ(parse(*b.file()).status().code(), StatusCode::kCorrupt);
  }
  {  // a VR that is not two letters
    Builder b;
    b.element(0x00100010u, "LO", "ab");
    b.bytes()[4] = 0x01;
    EXPECT_EQ(parse(*b.file()).status().code(), StatusCode::kCorrupt);
  }
}

TEST(DicomDataSet, ReadsFramePositionsAndDropsThePerFrameGroups) {
  Builder b;
  b.sequence(0x52009230u, 3, [n = 0](Builder& item) mutable {
    ++n;
    item.sequence(0x0048021Au, 1, [&](Builder& pos) {
      const int32_t col = 1 + 256 * n, row = 1;
      pos.raw_element(0x0048021Eu, "SL", {static_cast<uint8_t>(col), static_cast<uint8_t>(col >> 8), 0, 0});
      pos.raw_element(0x0048021Fu, "SL", {static_cast<uint8_t>(row), 0, 0, 0});
    });
  });
  auto file = parse(*b.file());
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ(file->frame_positions.size(), 3u);
  EXPECT_EQ(file->frame_positions[2].column, 1 + 256 * 3);
  EXPECT_EQ(file->dataset.find(0x52009230u), nullptr);
}

std::vector<uint8_t> read(const io::Source& s, const FrameRange& r) {
  std::vector<uint8_t> out(r.length);
  EXPECT_TRUE(s.pread(out, r.offset).ok());
  if (r.items) {
    EXPECT_TRUE(join_items(out).ok());
  }
  return out;
}

TEST(DicomFrames, EveryWayToFindThem) {
  // Basic Offset Table, one fragment per frame.
  Builder a;
  a.pixel_data({0, static_cast<uint32_t>(8 + kJpegA.size())}, {kJpegA, kJpegB});
  auto src = a.file("1.2.840.10008.1.2.4.50");
  auto file = parse(*src).value();
  auto frames = locate_frames(*src, file, 2).value();
  EXPECT_EQ(read(*src, frames[0]), kJpegA);
  EXPECT_EQ(read(*src, frames[1]), kJpegB);

  // No table, a frame in two fragments: frames start at SOI.
  const std::vector<uint8_t> head(kJpegA.begin(), kJpegA.begin() + 4), tail(kJpegA.begin() + 4, kJpegA.end());
  Builder c;
  c.pixel_data({}, {head, tail, kJpegB});
  src = c.file("1.2.840.10008.1.2.4.50");
  file = parse(*src).value();
  frames = locate_frames(*src, file, 2).value();
  EXPECT_TRUE(frames[0].items);
  EXPECT_EQ(read(*src, frames[0]), kJpegA);
  EXPECT_EQ(read(*src, frames[1]), kJpegB);

  // A lying Basic Offset Table (it points into a fragment): the fragments are walked instead.
  Builder d;
  d.pixel_data({0, 3}, {kJpegA, kJpegB});
  src = d.file("1.2.840.10008.1.2.4.50");
  file = parse(*src).value();
  frames = locate_frames(*src, file, 2).value();
  EXPECT_EQ(read(*src, frames[1]), kJpegB);

  // More frames than the fragments can hold; and no sequence delimiter.
  EXPECT_EQ(locate_frames(*src, file, 5).status().code(), StatusCode::kCorrupt);
  Builder e;
  e.pixel_data({}, {kJpegA}, /*delimiter=*/false);
  src = e.file("1.2.840.10008.1.2.4.50");
  file = parse(*src).value();
  EXPECT_EQ(locate_frames(*src, file, 1).status().code(), StatusCode::kCorrupt);
}

TEST(DicomFrames, ExtendedOffsetTableOutsideTheFileIsCorrupt) {
  Builder b;
  std::vector<uint8_t> offsets(8, 0), lengths(8, 0);
  offsets[4] = 0x7F;  // ~2 TB
  lengths[0] = static_cast<uint8_t>(kJpegA.size());
  b.raw_element(0x7FE00001u, "OV", offsets).raw_element(0x7FE00002u, "OV", lengths).pixel_data({}, {kJpegA});
  auto src = b.file("1.2.840.10008.1.2.4.50");
  auto file = parse(*src).value();
  auto r = locate_frames(*src, file, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
}

TEST(DicomFrames, JoinItemsRefusesACutFragment) {
  std::vector<uint8_t> bytes = {0xFE, 0xFF, 0x00, 0xE0, 10, 0, 0, 0, 1, 2};
  EXPECT_EQ(join_items(bytes).code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace tilewise::dicom
