// Status and Result<T>: the error model of the whole core (docs/architecture.md, "Errors").
//
// The core never throws; every fallible call returns a Status or a Result. Exceptions exist only at the
// edges: python/src/errors.cc maps codes to Python exceptions, cli/ maps them to exit codes.
// Messages carry a context chain, outermost first:
//   "slide.svs: level 2 tile (3,4) at offset 81234: jpeg: premature end of data".
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace tilewise {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller asked for something impossible (bad level, negative size)
  kNotFound,         // no such file, associated image or property
  kUnsupported,      // a valid file using a feature tilewise does not implement
  kCorrupt,          // the file violates its format (bad offsets, truncated data, decoder errors)
  kIoError,          // the operating system failed a read
  kOutOfMemory,      // an allocation or a configured size limit was exceeded
  kInternal,         // a bug in tilewise
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns this status with `context + ": "` prepended to the message (no-op when ok).
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status out_of_memory(std::string m) { return {StatusCode::kOutOfMemory, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status explaining its absence.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = internal_error("Result constructed from an ok Status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace tilewise

#define TW_CONCAT_INNER_(a, b) a##b
#define TW_CONCAT_(a, b) TW_CONCAT_INNER_(a, b)

#define TW_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::tilewise::Status tw_status_ = (expr);       \
    if (!tw_status_.ok()) return tw_status_;      \
  } while (0)

#define TW_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#define TW_ASSIGN_OR_RETURN(lhs, expr) TW_ASSIGN_OR_RETURN_IMPL_(TW_CONCAT_(tw_result_, __LINE__), lhs, expr)
