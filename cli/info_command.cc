// tilewise info SLIDE [--json] [--check] [--scene S]: format, scenes, axes (channels with their metadata,
// focal planes, time points, sample type), levels, tile sizes, compression, mpp, associated images, properties, warnings; with --check, every tile decoded (exit status 5 when any fails).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "exit_codes.h"
#include "tile_check.h"
#include "tilewise/tilewise.h"

namespace tilewise::cli {
namespace {

struct InfoOptions {
  std::string path;
  bool json = false;
  bool check = false;
  int threads = 0;  // 0: one per core
  int scene = -1;    // -1: the format's default
};

constexpr size_t kFailuresShown = 20;

nlohmann::json channel_json(const ChannelInfo& c) {
  nlohmann::json j{{"name", c.name}};
  j["color"] = c.color ? nlohmann::json{(*c.color)[0], (*c.color)[1], (*c.color)[2]} : nlohmann::json(nullptr);
  j["excitation_nm"] = c.excitation_nm ? nlohmann::json(*c.excitation_nm) : nlohmann::json(nullptr);
  j["emission_nm"] = c.emission_nm ? nlohmann::json(*c.emission_nm) : nlohmann::json(nullptr);
  j["exposure_s"] = c.exposure_s ? nlohmann::json(*c.exposure_s) : nlohmann::json(nullptr);
  return j;
}

// "DAPI  colour #0000ff  excitation 358 nm  emission 461 nm  exposure 0.01 s", what the file says.
std::string channel_line(const ChannelInfo& c) {
  std::string line = c.name.empty() ? "(unnamed)" : c.name;
  char part[64];
  if (c.color) {
    std::snprintf(part, sizeof part, "  colour #%02x%02x%02x", (*c.color)[0], (*c.color)[1], (*c.color)[2]);
    line += part;
  }
  const auto add = [&](const char* format, const std::optional<double>& value) {
    if (!value) return;
    std::snprintf(part, sizeof part, format, *value);
    line += part;
  };
  add("  excitation %g nm", c.excitation_nm);
  add("  emission %g nm", c.emission_nm);
  add("  exposure %g s", c.exposure_s);
  return line;
}

// Metadata may hold bytes that are not UTF-8; JSON output replaces them instead of failing.
std::string dump(const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

int run_info(const InfoOptions& opt) {
  OpenOptions open;
  if (opt.scene >= 0) open.scene = opt.scene;
  auto slide = Slide::open(opt.path, open);
  if (!slide.ok()) return report(slide.status());
  const Slide& s = *slide;
  TileCheck check;
  if (opt.check) {
    check = check_tiles(s, opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency()));
  }
  const int status = check.failures.empty() ? kExitOk : kExitCorrupt;
  if (opt.json) {
    nlohmann::json j;
    j["path"] = s.path();
    j["format"] = s.format();
    j["scene"] = s.scene() ? nlohmann::json(*s.scene()) : nlohmann::json(nullptr);
    j["scenes"] = nlohmann::json::array();
    for (const SceneInfo& sc : s.scenes()) j["scenes"].push_back({{"name", sc.name}, {"width", sc.width}, {"height", sc.height}});
    const ImageAxes& axes = s.axes();
    j["axes"] = {{"channels", axes.channels}, {"z", axes.z}, {"t", axes.t}, {"rgb", axes.rgb},
                 {"sample_type", sample_type_name(axes.rgb ? SampleType::kUint8 : axes.sample_type)},
                 {"channel_info", nlohmann::json::array()}};
    for (const ChannelInfo& c : axes.channel_info) j["axes"]["channel_info"].push_back(channel_json(c));
    j["levels"] = nlohmann::json::array();
    for (const LevelInfo& l : s.levels()) {
      j["levels"].push_back({{"width", l.width}, {"height", l.height}, {"downsample", l.downsample},
                             {"tile_width", l.tile_width}, {"tile_height", l.tile_height},
                             {"compression", l.compression}});
    }
    if (auto mpp = s.mpp()) j["mpp"] = {mpp->first, mpp->second};
    else j["mpp"] = nullptr;
    j["associated_images"] = nlohmann::json::object();
    for (const auto& a : s.associated_images()) j["associated_images"][a.name] = {a.width, a.height};
    j["properties"] = nlohmann::json::object();
    for (const auto& [k, v] : s.properties()) j["properties"][k] = v;
    j["warnings"] = s.warnings();
    if (opt.check) {
      j["check"] = {{"tiles", check.tiles}, {"absent", check.absent}, {"failures", nlohmann::json::array()}};
      for (const TileFailure& f : check.failures) j["check"]["failures"].push_back({{"where", f.where}, {"error", f.status.message()}});
    } else {
      j["check"] = nullptr;
    }
    std::printf("%s\n", dump(j).c_str());
    return status;
  }
  std::printf("%s\n  format: %s\n", s.path().c_str(), s.format().c_str());
  if (!s.scenes().empty()) {
    std::printf("  scenes: %zu (reading %s)\n", s.scenes().size(),
                s.scene() ? ("scene " + std::to_string(*s.scene())).c_str() : "the format's default");
    for (size_t i = 0; i < s.scenes().size(); ++i) {
      const SceneInfo& sc = s.scenes()[i];
      std::printf("    %-3zu %s: %lld x %lld\n", i, sc.name.c_str(), static_cast<long long>(sc.width),
                  static_cast<long long>(sc.height));
    }
  }
  const ImageAxes& axes = s.axes();
  std::printf("  axes: %d channel%s (%s%s), %d focal plane%s, %d time point%s\n", axes.channels,
              axes.channels == 1 ? "" : "s", axes.rgb ? "RGB, " : "",
              sample_type_name(axes.rgb ? SampleType::kUint8 : axes.sample_type), axes.z, axes.z == 1 ? "" : "s", axes.t,
              axes.t == 1 ? "" : "s");
  for (size_t i = 0; i < axes.channel_info.size(); ++i) {
    std::printf("    %-3zu %s\n", i, channel_line(axes.channel_info[i]).c_str());
  }
  std::printf("  levels: %d\n", s.level_count());
  std::printf("    %-5s %-21s %-12s %-11s %s\n", "level", "width x height", "downsample", "tile", "compression");
  for (int i = 0; i < s.level_count(); ++i) {
    const LevelInfo& l = s.level(i);
    char dims[48], tile[32];
    std::snprintf(dims, sizeof dims, "%lld x %lld", static_cast<long long>(l.width), static_cast<long long>(l.height));
    std::snprintf(tile, sizeof tile, "%dx%d", l.tile_width, l.tile_height);
    std::printf("    %-5d %-21s %-12.4g %-11s %s\n", i, dims, l.downsample, tile, l.compression.c_str());
  }
  if (auto mpp = s.mpp()) std::printf("  mpp: %g x %g\n", mpp->first, mpp->second);
  else std::printf("  mpp: unknown\n");
  std::printf("  associated images:%s\n", s.associated_images().empty() ? " none" : "");
  for (const auto& a : s.associated_images()) {
    std::printf("    %s: %lld x %lld\n", a.name.c_str(), static_cast<long long>(a.width), static_cast<long long>(a.height));
  }
  std::printf("  properties:\n");
  for (const auto& [k, v] : s.properties()) {
    std::string shown = v.size() > 120 ? v.substr(0, 117) + "..." : v;
    for (char& c : shown) if (c == '\n' || c == '\r') c = ' ';
    std::printf("    %s = %s\n", k.c_str(), shown.c_str());
  }
  std::printf("  warnings:%s\n", s.warnings().empty() ? " none" : "");
  for (const std::string& w : s.warnings()) std::printf("    %s\n", w.c_str());
  if (!opt.check) {
    std::printf("  tiles: not checked (--check decodes every tile)\n");
    return status;
  }
  std::printf("  tiles: %lld decoded, %lld absent (read as background), %zu failed\n",
              static_cast<long long>(check.tiles), static_cast<long long>(check.absent), check.failures.size());
  for (size_t i = 0; i < check.failures.size() && i < kFailuresShown; ++i) {
    std::printf("    %s\n", check.failures[i].status.message().c_str());  // it names the file, level and tile
  }
  if (check.failures.size() > kFailuresShown) {
    std::printf("    ... and %zu more\n", check.failures.size() - kFailuresShown);
  }
  return status;
}

}  // namespace

Runner add_info_command(CLI::App& app) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Print a slide's format, levels, properties and associated images");
  cmd->add_option("slide", opt->path, "Slide file")->required();
  cmd->add_flag("--json", opt->json, "Print JSON");
  cmd->add_flag("--check", opt->check, "Decode every tile; exit status 5 when any cannot be read");
  cmd->add_option("--threads", opt->threads, "Threads for --check (default: one per core)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--scene", opt->scene, "Image of a file of several (default: the format's)")->check(CLI::NonNegativeNumber);
  return [opt] { return run_info(*opt); };
}

}  // namespace tilewise::cli
