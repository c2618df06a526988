// The format driver conformance suite: every driver passes the same checks on a good file of its own
// (the corruption catalogue's good files, made by tests/data/catalogue.py with tifffile, libvips and the
// project's vendor writers): the driver that recognises the file, levels largest first with OpenSlide's
// downsamples, a tile grid that covers each level, the normalised openslide.* level properties, every level
// read through the region plan equal to the mosaic of its tiles decoded one by one, and a damaged tile
// reported with the file, level, tile and offset. Then a test of each vendor's own rules.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "formats/format_registry.h"
#include "io/source.h"
#include "region/host_region_reader.h"
#include "region/tile_fetcher.h"

namespace tilewise::formats {
namespace {

struct DriverCase {
  const char* file;    // in TILEWISE_CATALOGUE_DIR
  const char* vendor;  // the driver that must recognise it
};
void PrintTo(const DriverCase& c, std::ostream* os) { *os << c.file; }

std::filesystem::path catalogue_dir() {
  const char* dir = std::getenv("TILEWISE_CATALOGUE_DIR");
  return dir ? std::filesystem::path(dir) : std::filesystem::path();
}

std::vector<uint8_t> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string prop(const SlideModel& m, const std::string& key) {
  for (const auto& [k, v] : m.properties)
    if (k == key) return v;
  return "<missing>";
}

class FormatConformance : public ::testing::TestWithParam<DriverCase> {
 protected:
  void SetUp() override {
    path_ = catalogue_dir() / GetParam().file;
    if (catalogue_dir().empty() || !std::filesystem::exists(path_)) {
      GTEST_SKIP() << "TILEWISE_CATALOGUE_DIR is not set or lacks " << GetParam().file
                   << ": generate it with tests/data/catalogue.py (scripts/test.sh does)";
    }
    bytes_ = file_bytes(path_);
    // Named by its full path: a driver of a file set (VMS) finds the other files beside it.
    auto model = open_model(io::memory_source(bytes_, path_.string()));
    ASSERT_TRUE(model.ok()) << model.status().message();
    model_ = std::move(model).value();
  }
  std::filesystem::path path_;
  std::vector<uint8_t> bytes_;
  SlideModel model_;
};

TEST_P(FormatConformance, TheRightDriverRecognisesTheFile) {
  EXPECT_EQ(model_.vendor, GetParam().vendor);
  EXPECT_EQ(detect_vendor(io::memory_source(bytes_, GetParam().file)), GetParam().vendor);
  EXPECT_EQ(prop(model_, "openslide.vendor"), GetParam().vendor);
}

TEST_P(FormatConformance, LevelsAreLargestFirstWithOpenSlidesDownsamplesAndAGridThatCoversThem) {
  ASSERT_FALSE(model_.levels.empty());
  const LevelInfo& l0 = model_.levels[0].info;
  EXPECT_EQ(l0.downsample, 1.0);
  EXPECT_EQ(prop(model_, "openslide.level-count"), std::to_string(model_.levels.size()));
  for (size_t i = 0; i < model_.levels.size(); ++i) {
    const LevelModel& l = model_.levels[i];
    SCOPED_TRACE("level " + std::to_string(i));
    if (i > 0) {
      EXPECT_LE(l.info.width, model_.levels[i - 1].info.width);
      EXPECT_GT(l.info.downsample, model_.levels[i - 1].info.downsample);
    }
    // OpenSlide: the mean of the width and height ratios (Philips rounds its spacing ratios first).
    const double mean = (double(l0.width) / l.info.width + double(l0.height) / l.info.height) / 2;
    if (std::string(GetParam().vendor) != "philips") {
      EXPECT_DOUBLE_EQ(l.info.downsample, mean);
    }
    EXPECT_GE(int64_t{l.tiles_across} * l.desc.width, l.info.width);
    EXPECT_GE(int64_t{l.tiles_down} * l.desc.height, l.info.height);
    EXPECT_LT(int64_t{l.tiles_across - 1} * l.desc.width, l.info.width);
    EXPECT_LT(int64_t{l.tiles_down - 1} * l.desc.height, l.info.height);
    EXPECT_GE(static_cast<int64_t>(l.units->lengths.size()), l.tiles_across * l.tiles_down);
    const std::string key = "openslide.level[" + std::to_string(i) + "].";
    EXPECT_EQ(prop(model_, key + "width"), std::to_string(l.info.width));
    EXPECT_EQ(prop(model_, key + "height"), std::to_string(l.info.height));
    EXPECT_NE(prop(model_, key + "downsample"), "<missing>");
  }
  EXPECT_NE(prop(model_, "openslide.quickhash-1"), "<missing>");
}

TEST_P(FormatConformance, EveryLevelReadAsARegionIsTheMosaicOfItsTiles) {
  const region::TileFetcher fetcher(model_);
  for (size_t i = 0; i < model_.levels.size(); ++i) {
    const LevelModel& l = model_.levels[i];
    const int64_t w = l.info.width, h = l.info.height;
    std::vector<uint8_t> region(static_cast<size_t>(w * h * 3), 1), mosaic(region.size(), 2);
    region::RegionRequest r;
    r.level = &l;
    r.level_label = "level " + std::to_string(i);
    r.width = w;
    r.height = h;
    r.use_cache = false;
    r.out = ImageView{region.data(), w * 3, static_cast<int32_t>(w), static_cast<int32_t>(h), 3, {}};
    Status s = region::HostRegionReader(model_, 9000 + i).read(r);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<uint8_t> tile(static_cast<size_t>(l.desc.width) * l.desc.height * 3);
    for (int64_t row = 0; row < l.tiles_down; ++row) {
      for (int64_t col = 0; col < l.tiles_across; ++col) {
        const region::TileRef t{&l, r.level_label, col, row};
        if (l.unit_length(t.index()) == 0) {
          for (int32_t y = 0; y < t.valid_rows(); ++y)
            for (int32_t x = 0; x < t.valid_cols(); ++x)
              std::copy(r.fill.begin(), r.fill.end(), &mosaic[static_cast<size_t>(((t.y0() + y) * w + t.x0() + x) * 3)]);
          continue;
        }
        ASSERT_TRUE(fetcher.decode(t, ImageView{tile.data(), int64_t{l.desc.width} * 3, l.desc.width, t.valid_rows(), 3, {}}).ok());
        for (int32_t y = 0; y < t.valid_rows(); ++y) {
          std::copy_n(&tile[static_cast<size_t>(y) * l.desc.width * 3], static_cast<size_t>(t.valid_cols()) * 3,
                      &mosaic[static_cast<size_t>(((t.y0() + y) * w + t.x0()) * 3)]);
        }
      }
    }
    ASSERT_EQ(region, mosaic) << "level " << i;
  }
}

TEST_P(FormatConformance, ADamagedTileIsReportedWithFileLevelTileAndOffset) {
  const LevelModel& l = model_.levels[0];
  if (l.desc.compression == codecs::Compression::kNone) GTEST_SKIP() << "raw tiles: any bytes are valid pixels";
  if (l.unit_part(0).source->name() != path_.string()) {
    GTEST_SKIP() << "level 0's units lie in the set's other files (damaged there by the catalogue's entries)";
  }
  const int64_t index = l.tiles_across + 1 < l.tiles_across * l.tiles_down ? l.tiles_across + 1 : 0;  // tile (1,1)
  const uint64_t offset = l.unit_offset(index);
  const uint64_t count = l.unit_length(index);
  std::vector<uint8_t> damaged = bytes_;
  std::fill(damaged.begin() + static_cast<long>(offset), damaged.begin() + static_cast<long>(offset + count), 0xFF);
  auto model = open_model(io::memory_source(damaged, "damaged.tif"));
  ASSERT_TRUE(model.ok()) << model.status().message();
  const LevelModel& dl = model->levels[0];
  std::vector<uint8_t> out(static_cast<size_t>(dl.info.width * dl.info.height * 3));
  region::RegionRequest r;
  r.level = &dl;
  r.level_label = "level 0";
  r.width = dl.info.width;
  r.height = dl.info.height;
  r.use_cache = false;
  r.out = ImageView{out.data(), r.width * 3, static_cast<int32_t>(r.width), static_cast<int32_t>(r.height), 3, {}};
  Status s = region::HostRegionReader(*model, 9100).read(r);
  ASSERT_FALSE(s.ok());
  const std::string tile = "(" + std::to_string(index % l.tiles_across) + "," + std::to_string(index / l.tiles_across) + ")";
  EXPECT_EQ(s.message().rfind("damaged.tif: level 0 tile " + tile + " at offset " + std::to_string(offset) + ": ", 0), 0u)
      << s.message();
  EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Drivers, FormatConformance,
    ::testing::Values(DriverCase{"good-aperio-jpeg-rgb.svs", "aperio"}, DriverCase{"good-aperio-j2k-ycbcr.svs", "aperio"},
                      DriverCase{"good-philips.tiff", "philips"}, DriverCase{"good-ome.ome.tif", "ome-tiff"},
                      DriverCase{"good-ome-planes.ome.tif", "ome-tiff"}, DriverCase{"good-akoya.qptiff", "qptiff"},
                      DriverCase{"good-hamamatsu.ndpi", "hamamatsu"}, DriverCase{"good-vms/slide.vms", "hamamatsu"},
                      DriverCase{"good-vmu/slide.vmu", "hamamatsu"},
                      DriverCase{"good-jpeg.tif", "generic-tiff"}, DriverCase{"good-vips.tif", "generic-tiff"},
                      DriverCase{"good-strips.tif", "generic-tiff"}, DriverCase{"good-bigtiff.tif", "generic-tiff"},
                      DriverCase{"good-lzw.tif", "generic-tiff"}, DriverCase{"good-zstd.tif", "generic-tiff"},
                      DriverCase{"good-raw.tif", "generic-tiff"}, DriverCase{"good-grey-alpha-jpeg.tif", "generic-tiff"}),
    [](const ::testing::TestParamInfo<DriverCase>& info) {
      std::string name = info.param.file;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// --- each vendor's own rules, on the same files ---------------------------------------------------------

SlideModel open_catalogue(const char* file) {
  auto model = open_model(io::memory_source(file_bytes(catalogue_dir() / file), file));
  EXPECT_TRUE(model.ok()) << file << ": " << model.status().message();
  return model.ok() ? std::move(model).value() : SlideModel{};
}

#define SKIP_WITHOUT_CATALOGUE(file)                                                               \
  if (catalogue_dir().empty() || !std::filesystem::exists(catalogue_dir() / (file))) GTEST_SKIP() \
      << "TILEWISE_CATALOGUE_DIR is not set: generate it with tests/data/catalogue.py"

TEST(AperioDriver, MppObjectivePowerAndAssociatedImagesFromTheDescription) {
  SKIP_WITHOUT_CATALOGUE("good-aperio-jpeg-rgb.svs");
  const SlideModel m = open_catalogue("good-aperio-jpeg-rgb.svs");
  EXPECT_EQ(prop(m, "aperio.MPP"), "0.499");
  EXPECT_EQ(prop(m, "openslide.mpp-x"), "0.499");
  EXPECT_EQ(prop(m, "openslide.objective-power"), "20");
  EXPECT_EQ(prop(m, "aperio.AppMag"), "20");
  ASSERT_TRUE(m.mpp.has_value());
  EXPECT_DOUBLE_EQ(m.mpp->first, 0.499);
  std::vector<std::string> names;
  for (const auto& a : m.associated) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"label", "macro", "thumbnail"}));  // by name, as OpenSlide lists them
  EXPECT_EQ(m.levels[0].desc.color, codecs::ColorSpace::kRgb);  // Aperio's RGB-component JPEG
  EXPECT_EQ(open_catalogue("good-aperio-j2k-ycbcr.svs").levels[0].desc.color, codecs::ColorSpace::kYCbCr);  // 33003
}

TEST(PhilipsDriver, LevelSizesFromThePixelSpacingAndPropertiesFromTheXml) {
  SKIP_WITHOUT_CATALOGUE("good-philips.tiff");
  const SlideModel m = open_catalogue("good-philips.tiff");
  ASSERT_EQ(m.levels.size(), 2u);
  // As OpenSlide: level 0 keeps the TIFF's tile-padded size (320 x 240 padded to 64-pixel tiles), and each
  // other level is level 0 divided by the rounded ratio of the XML's spacings (here 2), not its own TIFF
  // size (also padded).
  EXPECT_EQ(m.levels[0].info.width, 320);
  EXPECT_EQ(m.levels[0].info.height, 256);
  EXPECT_EQ(m.levels[1].info.width, 160);
  EXPECT_EQ(m.levels[1].info.height, 128);
  EXPECT_DOUBLE_EQ(m.levels[1].info.downsample, 2.0);
  EXPECT_NE(prop(m, "philips.DICOM_PIXEL_SPACING"), "<missing>");
  EXPECT_NE(prop(m, "openslide.mpp-x"), "<missing>");
}

TEST(OmeTiffDriver, SubIfdPyramidAndMppFromPhysicalSize) {
  SKIP_WITHOUT_CATALOGUE("good-ome.ome.tif");
  const SlideModel m = open_catalogue("good-ome.ome.tif");
  ASSERT_EQ(m.levels.size(), 2u);  // the SubIFD level (OpenSlide, reading it as generic TIFF, shows 1)
  EXPECT_EQ(m.levels[1].info.width, 160);
  EXPECT_EQ(prop(m, "openslide.mpp-x"), "0.5");          // PhysicalSizeX
  EXPECT_EQ(prop(m, "openslide.mpp-y"), "<missing>");    // the file states no PhysicalSizeY
  EXPECT_FALSE(m.mpp.has_value());                        // so there is no (x, y) pair
}

}  // namespace
}  // namespace tilewise::formats
