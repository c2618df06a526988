// tilewise region SLIDE --level L --x X --y Y --width W --height H -o out.png
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "png_writer.h"
#include "progress.h"
#include "tilewise/tilewise.h"

namespace tilewise::cli {
namespace {

struct RegionOptions {
  std::string path, output;
  int level = 0;
  int64_t x = 0, y = 0, width = 0, height = 0;
};

int run_region(const RegionOptions& opt) {
  auto slide = Slide::open(opt.path);
  if (!slide.ok()) return report(slide.status());
  if (opt.width <= 0 || opt.height <= 0) {
    return report(invalid_argument("--width and --height must be positive"));
  }
  Status size_ok = check_region_size(opt.width, opt.height);
  if (!size_ok.ok()) return report(size_ok);
  std::vector<uint8_t> pixels(static_cast<size_t>(opt.width * opt.height * 3));
  ImageView view{pixels.data(), opt.width * 3, static_cast<int32_t>(opt.width), static_cast<int32_t>(opt.height), 3, {}};
  if (opt.level < 0 || opt.level >= slide->level_count()) {
    return report(slide->read_region(opt.x, opt.y, opt.level, opt.width, opt.height, view));  // its error
  }
  Status s = read_level_region_with_progress(*slide, opt.level, slide->to_level_coordinate(opt.x, opt.level),
                                             slide->to_level_coordinate(opt.y, opt.level), opt.width, opt.height,
                                             view);
  if (!s.ok()) return report(s);
  return report(write_png(opt.output, view));
}

}  // namespace

Runner add_region_command(CLI::App& app) {
  auto opt = std::make_shared<RegionOptions>();
  CLI::App* cmd = app.add_subcommand("region", "Read a region and write it as PNG");
  cmd->add_option("slide", opt->path, "Slide file")->required();
  cmd->add_option("--level", opt->level, "Pyramid level")->default_val(0);
  cmd->add_option("--x", opt->x, "Left edge, level-0 pixels")->default_val(0);
  cmd->add_option("--y", opt->y, "Top edge, level-0 pixels")->default_val(0);
  cmd->add_option("--width", opt->width, "Width in pixels of the level")->required();
  cmd->add_option("--height", opt->height, "Height in pixels of the level")->required();
  cmd->add_option("-o,--output", opt->output, "Output PNG")->required();
  return [opt] { return run_region(*opt); };
}

}  // namespace tilewise::cli
