// tilewise region SLIDE --level L --x X --y Y --width W --height H -o out.png [--scene S] [--channel C ...]
// [--z Z] [--t T]: the RGB rendering, or channels of one plane (render.h).
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "png_writer.h"
#include "render.h"
#include "tilewise/tilewise.h"

namespace tilewise::cli {
namespace {

struct RegionOptions {
  std::string path, output;
  int level = 0;
  int64_t x = 0, y = 0, width = 0, height = 0;
  PlaneOptions planes;
};

int run_region(const RegionOptions& opt) {
  auto slide = open_slide(opt.path, opt.planes);
  if (!slide.ok()) return report(slide.status());
  if (opt.width <= 0 || opt.height <= 0) {
    return report(invalid_argument("--width and --height must be positive"));
  }
  if (opt.level < 0 || opt.level >= slide->level_count()) {
    uint8_t none[3];
    return report(slide->read_region(opt.x, opt.y, opt.level, 1, 1, ImageView{none, 3, 1, 1, 3, {}}));  // its error
  }
  auto pixels = render_rgb(*slide, opt.planes, opt.level, slide->to_level_coordinate(opt.x, opt.level),
                           slide->to_level_coordinate(opt.y, opt.level), opt.width, opt.height);
  if (!pixels.ok()) return report(pixels.status());
  return report(write_png(opt.output, ImageView{pixels->data(), opt.width * 3, static_cast<int32_t>(opt.width),
                                                static_cast<int32_t>(opt.height), 3, {}}));
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
  add_plane_options(*cmd, opt->planes);
  return [opt] { return run_region(*opt); };
}

}  // namespace tilewise::cli
