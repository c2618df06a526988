// tilewise._core: the nanobind extension. A thin layer over include/tilewise/; the Python package
// (python/tilewise/) builds the user-facing API on it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "errors.h"
#include "tilewise/memory.h"
#include "tilewise/tilewise.h"

namespace nb = nanobind;

namespace tilewise::python {
void bind_slide(nb::module_& m);
void bind_loader(nb::module_& m);
void bind_write(nb::module_& m);
}

NB_MODULE(_core, m) {
  using namespace tilewise;
  python::register_error_translator();
  python::bind_status(m);
  m.attr("__version__") = version();
  m.def("set_cache_capacity", &set_cache_capacity, nb::arg("bytes"),
        "Sets the byte budget of the process-wide decoded-tile cache (0 disables it).");
  m.def("cache_capacity", &cache_capacity);
  m.def(
      "set_shared_cache",
      [](uint64_t bytes, const std::string& name) { python::throw_if_error(set_shared_cache(bytes, name)); },
      nb::arg("bytes"), nb::arg("name") = "",
      "Moves the decoded-tile cache into shared memory with `bytes` of tile space, shared with processes forked "
      "afterwards and processes that attach to it (a name shares /dev/shm/tilewise-cache-<name> between "
      "unrelated processes).");
  m.def("shared_cache_path", &shared_cache_path);
  m.def("shared_cache_segment_bytes", &shared_cache_segment_bytes);
  m.def("clear_cache", &clear_cache);
  m.def("reset_cache_stats", &reset_cache_stats);
  m.def("cache_stats", [] {
    CacheStats s = cache_stats();
    nb::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["evictions"] = s.evictions;
    d["entries"] = s.entries;
    d["bytes"] = s.bytes;
    d["capacity"] = s.capacity;
    return d;
  });
  m.def("set_mcu_index_capacity", &set_mcu_index_capacity, nb::arg("bytes"),
        "Sets the byte budget of the MCU index of restart-interval JPEG units (NDPI, VMS) and of JPEG tiles' "
        "MCU rows (0 turns it off).");
  m.def("mcu_index_stats", [] {
    const McuIndexStats s = mcu_index_stats();
    nb::dict d;
    d["entries"] = s.entries;
    d["bytes"] = s.bytes;
    d["capacity"] = s.capacity;
    d["resumed"] = s.resumed;
    return d;
  });
  m.def("set_worker_threads", &set_worker_threads, nb::arg("threads"),
        "Sets the size of the process-wide decode pool (0 = one per hardware thread).");
  m.def("worker_threads", &worker_threads);
  m.def("set_max_region_bytes", &set_max_region_bytes, nb::arg("bytes"));
  m.def("max_region_bytes", &max_region_bytes);
  m.def(
      "check_region_size",
      [](int64_t width, int64_t height, int64_t pixel_bytes) {
        python::throw_if_error(check_region_size(width, height, pixel_bytes));
      },
      nb::arg("width"), nb::arg("height"), nb::arg("pixel_bytes") = 3,
      "Raises OutOfMemoryError when width x height x pixel_bytes exceeds max_region_bytes().");
  m.def("gpu_status", &gpu_status, nb::arg("device") = 0,
        "A Status: ok when the CUDA device can be read to, else its code (INVALID_ARGUMENT for a device that "
        "does not exist, UNSUPPORTED otherwise) and the reason.");
  m.def("current_cuda_device", &current_cuda_device,
        "The calling thread's current CUDA device (torch.cuda.set_device's), which 'cuda' without an index names.");
  m.def("gpu_stats", [](int device) {
    const GpuStats s = gpu_stats(device);
    nb::dict d;
    d["gpu_tiles"] = s.gpu_tiles;
    d["cpu_tiles"] = s.cpu_tiles;
    d["batches"] = s.batches;
    d["lanes"] = s.lanes;
    d["tile_cache_hits"] = s.tile_cache_hits;
    d["tile_cache_misses"] = s.tile_cache_misses;
    d["tile_cache_bytes"] = s.tile_cache_bytes;
    d["loader_gpu_regions"] = s.loader_gpu_regions;
    d["loader_gpu_reads"] = s.loader_gpu_reads;
    d["loader_cpu_regions"] = s.loader_cpu_regions;
    d["host_plane_regions"] = s.host_plane_regions;
    d["host_read_ns"] = s.host_read_ns;
    d["host_call_ns"] = s.host_call_ns;
    d["host_assist_ns"] = s.host_assist_ns;
    d["host_wait_ns"] = s.host_wait_ns;
    d["host_compose_ns"] = s.host_compose_ns;
    return d;
  }, nb::arg("device") = 0);
  m.def("set_nvimgcodec_directory", &set_nvimgcodec_directory, nb::arg("directory"));
  m.def("detect_format", &detect_format, nb::arg("path"),
        "The vendor name of the format that recognises the file, or None.");
  python::bind_slide(m);
  python::bind_loader(m);
  python::bind_write(m);
}
