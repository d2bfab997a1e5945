/// \file
/// Checked readers for yaml-cpp nodes, shared by the YAML loaders of common/ (topology files,
/// calibration profiles). Each reader validates the node's type, unit, range and (for mappings)
/// its keys, and on failure throws `ReadError` carrying an Error located at file:line:column
/// with the key path. The exception never leaves a loader: each loader catches it at its entry
/// point and returns the Error as a value, which keeps the schema code linear and readable.
/// Private to common/ (yaml-cpp is a private dependency of tawpipe_common).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/units.h"

namespace tawpipe::yaml {

/// Sane upper bounds of the readers (larger values are rejected as absurd).
inline constexpr int kMaxListItems = 65536;
inline constexpr double kMaxBandwidthBytesPerSecond = 1e14;               // 100 TB/s
inline constexpr double kMaxFlopsPerSecond = 1e18;                        // 1 EFLOP/s per device
inline constexpr std::int64_t kMaxLatencyPs = 1'000'000'000'000;          // 1 s
inline constexpr std::uint64_t kMaxMemoryBytes = std::uint64_t{1} << 46;  // 64 TiB

/// Internal control flow of a loader (caught at its entry point).
struct ReadError {
  Error error;
};

/// A YAML node with its key path and the nearest known location.
struct Ctx {
  YAML::Node node;
  std::string path;
  int line = 1;
  int column = 1;
  const std::string* file = nullptr;
};

/// Root context for a parsed document.
Ctx root_ctx(const YAML::Node& node, const std::string& file);

/// Throws ReadError at `c`.
[[noreturn]] void fail(const Ctx& c, const std::string& message);

/// A validated mapping: every key is a plain scalar, no key repeats, every key is in
/// `allowed` (else "unknown key 'x' (did you mean 'y'?)").
class MapReader {
 public:
  MapReader(const Ctx& c, std::vector<std::string> allowed, std::string_view what);
  bool has(std::string_view key) const;
  /// Required key; error "missing required key 'k'" at the mapping.
  Ctx at(std::string_view key) const;
  std::optional<Ctx> opt(std::string_view key) const;
  const Ctx& self() const { return self_; }
  /// Keys in document order.
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  Ctx self_;
  std::vector<std::string> keys_;
  std::vector<Ctx> values_;
};

/// Children of a sequence (at most kMaxListItems), each with path `parent[i]`.
std::vector<Ctx> seq_items(const Ctx& c, std::string_view what);
/// The same with another bound, for the few lists that are long by nature (a noise trace's
/// quanta).
std::vector<Ctx> seq_items(const Ctx& c, std::string_view what, std::size_t max_items);

/// Keys (identifier-checked) and values of a mapping used as a dictionary of named entries
/// (device_kinds, node_templates, links); duplicate names are errors.
std::vector<std::pair<std::string, Ctx>> dict_items(const Ctx& c, std::string_view what);

/// A non-empty single-line scalar string.
std::string read_string(const Ctx& c, std::string_view what);
/// An identifier: 1-64 chars of [A-Za-z0-9_.-], starting with a letter or digit.
std::string read_id(const Ctx& c, std::string_view what);
/// An integer in [lo, hi].
int read_int(const Ctx& c, int lo, int hi, std::string_view what);
/// A finite number in (lo, hi] (lo exclusive) or [lo, hi] when `lo_inclusive`.
double read_number(const Ctx& c, double lo, double hi, bool lo_inclusive, std::string_view what);
/// Efficiency in (0, 1].
double read_efficiency(const Ctx& c);
/// A bandwidth with unit, > 0 and <= 100 TB/s.
Bandwidth read_bandwidth(const Ctx& c);
/// A time with unit, in [0, 1 s].
SimTime read_time(const Ctx& c);
/// A byte count with unit, > 0 and <= 64 TiB.
Bytes read_bytes(const Ctx& c);
/// A FLOP rate with unit, > 0 and <= 1 EFLOP/s.
FlopRate read_flop_rate(const Ctx& c);

}  // namespace tawpipe::yaml
