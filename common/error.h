/// \file
/// Errors as values. User errors (bad YAML, bad IR, bad command line) travel as `Error` inside
/// `Expected<T>` up to the program's main, which prints `Error::to_string()` on one line and
/// exits with status 2. Bugs in tawpipe itself are asserts, never `Error`s.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tawpipe {

/// A user-facing error: what went wrong and, when it comes from a file, where.
struct Error {
  std::string message;   ///< one line, no trailing period needed
  std::string file;      ///< source file, empty when not from a file
  int line = 0;          ///< 1-based; 0 = unknown
  int column = 0;        ///< 1-based; 0 = unknown
  std::string key_path;  ///< YAML/JSON key path such as `nodes.template.nics[2].bandwidth`

  /// `file:line:column: key.path: message`, leaving out the parts that are unknown.
  std::string to_string() const;

  /// Returns a copy with location fields filled in where this error has none yet.
  Error at(std::string file_name, int line_no, int column_no, std::string key) const;
};

/// Convenience: an `Error` with only a message.
inline Error make_error(std::string message) {
  return Error{std::move(message), {}, 0, 0, {}};
}

/// Either a value or an Error. A small stand-in for C++23 std::expected.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

/// Success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  static Status success() { return Status(); }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const {
    assert(!ok());
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

}  // namespace tawpipe

/// Propagates an error from an `Expected` or `Status` expression: `TAWPIPE_TRY(status_expr);`
#define TAWPIPE_TRY(expr)                                              \
  do {                                                                 \
    auto&& tawpipe_try_result_ = (expr);                               \
    if (!tawpipe_try_result_.ok()) return tawpipe_try_result_.error(); \
  } while (0)
