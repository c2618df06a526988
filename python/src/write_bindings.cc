// tilewise._core.convert: tilewise::convert (tilewise/convert.h) with the GIL released while it runs; the
// progress callback takes the GIL for each call, and an exception it raises stops the conversion and is
// raised again to the caller once the partial output is removed.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <optional>

#include "errors.h"
#include "tilewise/tilewise.h"

namespace nb = nanobind;

namespace tilewise::python {

void bind_write(nb::module_& m) {
  m.def(
      "convert",
      [](const Slide& slide, const std::string& output, const std::string& format, int32_t tile_size,
         const std::string& codec, int quality, bool subsample, bool copy_tiles, int max_levels, nb::object progress) {
        ConvertOptions options;
        options.format = format;
        options.tile_size = tile_size;
        options.codec = codec;
        options.quality = quality;
        options.subsample = subsample;
        options.copy_tiles = copy_tiles;
        options.max_levels = max_levels;
        std::optional<nb::python_error> raised;
        if (!progress.is_none()) {
          options.progress = [&progress, &raised](int64_t done, int64_t total) {
            nb::gil_scoped_acquire gil;
            try {
              progress(done, total);
            } catch (nb::python_error& e) {
              raised.emplace(std::move(e));
              return invalid_argument("the progress callback raised");
            }
            return Status();
          };
        }
        Status s;
        {
          nb::gil_scoped_release release;
          s = convert(slide, output, options);
        }
        if (raised) throw std::move(*raised);
        throw_if_error(s);
      },
      nb::arg("slide"), nb::arg("output"), nb::arg("format"), nb::arg("tile_size"), nb::arg("codec"), nb::arg("quality"),
      nb::arg("subsample"), nb::arg("copy_tiles"), nb::arg("max_levels"), nb::arg("progress").none());
}

}  // namespace tilewise::python
