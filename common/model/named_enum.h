/// \file
/// Internal to common/model: text <-> enum tables with "did you mean" parsing. Not part of the
/// public API.
#pragma once

#include <array>
#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/strings.h"

namespace tawpipe::model::detail {

template <class Enum, std::size_t N>
using NameTable = std::array<std::pair<std::string_view, Enum>, N>;

/// The value named `text` in `table`, or "unknown <what> 'text' (did you mean ...); known: ...".
template <class Enum, std::size_t N>
Expected<Enum> parse_named(std::string_view text, std::string_view what,
                           const NameTable<Enum, N>& table) {
  std::vector<std::string> names;
  for (const auto& [name, value] : table) {
    if (name == text) return value;
    names.emplace_back(name);
  }
  return make_error("unknown " + std::string(what) + " '" + std::string(text) + "'" +
                    did_you_mean(text, names) + "; known: " + join(names, ", "));
}

/// The name of `value` in `table`. Precondition: the table covers every enumerator.
template <class Enum, std::size_t N>
std::string_view name_of(Enum value, const NameTable<Enum, N>& table) {
  for (const auto& [name, v] : table) {
    if (v == value) return name;
  }
  assert(false && "enumerator missing from its name table");
  return "?";
}

}  // namespace tawpipe::model::detail
