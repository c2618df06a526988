// Bindings of tilewise::BatchLoader. Options travel as a BatchOptions object (named fields, the C++
// struct's), not as positional arguments. next() releases the GIL while it waits; each batch becomes a numpy
// array that shares the batch buffer (a capsule holds a reference), so arrays stay valid while held. A batch
// with a failed item raises that item's error (typed, naming batch, item and location) from next() itself.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "device_buffer.h"
#include "errors.h"
#include "tilewise/batch_loader.h"

namespace nb = nanobind;

namespace tilewise::python {

namespace {

using Locations = nb::ndarray<const int64_t, nb::ndim<2>, nb::device::cpu>;

struct PyLoader {
  std::unique_ptr<BatchLoader> loader;
  std::vector<std::pair<int64_t, int64_t>> locations;
  std::vector<int64_t> last_indices;  // location indices of the batch returned (or raised) last
};

}  // namespace

void bind_loader(nb::module_& m) {
  nb::class_<BatchOptions>(m, "BatchOptions", "Options of a batch loader (tilewise/batch_loader.h).")
      .def(nb::init<>())
      .def_rw("level", &BatchOptions::level)
      .def_rw("width", &BatchOptions::width)
      .def_rw("height", &BatchOptions::height)
      .def_rw("batch_size", &BatchOptions::batch_size)
      .def_rw("num_workers", &BatchOptions::num_workers)
      .def_rw("prefetch", &BatchOptions::prefetch)
      .def_rw("shuffle", &BatchOptions::shuffle)
      .def_rw("seed", &BatchOptions::seed)
      .def_rw("drop_last", &BatchOptions::drop_last)
      .def(
          "set_planes",
          [](BatchOptions& o, std::vector<int32_t> channels, int32_t z, int32_t t) {
            o.planes = PlaneSelection{std::move(channels), z, t};
          },
          nb::arg("channels"), nb::arg("z"), nb::arg("t"))
      .def_prop_rw(
          "fill", [](const BatchOptions& o) { return o.read.fill; },
          [](BatchOptions& o, std::optional<std::array<uint8_t, 3>> fill) { o.read.fill = fill; })
      .def_prop_rw(
          "use_cache", [](const BatchOptions& o) { return o.read.use_cache; },
          [](BatchOptions& o, bool use_cache) { o.read.use_cache = use_cache; })
      .def_prop_rw(
          "cuda_device", [](const BatchOptions& o) -> std::optional<int> {
            if (o.device.is_cpu()) return std::nullopt;
            return o.device.index;
          },
          [](BatchOptions& o, std::optional<int> index) {
            o.device = index ? Device{DeviceType::kCuda, *index} : Device{};
          },
          "None: batches in host memory; N: in the memory of CUDA device N.");

  nb::class_<PyLoader>(m, "BatchLoader")
      .def(
          "__init__",
          [](PyLoader* self, const Slide& slide, Locations locations, const BatchOptions& options) {
            if (locations.shape(1) != 2) throw StatusError(invalid_argument("locations must be an (N, 2) array"));
            std::vector<std::pair<int64_t, int64_t>> locs;
            locs.reserve(locations.shape(0));
            auto view = locations.view();
            for (size_t i = 0; i < locations.shape(0); ++i) locs.emplace_back(view(i, 0), view(i, 1));
            auto created = BatchLoader::create(slide, locs, options);
            if (!created.ok()) throw StatusError(created.status());
            new (self) PyLoader{std::move(created).value(), std::move(locs), {}};
          },
          nb::arg("slide"), nb::arg("locations"), nb::arg("options"))
      .def("__len__", [](const PyLoader& self) { return self.loader ? self.loader->batch_count() : 0; })
      .def("close", [](PyLoader& self) { self.loader.reset(); })
      .def_ro("last_indices", &PyLoader::last_indices)
      .def(
          "next",
          [](PyLoader& self) -> nb::object {
            if (!self.loader) return nb::none();
            std::optional<Batch> batch;
            {
              nb::gil_scoped_release release;
              batch = self.loader->next();
            }
            if (!batch) return nb::none();
            self.last_indices = batch->locations_index;
            throw_if_error(batch->first_error(self.locations));
            // RGB, or the planes' samples as bytes (tilewise.slide views them as the image's type)
            const std::vector<size_t> shape = {static_cast<size_t>(batch->count), static_cast<size_t>(batch->height),
                                               static_cast<size_t>(batch->width),
                                               static_cast<size_t>(batch->channels * batch->sample_bytes)};
            if (!batch->pixels->device().is_cpu()) {
              return nb::cast(DeviceBuffer{batch->pixels, batch->pixels->data(), batch->pixels->device().index, shape});
            }
            auto* holder = new std::shared_ptr<BatchBuffer>(batch->pixels);
            nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::shared_ptr<BatchBuffer>*>(p); });
            return nb::cast(nb::ndarray<nb::numpy, uint8_t, nb::ndim<4>>(batch->pixels->data(), 4, shape.data(), owner));
          },
          "The next batch, an (N, H, W, 3) array (a DeviceBuffer for CUDA batches); None at the end. Raises the "
          "first failed item's error.");
}

}  // namespace tilewise::python
