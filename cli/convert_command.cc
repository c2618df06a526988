// tilewise convert SLIDE OUT.tif|OUT.ome.tif|OUT.svs|OUT.zarr|FOLDER --format dicom [--tile-size N]
// [--codec auto|jpeg|jpeg2000|jpeg2000-lossless|deflate|zstd|lzw|jpegls|none] [--quality Q] [--no-subsample] [--copy-tiles] [--levels N]
// [--downsample mean|nearest] [--skip-damaged] [--device cpu|cuda[:N]] [--scene S] [--stow DICOMWEB_URL [--header "Name: value" ...]]:
// the slide as a tiled pyramidal TIFF, an OME-TIFF, an Aperio SVS, an OME-Zarr group or a DICOM WSI series
// (tilewise/convert.h), with a progress bar on a terminal.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "progress.h"
#include "render.h"
#include "tilewise/tilewise.h"

namespace tilewise::cli {
namespace {

struct ConvertCommandOptions {
  std::string path, output, stow, device = "cpu";
  std::vector<std::string> headers;
  int32_t scene = -1;
  ConvertOptions convert;
};

// "cpu", "cuda" (device 0) or "cuda:N".
Result<Device> parse_device(const std::string& name) {
  if (name == "cpu") return Device{};
  if (name == "cuda") return Device{DeviceType::kCuda, 0};
  if (name.rfind("cuda:", 0) == 0 && name.size() > 5 && name.find_first_not_of("0123456789", 5) == std::string::npos) {
    return Device{DeviceType::kCuda, std::stoi(name.substr(5))};
  }
  return invalid_argument("unknown device \"" + name + "\" (use cpu, cuda or cuda:N)");
}

int run_convert(const ConvertCommandOptions& opt) {
  if (!opt.stow.empty() && opt.convert.format != "dicom") {
    return report(invalid_argument("--stow sends a DICOM series: give --format dicom"));
  }
  const Result<Device> device = parse_device(opt.device);
  if (!device.ok()) return report(device.status());
  PlaneOptions planes;
  planes.scene = opt.scene;
  auto slide = open_slide(opt.path, planes);
  if (!slide.ok()) return report(slide.status());
  ConvertOptions options = opt.convert;
  options.device = *device;
  const bool bar = isatty(STDERR_FILENO);
  if (bar) {
    options.progress = [](int64_t done, int64_t total) {
      draw_progress(done, total);
      return Status();
    };
  }
  int64_t skipped = 0;
  options.skipped = [&skipped, bar](const Status& error) {
    std::fprintf(stderr, "%sskipped (written as background): %s\n", bar ? "\n" : "", error.message().c_str());
    ++skipped;
  };
  const Status s = convert(*slide, opt.output, options);
  if (bar) std::fprintf(stderr, "\n");
  if (s.ok() && skipped > 0) std::fprintf(stderr, "%lld damaged tiles written as background\n", static_cast<long long>(skipped));
  if (!s.ok() || opt.stow.empty()) return report(s);
  return report(stow_dicom_folder(opt.output, opt.stow, opt.headers));
}

}  // namespace

Runner add_convert_command(CLI::App& app) {
  auto opt = std::make_shared<ConvertCommandOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "Write the slide as a tiled pyramidal TIFF, an OME-TIFF, an Aperio SVS, an OME-Zarr group or a DICOM WSI series");
  cmd->add_option("slide", opt->path, "Slide file")->required();
  cmd->add_option("output", opt->output, "Output: .tif/.tiff (generic pyramid, RGB), .ome.tif/.ome.tiff, .svs (Aperio), .zarr (OME-Zarr); a folder with --format dicom")
      ->required();
  cmd->add_option("--format", opt->convert.format, "tiff, ome-tiff, svs, ome-zarr or dicom (default: from the output's name)");
  cmd->add_option("--tile-size", opt->convert.tile_size, "Tile width and height (a multiple of 16)")->default_val(256);
  cmd->add_option("--codec", opt->convert.codec, "Tile codec: auto (OME-Zarr zstd; else jpeg for RGB, deflate for channels), jpeg, jpeg2000, jpeg2000-lossless, deflate, zstd, lzw, jpegls (DICOM) or none")
      ->default_val("auto");
  cmd->add_option("--quality", opt->convert.quality, "JPEG and lossy JPEG 2000 quality (1-100)")->default_val(90);
  cmd->add_flag("!--no-subsample", opt->convert.subsample, "JPEG chroma 4:4:4 instead of 4:2:0");
  cmd->add_flag("--copy-tiles", opt->convert.copy_tiles,
                "Copy level 0's JPEG tiles as stored where they match the output's, instead of re-encoding them");
  cmd->add_option("--levels", opt->convert.max_levels, "At most this many levels (0: down to one tile)")->default_val(0);
  cmd->add_option("--downsample", opt->convert.downsample, "Each level from the one before: mean (2 x 2 box) or nearest")
      ->default_val("mean");
  cmd->add_flag("--skip-damaged", opt->convert.skip_damaged,
                "Write damaged source tiles as background, listing them, instead of stopping at the first");
  cmd->add_option("--stow", opt->stow, "With --format dicom: then store the series on this DICOMweb service (STOW-RS)");
  cmd->add_option("--header", opt->headers, "A header for --stow's requests, \"Name: value\" (repeatable)");
  cmd->add_option("--device", opt->device,
                  "cpu, or cuda / cuda:N: decode, halve and encode on the GPU (RGB; jpeg, jpeg2000, jpeg2000-lossless; "
                  "experimental: TILEWISE_GPU_CONVERT=1)")
      ->default_val("cpu");
  cmd->add_option("--scene", opt->scene, "Scene of a file that holds several")->default_val(-1);
  return [opt] { return run_convert(*opt); };
}

}  // namespace tilewise::cli
