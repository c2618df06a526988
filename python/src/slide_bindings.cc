// Bindings of tilewise::Slide. Every read releases the GIL; arrays are allocated before the GIL is
// released and owned by numpy afterwards (a capsule frees them).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <cstring>

#include <memory>

#include "device_buffer.h"
#include "errors.h"
#include "tilewise/memory.h"
#include "tilewise/tilewise.h"

namespace nb = nanobind;

namespace tilewise::python {

using Array3 = nb::ndarray<nb::numpy, uint8_t, nb::ndim<3>>;
using Fill = std::optional<std::array<uint8_t, 3>>;

namespace {

Array3 new_rgb_array(int64_t width, int64_t height, uint8_t** data) {
  throw_if_error(check_region_size(width, height));
  const size_t bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  // Pooled: large arrays reuse released buffers (tilewise/memory.h). The capsule remembers the size.
  auto* buffer = static_cast<uint8_t*>(allocate_pixels(bytes));
  if (buffer == nullptr) throw StatusError(out_of_memory("cannot allocate a " + std::to_string(bytes) + "-byte array"));
  struct Owned {
    void* data;
    size_t bytes;
  };
  nb::capsule owner(new Owned{buffer, bytes}, [](void* p) noexcept {
    auto* owned = static_cast<Owned*>(p);
    free_pixels(owned->data, owned->bytes);
    delete owned;
  });
  *data = buffer;
  return Array3(buffer, {static_cast<size_t>(height), static_cast<size_t>(width), 3}, owner);
}

// The (height, width) alpha of a region of a level (Slide::read_level_alpha), the GIL released while read.
nb::ndarray<nb::numpy, uint8_t, nb::ndim<2>> read_level_alpha(const Slide& slide, int level, int64_t x, int64_t y,
                                                             int64_t width, int64_t height) {
  throw_if_error(check_region_size(width, height));
  auto* buffer = new uint8_t[static_cast<size_t>(width) * static_cast<size_t>(height)];
  nb::capsule owner(buffer, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  Status s;
  {
    nb::gil_scoped_release release;
    s = slide.read_level_alpha(level, x, y, width, height, buffer, width);
  }
  throw_if_error(s);
  return nb::ndarray<nb::numpy, uint8_t, nb::ndim<2>>(buffer, {static_cast<size_t>(height), static_cast<size_t>(width)},
                                                      owner);
}

ReadOptions options(const Fill& fill, bool use_cache) {
  ReadOptions o;
  o.fill = fill;
  o.use_cache = use_cache;
  return o;
}

Array3 read_region(const Slide& slide, int64_t x, int64_t y, int level, int64_t width, int64_t height, const Fill& fill,
                   bool use_cache, bool level_frame) {
  uint8_t* data = nullptr;
  Array3 array = new_rgb_array(width, height, &data);
  ImageView view{data, width * 3, static_cast<int32_t>(width), static_cast<int32_t>(height), 3, {}};
  Status s;
  {
    nb::gil_scoped_release release;
    s = level_frame ? slide.read_level_region(level, x, y, width, height, view, options(fill, use_cache))
                    : slide.read_region(x, y, level, width, height, view, options(fill, use_cache));
  }
  throw_if_error(s);
  return array;
}

// Reads into new device memory on `device`.
DeviceBuffer read_region_cuda(const Slide& slide, int64_t x, int64_t y, int level, int64_t width, int64_t height,
                              const Fill& fill, bool use_cache, int device) {
  throw_if_error(check_region_size(width, height));
  const size_t bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  Status error;
  auto* raw = static_cast<uint8_t*>(allocate_device_pixels(bytes, device, &error));
  throw_if_error(error);
  DeviceBuffer out{std::shared_ptr<void>(raw, [device](void* p) { free_device_pixels(p, device); }),
                   raw,
                   device,
                   {static_cast<size_t>(height), static_cast<size_t>(width), 3}};
  ImageView view{
      raw, width * 3, static_cast<int32_t>(width), static_cast<int32_t>(height), 3, Device{DeviceType::kCuda, device}};
  Status s;
  {
    nb::gil_scoped_release release;
    s = slide.read_region(x, y, level, width, height, view, options(fill, use_cache));
  }
  throw_if_error(s);
  return out;
}

// Reads into a caller-provided writable (H, W, 3) uint8 array whose rows may be strided.
void read_region_into(const Slide& slide, int64_t x, int64_t y, int level,
                      nb::ndarray<uint8_t, nb::ndim<3>, nb::device::cpu> out, const Fill& fill, bool use_cache) {
  if (out.shape(2) != 3 || out.stride(2) != 1 || out.stride(1) != 3) {
    throw StatusError(invalid_argument("out must be an (H, W, 3) uint8 array with contiguous pixels"));
  }
  const int64_t height = static_cast<int64_t>(out.shape(0)), width = static_cast<int64_t>(out.shape(1));
  ImageView view{
      out.data(), static_cast<int64_t>(out.stride(0)), static_cast<int32_t>(width), static_cast<int32_t>(height), 3,
      {}};
  Status s;
  {
    nb::gil_scoped_release release;
    s = slide.read_region(x, y, level, width, height, view, options(fill, use_cache));
  }
  throw_if_error(s);
}

// Slide::read_planes of the view's size into `view`, without the GIL; (x, y) in level-0 pixels unless
// level_frame.
void read_planes_into(const Slide& slide, int64_t x, int64_t y, int level, PlaneSelection selection,
                      const ImageView& view, const Fill& fill, bool use_cache, bool level_frame) {
  if (!level_frame && level >= 0 && level < slide.level_count()) {
    x = slide.to_level_coordinate(x, level);
    y = slide.to_level_coordinate(y, level);
  }
  Status s;
  {
    nb::gil_scoped_release release;
    s = slide.read_planes(level, x, y, view.width, view.height, std::move(selection), view, options(fill, use_cache));
  }
  throw_if_error(s);
}

// Reads channels of one plane into a caller's C-contiguous (H, W, C) array of the image's sample type
// (Slide::read_planes); (x, y) in level-0 pixels unless level_frame.
void read_planes(const Slide& slide, int64_t x, int64_t y, int level, std::vector<int32_t> channels, int32_t z,
                 int32_t t, nb::ndarray<nb::device::cpu, nb::c_contig, nb::ndim<3>> out, const Fill& fill,
                 bool use_cache, bool level_frame) {
  const int64_t height = static_cast<int64_t>(out.shape(0)), width = static_cast<int64_t>(out.shape(1));
  const auto sample = static_cast<int32_t>(out.itemsize());
  ImageView view{static_cast<uint8_t*>(out.data()), width * static_cast<int64_t>(out.shape(2)) * sample,
                 static_cast<int32_t>(width), static_cast<int32_t>(height), static_cast<int32_t>(out.shape(2)), {}, sample};
  read_planes_into(slide, x, y, level, PlaneSelection{std::move(channels), z, t}, view, fill, use_cache, level_frame);
}

// Reads channels of one plane into new device memory on `device`: an (H, W, C) buffer of the image's sample
// type (Slide::read_planes: decoded on the host, uploaded once).
DeviceBuffer read_planes_cuda(const Slide& slide, int64_t x, int64_t y, int level, std::vector<int32_t> channels,
                              int32_t z, int32_t t, int64_t width, int64_t height, const Fill& fill, bool use_cache,
                              bool level_frame, int device) {
  const ImageAxes& axes = slide.axes();
  const auto count = static_cast<int32_t>(channels.empty() ? axes.channels : static_cast<int32_t>(channels.size()));
  const int32_t sample = axes.rgb ? 1 : sample_bytes(axes.sample_type);
  throw_if_error(check_region_size(width, height, int64_t{count} * sample));
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(width) * static_cast<size_t>(height) * count * sample);
  Status error;
  auto* raw = static_cast<uint8_t*>(allocate_device_pixels(bytes, device, &error));
  throw_if_error(error);
  DeviceBuffer out{std::shared_ptr<void>(raw, [device](void* p) { free_device_pixels(p, device); }), raw, device,
                   {static_cast<size_t>(height), static_cast<size_t>(width), static_cast<size_t>(count)},
                   static_cast<uint8_t>(axes.rgb                                   ? 1
                                        : axes.sample_type == SampleType::kFloat32 ? 2
                                        : axes.sample_type == SampleType::kInt8 || axes.sample_type == SampleType::kInt16 ||
                                                  axes.sample_type == SampleType::kInt32
                                            ? 0
                                            : 1),
                   static_cast<uint8_t>(8 * sample)};
  ImageView view{raw, width * count * sample, static_cast<int32_t>(width), static_cast<int32_t>(height), count,
                 Device{DeviceType::kCuda, device}, sample};
  read_planes_into(slide, x, y, level, PlaneSelection{std::move(channels), z, t}, view, fill, use_cache, level_frame);
  return out;
}

}  // namespace

void bind_slide(nb::module_& m) {
  nb::class_<ChannelInfo>(m, "ChannelInfo")
      .def_ro("name", &ChannelInfo::name)
      .def_ro("color", &ChannelInfo::color)
      .def_ro("excitation_nm", &ChannelInfo::excitation_nm)
      .def_ro("emission_nm", &ChannelInfo::emission_nm)
      .def_ro("exposure_s", &ChannelInfo::exposure_s);
  nb::class_<ImageAxes>(m, "ImageAxes")
      .def_ro("channels", &ImageAxes::channels)
      .def_ro("z", &ImageAxes::z)
      .def_ro("t", &ImageAxes::t)
      .def_prop_ro("sample_type", [](const ImageAxes& a) { return std::string(sample_type_name(a.sample_type)); })
      .def_ro("rgb", &ImageAxes::rgb)
      .def_ro("default_z", &ImageAxes::default_z)
      .def_ro("z_spacing", &ImageAxes::z_spacing)
      .def_ro("channel_info", &ImageAxes::channel_info);

  nb::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def_prop_ro("ptr", [](const DeviceBuffer& b) { return reinterpret_cast<uintptr_t>(b.data); })
      .def_prop_ro("device", [](const DeviceBuffer& b) { return b.device; })
      .def_prop_ro("dtype",
                   [](const DeviceBuffer& b) {
                     const char* kind = b.type_code == 2 ? "float" : b.type_code == 0 ? "int" : "uint";
                     return std::string(kind) + std::to_string(b.type_bits);
                   })
      .def_prop_ro("shape",
                   [](const DeviceBuffer& b) {
                     nb::list out;
                     for (size_t d : b.shape) out.append(d);
                     return nb::tuple(out);
                   })
      .def("__dlpack_device__", [](const DeviceBuffer& b) { return nb::make_tuple(2, b.device); })  // kDLCUDA
      .def(
          "__dlpack__",
          [](const DeviceBuffer& b, nb::args, nb::kwargs) {
            // A fresh capsule per call, each holding a reference to the memory.
            auto* holder = new std::shared_ptr<void>(b.owner);
            nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::shared_ptr<void>*>(p); });
            const nb::dlpack::dtype type{b.type_code, b.type_bits, 1};
            return nb::ndarray<nb::device::cuda>(b.data, b.shape.size(), b.shape.data(), owner, nullptr, type,
                                                 nb::device::cuda::value, b.device);
          },
          "A DLPack capsule of the region (the data is complete: no stream synchronisation is needed).");

  nb::class_<LevelInfo>(m, "LevelInfo")
      .def_ro("width", &LevelInfo::width)
      .def_ro("height", &LevelInfo::height)
      .def_ro("tile_width", &LevelInfo::tile_width)
      .def_ro("tile_height", &LevelInfo::tile_height)
      .def_ro("tiled", &LevelInfo::tiled)
      .def_ro("downsample", &LevelInfo::downsample)
      .def_ro("compression", &LevelInfo::compression)
      .def_ro("samples_per_pixel", &LevelInfo::samples_per_pixel)
      .def_ro("alpha_sample", &LevelInfo::alpha_sample)
      .def_ro("alpha_associated", &LevelInfo::alpha_associated);
  nb::class_<AssociatedImageInfo>(m, "AssociatedImageInfo")
      .def_ro("name", &AssociatedImageInfo::name)
      .def_ro("width", &AssociatedImageInfo::width)
      .def_ro("height", &AssociatedImageInfo::height);
  nb::class_<SceneInfo>(m, "SceneInfo")
      .def_ro("name", &SceneInfo::name)
      .def_ro("width", &SceneInfo::width)
      .def_ro("height", &SceneInfo::height);

  nb::class_<Slide>(m, "Slide")
      .def_static(
          "open",
          [](const std::string& path, std::optional<int32_t> scene, const std::string& token,
             const std::vector<std::string>& headers) {
            Result<Slide> r = [&] {
              nb::gil_scoped_release release;
              return Slide::open(path, OpenOptions{scene, token, headers});
            }();
            return value_or_throw(std::move(r));
          },
          nb::arg("path"), nb::arg("scene") = nb::none(), nb::arg("token") = "",
          nb::arg("headers") = std::vector<std::string>{})
      .def_static(
          "open_reader",
          [](nb::callable read, uint64_t size, const std::string& name, std::optional<int32_t> scene) {
            // `read(offset, length) -> bytes` is called from reading threads, each taking the interpreter's
            // lock; the callable is released with that lock held, whichever thread drops the last reference.
            auto held = std::shared_ptr<nb::callable>(new nb::callable(std::move(read)), [](nb::callable* c) {
              nb::gil_scoped_acquire gil;
              delete c;
            });
            Slide::ReadAt read_at = [held](std::span<uint8_t> out, uint64_t offset) -> Status {
              nb::gil_scoped_acquire gil;
              try {
                nb::object data = (*held)(offset, out.size());
                nb::bytes b = nb::cast<nb::bytes>(data);
                if (b.size() != out.size()) {
                  return io_error("read of " + std::to_string(out.size()) + " bytes at offset " +
                                  std::to_string(offset) + " returned " + std::to_string(b.size()));
                }
                std::memcpy(out.data(), b.data(), out.size());
                return Status();
              } catch (nb::python_error& e) {
                // The exception's type and message, not the traceback that what() carries.
                const std::string type = nb::cast<std::string>(nb::handle(e.type()).attr("__name__"));
                return io_error("the file object's read at offset " + std::to_string(offset) + " failed: " + type +
                                ": " + nb::cast<std::string>(nb::str(e.value())));
              } catch (const std::exception& e) {
                return io_error(std::string("the file object's read failed: ") + e.what());
              }
            };
            Result<Slide> r = [&] {
              nb::gil_scoped_release release;
              return Slide::open_reader(std::move(read_at), size, name, OpenOptions{scene});
            }();
            return value_or_throw(std::move(r));
          },
          nb::arg("read"), nb::arg("size"), nb::arg("name"), nb::arg("scene") = nb::none())
      .def_static(
          "open_bytes",
          [](nb::bytes data, const std::string& name) {
            std::vector<uint8_t> bytes(static_cast<const uint8_t*>(data.data()),
                                       static_cast<const uint8_t*>(data.data()) + data.size());
            return value_or_throw(Slide::open_memory(std::move(bytes), name));
          },
          nb::arg("data"), nb::arg("name") = "<memory>")
      .def_prop_ro("path", &Slide::path)
      .def_prop_ro("format", &Slide::format)
      .def_prop_ro("level_count", &Slide::level_count)
      .def_prop_ro("levels", &Slide::levels)
      .def_prop_ro("axes", &Slide::axes, nb::rv_policy::reference_internal)
      .def_prop_ro("scenes", &Slide::scenes, nb::rv_policy::reference_internal)
      .def_prop_ro("scene", &Slide::scene)
      .def_prop_ro(
          "properties",
          [](const Slide& s) {
            nb::dict d;
            for (const auto& [k, v] : s.properties()) {
              // Metadata is not always UTF-8: undecodable bytes are escaped, never fatal.
              PyObject* key = PyUnicode_DecodeUTF8(k.data(), static_cast<Py_ssize_t>(k.size()), "backslashreplace");
              PyObject* val = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "backslashreplace");
              if (!key || !val) throw nb::python_error();
              d[nb::steal(key)] = nb::steal(val);
            }
            return d;
          })
      .def_prop_ro("icc_profile",
                   [](const Slide& s) {
                     const auto& icc = s.icc_profile();
                     return nb::bytes(reinterpret_cast<const char*>(icc.data()), icc.size());
                   })
      .def("associated_icc_profile",
           [](const Slide& s, const std::string& name) {
             const auto& icc = s.associated_icc_profile(name);
             return nb::bytes(reinterpret_cast<const char*>(icc.data()), icc.size());
           })
      .def_prop_ro("background", &Slide::background)
      .def_prop_ro("mpp", &Slide::mpp)
      .def_prop_ro("associated_images", &Slide::associated_images)
      .def("read_associated_image",
           [](const Slide& s, const std::string& name) {
             Result<RgbImage> r = [&] {
               nb::gil_scoped_release release;
               return s.read_associated_image(name);
             }();
             RgbImage image = value_or_throw(std::move(r));
             uint8_t* data = nullptr;
             Array3 array = new_rgb_array(image.width, image.height, &data);
             std::copy(image.pixels.begin(), image.pixels.end(), data);
             return array;
           })
      .def("best_level_for_downsample", &Slide::best_level_for_downsample)
      .def("absent_tiles", &Slide::absent_tiles, nb::arg("level"),
           "Row-major indices of the level's tiles the file does not store (they read as the fill colour).")
      .def("read_level_alpha", &read_level_alpha, nb::arg("level"), nb::arg("x"), nb::arg("y"), nb::arg("width"),
           nb::arg("height"),
           "The (height, width) uint8 alpha of the region (level pixels): the stored alpha sample where the level "
           "has one, 255 for other stored pixels, 0 where nothing is stored.")
      .def("stored_area", &Slide::stored_area, nb::arg("level"), nb::arg("x"), nb::arg("y"), nb::arg("width"),
           nb::arg("height"),
           "The (x, y, width, height) rectangles (level pixels) of the region that the file stores pixels for.")
      .def_prop_ro("warnings",
                   [](const Slide& s) {
                     nb::list out;
                     for (const std::string& w : s.warnings()) {
                       PyObject* text =
                           PyUnicode_DecodeUTF8(w.data(), static_cast<Py_ssize_t>(w.size()), "backslashreplace");
                       if (!text) throw nb::python_error();
                       out.append(nb::steal(text));
                     }
                     return out;
                   })
      .def("read_region", &read_region, nb::arg("x"), nb::arg("y"), nb::arg("level"), nb::arg("width"),
           nb::arg("height"), nb::arg("fill") = nb::none(), nb::arg("use_cache") = true, nb::arg("level_frame") = false,
           "Reads a region at level-0 location (x, y) (or level coordinates with level_frame=True) into a new "
           "(height, width, 3) uint8 array.")
      .def("read_region_cuda", &read_region_cuda, nb::arg("x"), nb::arg("y"), nb::arg("level"), nb::arg("width"),
           nb::arg("height"), nb::arg("fill") = nb::none(), nb::arg("use_cache") = true, nb::arg("device") = 0)
      .def("read_planes", &read_planes, nb::arg("x"), nb::arg("y"), nb::arg("level"), nb::arg("channels"), nb::arg("z"),
           nb::arg("t"), nb::arg("out"), nb::arg("fill") = nb::none(), nb::arg("use_cache") = true,
           nb::arg("level_frame") = false,
           "Reads channels (empty: all) of plane (z, t) into out, a C-contiguous (height, width, channels) array "
           "of the image's sample type.")
      .def("read_planes_cuda", &read_planes_cuda, nb::arg("x"), nb::arg("y"), nb::arg("level"), nb::arg("channels"),
           nb::arg("z"), nb::arg("t"), nb::arg("width"), nb::arg("height"), nb::arg("fill") = nb::none(),
           nb::arg("use_cache") = true, nb::arg("level_frame") = false, nb::arg("device") = 0,
           "Reads channels (empty: all) of plane (z, t) into new (height, width, channels) device memory of the "
           "image's sample type (decoded on the host, uploaded once).")
      .def("read_region_into", &read_region_into, nb::arg("x"), nb::arg("y"), nb::arg("level"), nb::arg("out"),
           nb::arg("fill") = nb::none(), nb::arg("use_cache") = true);
}

}  // namespace tilewise::python
