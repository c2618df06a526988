// The one place where core Status codes become Python exceptions (classes defined in tilewise/errors.py).
#pragma once

#include <nanobind/nanobind.h>

#include <stdexcept>
#include <string>

#include "tilewise/status.h"

namespace tilewise::python {

// Thrown by binding code to carry a Status to the translator.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(const Status& s) : std::runtime_error(s.message()), code_(s.code()) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

inline void throw_if_error(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}

template <typename T>
T value_or_throw(Result<T>&& r) {
  if (!r.ok()) throw StatusError(r.status());
  return std::move(r).value();
}

void register_error_translator();
// tilewise._core.StatusCode (the core's codes) and tilewise._core.Status (ok, code, message,
// raise_if_error()): how a status that is not raised at once (gpu_status) reaches Python.
void bind_status(nanobind::module_& m);

}  // namespace tilewise::python
