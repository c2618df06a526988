// tilewise._core.convert and tilewise._core.write_image: tilewise::convert and tilewise::write_image
// (tilewise/convert.h) with the GIL released while they run. The progress callback and write_image's row
// reader take the GIL for each call; an exception either raises stops the writing and is raised again to
// the caller once the partial output is removed.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <optional>

#include "errors.h"
#include "tilewise/tilewise.h"

namespace nb = nanobind;

namespace tilewise::python {

namespace {

ConvertOptions convert_options(const std::string& format, int32_t tile_size, const std::string& codec, int quality,
                               bool subsample, int max_levels, const std::string& downsample) {
  ConvertOptions options;
  options.format = format;
  options.tile_size = tile_size;
  options.codec = codec;
  options.quality = quality;
  options.subsample = subsample;
  options.max_levels = max_levels;
  options.downsample = downsample;
  return options;
}

// Wraps a Python callable for a C++ callback run while the GIL is released: it takes the GIL, and keeps
// the first exception in `raised` (the callback then reports a status that stops the writing).
struct RaisedError {
  std::optional<nb::python_error> error;
  template <typename F>
  Status call(const char* what, F&& body) {
    nb::gil_scoped_acquire gil;
    try {
      return body();
    } catch (nb::python_error& e) {
      error.emplace(std::move(e));
      return invalid_argument(std::string("the ") + what + " raised");
    } catch (const std::exception& e) {  // its result was not what the binding takes (nb::cast_error)
      return invalid_argument(std::string("the ") + what + " returned what cannot be taken: " + e.what());
    }
  }
};

void set_progress(ConvertOptions& options, nb::object& progress, RaisedError& raised) {
  if (progress.is_none()) return;
  options.progress = [&progress, &raised](int64_t done, int64_t total) {
    return raised.call("progress callback", [&] {
      progress(done, total);
      return Status();
    });
  };
}

std::optional<SampleType> sample_type_named(const std::string& name) {
  for (SampleType t : {SampleType::kUint8, SampleType::kUint16, SampleType::kUint32, SampleType::kInt8, SampleType::kInt16,
                       SampleType::kInt32, SampleType::kFloat32}) {
    if (name == sample_type_name(t)) return t;
  }
  return std::nullopt;
}

using HostRows = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;  // read-only arrays too

}  // namespace

void bind_write(nb::module_& m) {
  m.def(
      "convert",
      [](const Slide& slide, const std::string& output, const std::string& format, int32_t tile_size,
         const std::string& codec, int quality, bool subsample, bool copy_tiles, int max_levels,
         const std::string& downsample, bool skip_damaged, nb::object progress, int cuda_device) {
        ConvertOptions options = convert_options(format, tile_size, codec, quality, subsample, max_levels, downsample);
        if (cuda_device >= 0) options.device = Device{DeviceType::kCuda, cuda_device};
        options.copy_tiles = copy_tiles;
        options.skip_damaged = skip_damaged;
        std::vector<std::string> skipped;
        options.skipped = [&skipped](const Status& error) { skipped.push_back(error.message()); };
        RaisedError raised;
        set_progress(options, progress, raised);
        Status s;
        {
          nb::gil_scoped_release release;
          s = convert(slide, output, options);
        }
        if (raised.error) throw std::move(*raised.error);
        throw_if_error(s);
        return skipped;
      },
      nb::arg("slide"), nb::arg("output"), nb::arg("format"), nb::arg("tile_size"), nb::arg("codec"), nb::arg("quality"),
      nb::arg("subsample"), nb::arg("copy_tiles"), nb::arg("max_levels"), nb::arg("downsample"), nb::arg("skip_damaged"),
      nb::arg("progress").none(), nb::arg("cuda_device") = -1);

  m.def(
      "stow_dicom_folder",
      [](const std::string& folder, const std::string& url, const std::vector<std::string>& headers) {
        Status s;
        {
          nb::gil_scoped_release release;
          s = stow_dicom_folder(folder, url, headers);
        }
        throw_if_error(s);
      },
      nb::arg("folder"), nb::arg("dicomweb_url"), nb::arg("headers"));

  // read(c, z, t, y, rows) returns the rows as a C-contiguous NumPy array of `rows` x width (x 3 for rgb)
  // samples of `dtype`.
  m.def(
      "write_image",
      [](nb::object read, const std::string& output, const std::string& name, int64_t width, int64_t height, int32_t channels,
         int32_t z, int32_t t, const std::string& dtype, bool rgb, std::optional<std::pair<double, double>> mpp,
         std::vector<std::string> channel_names, const std::string& format, int32_t tile_size, const std::string& codec,
         int quality, bool subsample, int max_levels, const std::string& downsample, nb::object progress) {
        const std::optional<SampleType> type = sample_type_named(dtype);
        if (!type) throw_if_error(invalid_argument("arrays of " + dtype + " are not written (uint8, uint16, uint32, int8, int16, int32, float32)"));
        ConvertOptions options = convert_options(format, tile_size, codec, quality, subsample, max_levels, downsample);
        RaisedError raised;
        set_progress(options, progress, raised);
        WritableImage image;
        image.name = name;
        image.width = width;
        image.height = height;
        image.axes.rgb = rgb;
        image.axes.channels = rgb ? 3 : channels;
        image.axes.z = z;
        image.axes.t = t;
        image.axes.sample_type = *type;
        for (const std::string& label : channel_names) image.axes.channel_info.push_back(ChannelInfo{label, {}, {}, {}, {}});
        image.mpp = mpp;
        image.read_rows = [&read, &raised, width](int32_t c, int32_t zi, int32_t ti, int64_t y, int32_t rows,
                                                   const ImageView& out) {
          return raised.call("array reader", [&]() -> Status {
            nb::object got = read(c, zi, ti, y, rows);
            const HostRows a = nb::cast<HostRows>(got);
            const size_t want = static_cast<size_t>(rows) * static_cast<size_t>(out.row_bytes());
            if (a.nbytes() != want) {
              return internal_error("the array reader gave " + std::to_string(a.nbytes()) + " bytes for " + std::to_string(rows) +
                                    " rows of " + std::to_string(width) + " pixels (" + std::to_string(want) + " expected)");
            }
            const auto* bytes = static_cast<const uint8_t*>(a.data());
            for (int32_t r = 0; r < rows; ++r) std::memcpy(out.row(r), bytes + r * out.row_bytes(), out.row_bytes());
            return Status();
          });
        };
        Status s;
        {
          nb::gil_scoped_release release;
          s = write_image(image, output, options);
        }
        if (raised.error) throw std::move(*raised.error);
        throw_if_error(s);
      },
      nb::arg("read"), nb::arg("output"), nb::arg("name"), nb::arg("width"), nb::arg("height"), nb::arg("channels"),
      nb::arg("z"), nb::arg("t"), nb::arg("dtype"), nb::arg("rgb"), nb::arg("mpp").none(), nb::arg("channel_names"),
      nb::arg("format"), nb::arg("tile_size"), nb::arg("codec"), nb::arg("quality"), nb::arg("subsample"),
      nb::arg("max_levels"), nb::arg("downsample"), nb::arg("progress").none());
}

}  // namespace tilewise::python
