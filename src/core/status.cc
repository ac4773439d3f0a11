#include "core/status.h"

namespace kpilot {

std::string Status::ToString() const {
  switch (code_) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidInput:
      return "invalid input: " + message_;
    case StatusCode::kNotFound:
      return "not found: " + message_;
    case StatusCode::kUnavailable:
      return "unavailable: " + message_;
    case StatusCode::kInternal:
      return "internal error: " + message_;
    case StatusCode::kTimeout:
      return "timeout: " + message_;
  }
  return message_;
}

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidInput:
    case StatusCode::kNotFound:
      return 2;
    case StatusCode::kUnavailable:
      return 3;
    case StatusCode::kInternal:
    case StatusCode::kTimeout:
      return 1;
  }
  return 1;
}

}  // namespace kpilot
