// What the region and thumbnail commands draw: a slide's RGB rendering, or the channels of one plane asked
// for with --channel/--z/--t - one channel as grey, several as a false-colour composite (each channel
// stretched between its 0.1st and 99.9th percentiles in the area read, tinted with the colour the file gives
// it or a fixed palette, and added).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <vector>

#include "tilewise/tilewise.h"

namespace tilewise::cli {

struct PlaneOptions {
  std::vector<int32_t> channels;  // empty: the RGB rendering (with z and t at 0)
  int32_t z = -1;  // -1: the default focal plane (ImageAxes::default_z)
  int32_t t = 0;
  int32_t scene = -1;  // -1: the format's default
};

// Adds --scene, --channel (repeatable), --z and --t to a command.
void add_plane_options(CLI::App& cmd, PlaneOptions& options);

// Opens the slide at the scene asked for.
Result<Slide> open_slide(const std::string& path, const PlaneOptions& options);

// width x height pixels of `level` at (x, y) in its own frame, as 8-bit RGB.
Result<std::vector<uint8_t>> render_rgb(const Slide& slide, const PlaneOptions& options, int level, int64_t x,
                                        int64_t y, int64_t width, int64_t height);

}  // namespace tilewise::cli
