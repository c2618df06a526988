#include "errors.h"

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

}  // namespace tilewise::python
