#include "errors.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace tilewise::python {

namespace {
const char* class_name(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return "InvalidArgumentError";
    case StatusCode::kNotFound: return "NotFoundError";
    case StatusCode::kUnsupported: return "UnsupportedError";
    case StatusCode::kCorrupt: return "CorruptError";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kOutOfMemory: return "OutOfMemoryError";
    default: return "InternalError";
  }
}
}  // namespace

void register_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object errors = nb::module_::import_("tilewise.errors");
      nb::object cls = errors.attr(class_name(e.code()));
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
}

void bind_status(nb::module_& m) {
  nb::enum_<StatusCode>(m, "StatusCode")
      .value("OK", StatusCode::kOk)
      .value("INVALID_ARGUMENT", StatusCode::kInvalidArgument)
      .value("NOT_FOUND", StatusCode::kNotFound)
      .value("UNSUPPORTED", StatusCode::kUnsupported)
      .value("CORRUPT", StatusCode::kCorrupt)
      .value("IO_ERROR", StatusCode::kIoError)
      .value("OUT_OF_MEMORY", StatusCode::kOutOfMemory)
      .value("INTERNAL", StatusCode::kInternal);
  nb::class_<Status>(m, "Status")
      .def(nb::init<>(), "An ok status.")
      .def_prop_ro("ok", &Status::ok)
      .def_prop_ro("code", &Status::code)
      .def_prop_ro("message", [](const Status& s) { return s.message(); })
      .def("__bool__", &Status::ok)
      .def(
          "raise_if_error",
          [](const Status& s, const std::string& context) {
            throw_if_error(context.empty() ? s : s.with_context(context));
          },
          nb::arg("context") = "", "Raises the tilewise error of this status (context prefixed) unless it is ok.")
      .def("__repr__", [](const Status& s) {
        return s.ok() ? std::string("Status(OK)")
                      : std::string("Status(") + status_code_name(s.code()) + ", " + s.message() + ")";
      });
}

}  // namespace tilewise::python
