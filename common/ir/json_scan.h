/// \file
/// A small, forgiving JSON scanner used only on the error path of the JSON reader: nlohmann
/// keeps no source positions, so the reader re-walks the text to find where a value is.
/// Internal to common/ir. Never reads out of bounds, whatever the text; not recursive.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tawpipe::ir::detail {

/// One step of a key path: an object key, or an array index.
struct PathStep {
  std::string key;        ///< object key (when !is_index)
  std::size_t index = 0;  ///< array index (when is_index)
  bool is_index = false;
  const char* display = nullptr;  ///< for an index: a field name to print instead of `[i]`
};

/// `ranks[3].ops[17].kind`.
std::string path_string(const std::vector<PathStep>& path);

/// Byte offset of the value at `path`, or of the deepest enclosing value that exists.
std::size_t locate(std::string_view text, const std::vector<PathStep>& path);

/// The key path of the innermost value being parsed at byte `offset` (for syntax errors).
std::string path_at(std::string_view text, std::size_t offset);

/// 1-based line and column (in bytes) of byte `offset`.
void line_column(std::string_view text, std::size_t offset, int* line, int* column);

}  // namespace tawpipe::ir::detail
