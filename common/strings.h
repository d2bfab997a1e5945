/// \file
/// Small text helpers shared by the loaders and command lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tawpipe {

/// The shortest decimal text that reads back as exactly `v` (std::to_chars round trip).
std::string shortest_number(double v);

/// Levenshtein distance (insert, delete, substitute all cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if it is close enough to be a plausible typo (distance at most
/// max(2, |word|/3)); empty when none is. Ties go to the earliest candidate.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" when `closest_match` finds one, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// Joins with a separator: join({"a","b"}, ", ") == "a, b".
std::string join(const std::vector<std::string>& parts, std::string_view separator);

/// Splits on a single character; keeps empty fields.
std::vector<std::string> split(std::string_view text, char separator);

}  // namespace tawpipe
