// tilewise thumbnail SLIDE -o out.png [--size N] [--scene S] [--channel C ...] [--z Z] [--t T]: the whole
// slide scaled to fit N x N (box filter from the smallest level at least that large), of its RGB rendering
// or of channels of one plane (render.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "png_writer.h"
#include "render.h"
#include "tilewise/tilewise.h"

namespace tilewise::cli {
namespace {

struct ThumbnailOptions {
  std::string path, output;
  int size = 512;
  PlaneOptions planes;
};

int run_thumbnail(const ThumbnailOptions& opt) {
  auto slide = open_slide(opt.path, opt.planes);
  if (!slide.ok()) return report(slide.status());
  if (opt.size <= 0) return report(invalid_argument("--size must be positive"));
  const LevelInfo& base = slide->level(0);
  const double scale = std::max(static_cast<double>(base.width) / opt.size, static_cast<double>(base.height) / opt.size);
  const int level = slide->best_level_for_downsample(std::max(scale, 1.0));
  const LevelInfo& l = slide->level(level);
  auto src = render_rgb(*slide, opt.planes, level, 0, 0, l.width, l.height);
  if (!src.ok()) return report(src.status());
  const ImageView src_view{src->data(), l.width * 3, static_cast<int32_t>(l.width), static_cast<int32_t>(l.height), 3, {}};
  const int64_t tw = std::max<int64_t>(1, std::llround(base.width / std::max(scale, 1.0)));
  const int64_t th = std::max<int64_t>(1, std::llround(base.height / std::max(scale, 1.0)));
  std::vector<uint8_t> dst(static_cast<size_t>(tw * th * 3));
  for (int64_t y = 0; y < th; ++y) {
    const int64_t sy0 = y * l.height / th, sy1 = std::max(sy0 + 1, (y + 1) * l.height / th);
    for (int64_t x = 0; x < tw; ++x) {
      const int64_t sx0 = x * l.width / tw, sx1 = std::max(sx0 + 1, (x + 1) * l.width / tw);
      uint64_t sum[3] = {0, 0, 0};
      for (int64_t sy = sy0; sy < sy1; ++sy)
        for (int64_t sx = sx0; sx < sx1; ++sx)
          for (int c = 0; c < 3; ++c) sum[c] += src_view.pixel(sx, sy)[c];
      const uint64_t n = static_cast<uint64_t>((sy1 - sy0) * (sx1 - sx0));
      for (int c = 0; c < 3; ++c) dst[static_cast<size_t>((y * tw + x) * 3 + c)] = static_cast<uint8_t>((sum[c] + n / 2) / n);
    }
  }
  return report(write_png(opt.output, ImageView{dst.data(), tw * 3, static_cast<int32_t>(tw), static_cast<int32_t>(th), 3, {}}));
}

}  // namespace

Runner add_thumbnail_command(CLI::App& app) {
  auto opt = std::make_shared<ThumbnailOptions>();
  CLI::App* cmd = app.add_subcommand("thumbnail", "Write a thumbnail of the whole slide as PNG");
  cmd->add_option("slide", opt->path, "Slide file")->required();
  cmd->add_option("-o,--output", opt->output, "Output PNG")->required();
  cmd->add_option("--size", opt->size, "Largest side in pixels")->default_val(512);
  add_plane_options(*cmd, opt->planes);
  return [opt] { return run_thumbnail(*opt); };
}

}  // namespace tilewise::cli
