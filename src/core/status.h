// Status and Result<T>: how kpilot reports its own errors (never a candidate's verdict).
//
// A Status is a code plus a message that names the file, field or command involved and, where
// possible, how to fix it. Result<T> holds either a value or a non-ok Status. Library code never
// throws across module boundaries and never calls exit(); callers test `ok()` and return early.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace kpilot {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,  // the user's input is wrong (task.toml, flags, candidate path): exit code 2
  kNotFound,      // a file or record that should exist does not: exit code 2
  kUnavailable,   // the machine lacks what was asked for (no GPU, no nvcc): exit code 3
  kInternal,      // kpilot itself failed (I/O, SQLite, a subprocess it could not start)
  kTimeout,       // a bounded operation ran out of time
};

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidInput(std::string msg) { return Status(StatusCode::kInvalidInput, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(StatusCode::kUnavailable, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
  static Status Timeout(std::string msg) { return Status(StatusCode::kTimeout, std::move(msg)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "context: message".
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }
  std::string ToString() const;

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// The process exit code kpilot's CLI uses for an error of this kind (see README: exit codes).
int ExitCodeFor(const Status& s);

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result built from an ok Status carries no value");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kpilot

#define KPILOT_RETURN_IF_ERROR(expr) \
  do {                               \
    ::kpilot::Status _kp_s = (expr); \
    if (!_kp_s.ok()) return _kp_s;   \
  } while (0)
