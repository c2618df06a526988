// The corruption catalogue (tests/data/catalogue.py) through the C++ API. Run under AddressSanitizer and
// UndefinedBehaviorSanitizer in CI: every damaged file must open or fail exactly as its entry expects,
// with an error that names the file, and without any memory error or leak.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "tilewise/tilewise.h"

namespace tilewise {
namespace {

struct Outcome {
  std::string kind;  // open-fails, read-fails, reads
  std::string message;
};

Outcome run(const std::string& path) {
  auto slide = Slide::open(path);
  if (!slide.ok()) return {"open-fails", slide.status().message()};
  std::vector<std::string> errors;
  for (int level = 0; level < slide->level_count(); ++level) {
    const LevelInfo& l = slide->level(level);
    if (l.width * l.height > (int64_t{64} << 20)) continue;  // not a catalogue-sized level
    std::vector<uint8_t> pixels(static_cast<size_t>(l.width * l.height * 3));
    Status s = slide->read_level_region(level, 0, 0, l.width, l.height,
                                        ImageView{pixels.data(), l.width * 3, static_cast<int32_t>(l.width),
                                                  static_cast<int32_t>(l.height), 3, {}});
    if (!s.ok()) errors.push_back(s.message());
    const ImageAxes& axes = slide->axes();
    if (axes.rgb || l.width * l.height * axes.channels > (int64_t{64} << 20)) continue;
    // Every channel of every plane, at its own sample type.
    const int32_t bytes = sample_bytes(axes.sample_type);
    std::vector<uint8_t> samples(static_cast<size_t>(l.width * l.height * axes.channels * bytes));
    const ImageView view{samples.data(), l.width * axes.channels * bytes, static_cast<int32_t>(l.width),
                         static_cast<int32_t>(l.height), axes.channels, {}, bytes};
    for (int32_t t = 0; t < axes.t; ++t) {
      for (int32_t z = 0; z < axes.z; ++z) {
        s = slide->read_planes(level, 0, 0, l.width, l.height, PlaneSelection{{}, z, t}, view);
        if (!s.ok()) errors.push_back(s.message());
      }
    }
  }
  for (const auto& a : slide->associated_images()) {
    auto image = slide->read_associated_image(a.name);
    if (!image.ok()) errors.push_back(image.status().message());
  }
  if (!errors.empty()) return {"read-fails", errors.front()};
  return {"reads", ""};
}

TEST(Catalogue, EveryEntryBehavesAsCatalogued) {
  const char* dir = std::getenv("TILEWISE_CATALOGUE_DIR");
  if (dir == nullptr || !std::filesystem::exists(std::filesystem::path(dir) / "catalogue.json")) {
    GTEST_SKIP() << "TILEWISE_CATALOGUE_DIR is not set: generate the catalogue with tests/data/catalogue.py "
                    "(scripts/test.sh does)";
  }
  std::ifstream in(std::filesystem::path(dir) / "catalogue.json");
  const nlohmann::json entries = nlohmann::json::parse(in);
  ASSERT_GE(entries.size(), 40u);
  int checked = 0;
  for (const auto& e : entries) {
    const std::string file = e["file"].get<std::string>();
    const std::string expect = e["expect"].get<std::string>();
    const std::string pattern = e["pattern"].get<std::string>();
    const Outcome got = run((std::filesystem::path(dir) / file).string());
    SCOPED_TRACE(e["name"].get<std::string>());
    // A file set's entry may name the member whose damage the message must name.
    const std::string names = e.contains("names") ? e["names"].get<std::string>() : file;
    if (!got.message.empty()) {
      EXPECT_NE(got.message.find(names), std::string::npos) << "the message does not name the file: " << got.message;
    }
    ++checked;
    if (expect == "clean") continue;
    EXPECT_EQ(got.kind, expect) << got.message;
    if (!pattern.empty() && got.kind == expect) {
      EXPECT_TRUE(std::regex_search(got.message, std::regex(pattern))) << got.message << " !~ " << pattern;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(entries.size()));
}

}  // namespace
}  // namespace tilewise
