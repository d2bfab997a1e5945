/// \file
/// The JSON DOM walker shared by the IR reader (json_read.cpp) and the report reader
/// (common/report/report_json.cpp): parsing with located syntax errors, and typed accessors that
/// fail with the value's key path and its line:column in the source text. nlohmann keeps no
/// positions, so json_scan re-walks the text, on the error path only. Internal to common/.
///
/// Errors are thrown as ReadFailure inside a reader and turned into an `Error` value at the
/// reader's public entry point; nothing escapes the library as an exception.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/ir/json_scan.h"
#include "common/ir/program.h"

namespace tawpipe::ir::detail {

/// Thrown inside a reader only.
struct ReadFailure {
  Error error;
};

class JsonReader {
 public:
  using json = nlohmann::json;
  static constexpr std::int64_t kI32Min = std::numeric_limits<std::int32_t>::min();
  static constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();

  JsonReader(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  /// Parses the whole text. Syntax errors and number overflows fail located at their offset.
  json parse() const;

  /// Fails at the current key path.
  [[noreturn]] void fail(const std::string& message) const;

  /// RAII step of the key path: `auto s = key("ranks");`.
  class Step {
   public:
    Step(JsonReader& r, PathStep s) : r_(r) { r_.path_.push_back(std::move(s)); }
    ~Step() { r_.path_.pop_back(); }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    JsonReader& r_;
  };
  Step key(const char* k) { return Step(*this, PathStep{k, 0, false, nullptr}); }
  Step key(const std::string& k) { return Step(*this, PathStep{k, 0, false, nullptr}); }
  Step index(std::size_t i, const char* display = nullptr) {
    return Step(*this, PathStep{{}, i, true, display});
  }

  /// "an integer", "a string", ... for messages.
  static std::string type_of(const json& v);

  const json& object(const json& v);
  const json& array(const json& v);
  /// Member `k` of object `obj` (the path must point at obj). Fails when missing.
  const json& member(const json& obj, const char* k);
  /// Fails on a key of `obj` not in `keys`, with a "did you mean".
  void known_keys(const json& obj, std::initializer_list<const char*> keys);
  /// An object with exactly `keys`: no unknown key (did you mean), none missing.
  void exact_keys(const json& obj, std::initializer_list<const char*> keys);

  std::int64_t integer(const json& v, std::int64_t lo, std::int64_t hi, const char* what = "value");
  std::int32_t i32(const json& v, std::int64_t lo = kI32Min, std::int64_t hi = kI32Max,
                   const char* what = "value") {
    return static_cast<std::int32_t>(integer(v, lo, hi, what));
  }
  std::uint64_t u64(const json& v);
  double real(const json& v);
  std::string string(const json& v);
  bool boolean(const json& v);

  /// An array of ids in [lo, hi).
  std::vector<std::int32_t> id_list(const json& v, std::int64_t lo, std::int64_t hi,
                                    const char* what);

  /// The program header as the IR and the reports write it (same keys in both formats).
  Header header(const json& h);

 protected:
  std::string_view text_;
  std::string file_;
  std::vector<PathStep> path_;
};

}  // namespace tawpipe::ir::detail
