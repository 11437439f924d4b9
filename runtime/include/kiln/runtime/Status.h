//===- Status.h - Error values for the Kiln runtime -----------------------===//
//
// The runtime reports every failure as a value carrying a message a user can
// act on; it never throws and never asserts on input it did not produce.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_STATUS_H
#define KILN_RUNTIME_STATUS_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace kiln::runtime {

/// What kind of failure a Status is, so that callers can map it to their own
/// error types (Python raises IndexError for IndexOutOfRange). Values are
/// part of the artifact format (CheckCmd::code): never renumber.
enum class StatusCode : uint8_t {
  Ok = 0,
  Error = 1,           // anything else
  IndexOutOfRange = 2, // a kernel's index check failed (ATen's IndexError)
  OutOfMemory = 3,     // an allocation failed (Python's MemoryError)
  Unavailable = 4,     // the device or its driver is not on this machine
};

class [[nodiscard]] Status {
public:
  /// A default-constructed Status is OK.
  Status() = default;

  static Status OK() { return Status(); }
  static Status error(std::string message) {
    return Status(StatusCode::Error, std::move(message));
  }
  /// An error of a given code; `code` must not be Ok.
  static Status error(StatusCode code, std::string message) {
    return Status(code == StatusCode::Ok ? StatusCode::Error : code, std::move(message));
  }

  bool ok() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  /// Empty for OK statuses.
  const std::string &message() const { return message_; }

  /// Returns "context: message" for errors and OK unchanged, so callers can
  /// say where a failure happened without losing what it was.
  Status withContext(const std::string &context) const;

private:
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

namespace detail {
/// Aborts with the status message: reading the value of a failed StatusOr is a
/// bug in the caller, not an input error.
[[noreturn]] void fatalBadStatusOrAccess(const Status &status);
/// Replaces an OK status given where an error was required.
Status okStatusAsError();
} // namespace detail

/// Either a value or the error explaining why there is none.
template <class T> class [[nodiscard]] StatusOr {
public:
  StatusOr(const T &value) : value_(value) {}
  StatusOr(T &&value) : value_(std::move(value)) {}
  /// `status` must be an error; an OK status becomes an internal error rather
  /// than a StatusOr with neither value nor error.
  StatusOr(Status status)
      : status_(status.ok() ? detail::okStatusAsError() : std::move(status)) {}

  bool ok() const { return value_.has_value(); }
  const Status &status() const { return status_; }

  T &value() & {
    check();
    return *value_;
  }
  const T &value() const & {
    check();
    return *value_;
  }
  T &&value() && {
    check();
    return std::move(*value_);
  }

  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  void check() const {
    if (!value_)
      detail::fatalBadStatusOrAccess(status_);
  }

  Status status_;
  std::optional<T> value_;
};

} // namespace kiln::runtime

/// Returns the Status of `expr` from the enclosing function if it failed.
#define KILN_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::kiln::runtime::Status kilnStatus_ = (expr);                              \
    if (!kilnStatus_.ok())                                                     \
      return kilnStatus_;                                                      \
  } while (0)

#endif // KILN_RUNTIME_STATUS_H
