// Bindings of tilewise::BatchLoader. next() releases the GIL while it waits; each batch becomes a numpy
// array that shares the batch buffer (a capsule holds a reference), so arrays stay valid while held.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

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
};

}  // namespace

void bind_loader(nb::module_& m) {
  nb::class_<PyLoader>(m, "BatchLoader")
      .def(
          "__init__",
          [](PyLoader* self, const Slide& slide, Locations locations, int level, int64_t width, int64_t height,
             int batch_size, int num_workers, int prefetch, bool shuffle, uint64_t seed, bool drop_last,
             std::optional<std::array<uint8_t, 3>> fill, bool use_cache, int device) {
            if (locations.shape(1) != 2) throw StatusError(invalid_argument("locations must be an (N, 2) array"));
            new (self) PyLoader();
            const size_t n = locations.shape(0);
            self->locations.reserve(n);
            auto view = locations.view();
            for (size_t i = 0; i < n; ++i) self->locations.emplace_back(view(i, 0), view(i, 1));
            BatchOptions opt;
            opt.level = level;
            opt.width = width;
            opt.height = height;
            opt.batch_size = batch_size;
            opt.num_workers = num_workers;
            opt.prefetch = prefetch;
            opt.shuffle = shuffle;
            opt.seed = seed;
            opt.drop_last = drop_last;
            opt.read.fill = fill;
            opt.read.use_cache = use_cache;
            if (device >= 0) opt.device = Device{DeviceType::kCuda, device};
            auto created = BatchLoader::create(slide, self->locations, opt);
            if (!created.ok()) {
              self->~PyLoader();
              throw StatusError(created.status());
            }
            self->loader = std::move(created).value();
          },
          nb::arg("slide"), nb::arg("locations"), nb::arg("level"), nb::arg("width"), nb::arg("height"),
          nb::arg("batch_size"), nb::arg("num_workers"), nb::arg("prefetch"), nb::arg("shuffle"), nb::arg("seed"),
          nb::arg("drop_last"), nb::arg("fill") = nb::none(), nb::arg("use_cache") = true, nb::arg("device") = -1)
      .def("__len__", [](const PyLoader& self) { return self.loader ? self.loader->batch_count() : 0; })
      .def("close", [](PyLoader& self) { self.loader.reset(); })
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
            nb::object pixels;
            const std::vector<size_t> shape = {static_cast<size_t>(batch->count), static_cast<size_t>(batch->height),
                                               static_cast<size_t>(batch->width), 3};
            if (!batch->pixels->device().is_cpu()) {
              pixels = nb::cast(DeviceBuffer{batch->pixels, batch->pixels->data(), batch->pixels->device().index, shape});
            } else {
              auto* holder = new std::shared_ptr<BatchBuffer>(batch->pixels);
              nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<std::shared_ptr<BatchBuffer>*>(p); });
              pixels = nb::cast(nb::ndarray<nb::numpy, uint8_t, nb::ndim<4>>(batch->pixels->data(), 4, shape.data(), owner));
            }
            nb::list indices;
            for (int64_t i : batch->locations_index) indices.append(i);
            Status error = batch->first_error(self.locations);
            nb::object err = nb::none();
            if (!error.ok()) err = nb::make_tuple(static_cast<int>(error.code()), error.message());
            return nb::make_tuple(pixels, indices, err);
          },
          "The next batch as (array (N, H, W, 3), location indices, error or None); None at the end.");

  m.def("raise_status", [](int code, const std::string& message) {
    throw StatusError(Status(static_cast<StatusCode>(code), message));
  });
}

}  // namespace tilewise::python
