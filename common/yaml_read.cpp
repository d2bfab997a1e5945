#include "common/yaml_read.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/strings.h"

namespace tawpipe::yaml {

namespace {

// A child context: the child's own mark when yaml-cpp knows it, else the parent's.
Ctx child_ctx(const Ctx& parent, const YAML::Node& node, std::string path) {
  Ctx c{node, std::move(path), parent.line, parent.column, parent.file};
  const YAML::Mark m = node.Mark();
  if (m.line >= 0 && m.column >= 0) {
    c.line = m.line + 1;
    c.column = m.column + 1;
  }
  return c;
}

std::string join_path(const std::string& parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return parent + "." + std::string(key);
}

std::string type_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a scalar '" + n.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Undefined:
      return "nothing";
  }
  return "?";
}

// The scalar text of `c`, or an error naming what was expected.
const std::string& scalar(const Ctx& c, std::string_view what) {
  if (!c.node.IsScalar()) {
    fail(c, "expected " + std::string(what) + ", got " + type_name(c.node));
  }
  return c.node.Scalar();
}

// Turns a units.h parse error into a located one.
template <class T>
T unwrap(const Ctx& c, Expected<T> v) {
  if (!v.ok()) fail(c, v.error().message);
  return std::move(v).value();
}

}  // namespace

Ctx root_ctx(const YAML::Node& node, const std::string& file) {
  Ctx base{node, "", 1, 1, &file};
  return child_ctx(base, node, "");
}

void fail(const Ctx& c, const std::string& message) {
  throw ReadError{Error{message, c.file != nullptr ? *c.file : std::string(), std::max(c.line, 1),
                        std::max(c.column, 1), c.path}};
}

MapReader::MapReader(const Ctx& c, std::vector<std::string> allowed, std::string_view what)
    : self_(c) {
  if (!c.node.IsMap()) {
    fail(c, "expected a mapping (" + std::string(what) + "), got " + type_name(c.node));
  }
  for (auto it = c.node.begin(); it != c.node.end(); ++it) {
    const YAML::Node key = it->first;
    Ctx key_ctx = child_ctx(c, key, c.path);
    if (!key.IsScalar()) fail(key_ctx, "mapping keys must be plain words, got " + type_name(key));
    const std::string& k = key.Scalar();
    key_ctx.path = join_path(c.path, k);
    bool known = false;
    for (const auto& a : allowed)
      known = known || a == k;
    if (!known) {
      fail(key_ctx, "unknown key '" + k + "' in " + std::string(what) + did_you_mean(k, allowed) +
                        "; allowed: " + join(allowed, ", "));
    }
    for (const auto& seen : keys_) {
      if (seen == k) fail(key_ctx, "duplicate key '" + k + "'");
    }
    keys_.push_back(k);
    Ctx value = child_ctx(key_ctx, it->second, key_ctx.path);
    // Point errors about a missing value at its key.
    if (!it->second.IsDefined() || it->second.IsNull()) {
      value.line = key_ctx.line;
      value.column = key_ctx.column;
    }
    values_.push_back(std::move(value));
  }
}

bool MapReader::has(std::string_view key) const {
  for (const auto& k : keys_) {
    if (k == key) return true;
  }
  return false;
}

Ctx MapReader::at(std::string_view key) const {
  if (auto c = opt(key)) return *c;
  fail(self_, "missing required key '" + std::string(key) + "'");
}

std::optional<Ctx> MapReader::opt(std::string_view key) const {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return values_[i];
  }
  return std::nullopt;
}

std::vector<Ctx> seq_items(const Ctx& c, std::string_view what) {
  return seq_items(c, what, static_cast<std::size_t>(kMaxListItems));
}

std::vector<Ctx> seq_items(const Ctx& c, std::string_view what, std::size_t max_items) {
  if (!c.node.IsSequence()) {
    fail(c, "expected a sequence (" + std::string(what) + "), got " + type_name(c.node));
  }
  if (c.node.size() > max_items) {
    fail(c,
         "too many items in " + std::string(what) + " (at most " + std::to_string(max_items) + ")");
  }
  std::vector<Ctx> out;
  std::size_t i = 0;
  for (auto it = c.node.begin(); it != c.node.end(); ++it, ++i) {
    out.push_back(child_ctx(c, *it, c.path + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<std::pair<std::string, Ctx>> dict_items(const Ctx& c, std::string_view what) {
  if (!c.node.IsMap()) {
    fail(c, "expected a mapping of named " + std::string(what) + ", got " + type_name(c.node));
  }
  if (c.node.size() > static_cast<std::size_t>(kMaxListItems)) {
    fail(c, "too many " + std::string(what));
  }
  std::vector<std::pair<std::string, Ctx>> out;
  for (auto it = c.node.begin(); it != c.node.end(); ++it) {
    Ctx key_ctx = child_ctx(c, it->first, c.path);
    const std::string id = read_id(key_ctx, std::string(what) + " name");
    key_ctx.path = join_path(c.path, id);
    for (const auto& [seen, unused] : out) {
      if (seen == id) fail(key_ctx, "duplicate id '" + id + "' in " + std::string(what));
    }
    Ctx value = child_ctx(key_ctx, it->second, key_ctx.path);
    if (it->second.IsNull()) {
      value.line = key_ctx.line;
      value.column = key_ctx.column;
    }
    out.emplace_back(id, std::move(value));
  }
  return out;
}

std::string read_string(const Ctx& c, std::string_view what) {
  const std::string& s = scalar(c, what);
  if (s.empty()) fail(c, std::string(what) + " must not be empty");
  if (s.size() > 1000) fail(c, std::string(what) + " is too long (more than 1000 characters)");
  for (const char ch : s) {
    if (ch == '\n' || ch == '\r' || ch == '\0') fail(c, std::string(what) + " must be one line");
  }
  return s;
}

std::string read_id(const Ctx& c, std::string_view what) {
  const std::string& s = scalar(c, what);
  const auto ok_char = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-' || ch == '.';
  };
  bool ok =
      !s.empty() && s.size() <= 64 && ok_char(s[0]) && s[0] != '_' && s[0] != '-' && s[0] != '.';
  for (const char ch : s)
    ok = ok && ok_char(ch);
  if (!ok) {
    fail(c, "invalid " + std::string(what) + " '" + s +
                "' (use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit)");
  }
  return s;
}

int read_int(const Ctx& c, int lo, int hi, std::string_view what) {
  const std::string& s = scalar(c, what);
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    fail(c,
         std::string(what) + " '" + s + "' is absurdly large (at most " + std::to_string(hi) + ")");
  }
  if (ec != std::errc() || end != s.data() + s.size()) {
    fail(c, "expected an integer " + std::string(what) + ", got '" + s + "'");
  }
  if (v < lo || v > hi) {
    fail(c, std::string(what) + " " + s + " is out of range [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  }
  return static_cast<int>(v);
}

double read_number(const Ctx& c, double lo, double hi, bool lo_inclusive, std::string_view what) {
  const std::string& s = scalar(c, what);
  double v = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    fail(c, "expected a number for " + std::string(what) + ", got '" + s + "'");
  }
  if (!std::isfinite(v)) fail(c, std::string(what) + " must be a finite number, got '" + s + "'");
  const bool low_ok = lo_inclusive ? v >= lo : v > lo;
  if (!low_ok || v > hi) {
    fail(c, std::string(what) + " " + s + " is out of range " + (lo_inclusive ? "[" : "(") +
                shortest_number(lo) + ", " + shortest_number(hi) + "]");
  }
  return v;
}

double read_efficiency(const Ctx& c) {
  return read_number(c, 0.0, 1.0, false, "efficiency");
}

Bandwidth read_bandwidth(const Ctx& c) {
  const Bandwidth v = unwrap(c, parse_bandwidth(scalar(c, "a bandwidth such as 25GB/s")));
  if (!(v.bytes_per_second() > 0.0)) fail(c, "bandwidth must be positive, got 0");
  if (v.bytes_per_second() > kMaxBandwidthBytesPerSecond) {
    fail(c, "bandwidth " + c.node.Scalar() + " is absurd (more than 100TB/s)");
  }
  return v;
}

SimTime read_time(const Ctx& c) {
  const SimTime v = unwrap(c, parse_time(scalar(c, "a time such as 2us")));
  if (v.picoseconds() > kMaxLatencyPs) {
    fail(c, "time " + c.node.Scalar() + " is absurd (more than 1s)");
  }
  return v;
}

Bytes read_bytes(const Ctx& c) {
  const Bytes v = unwrap(c, parse_bytes(scalar(c, "a size such as 80GiB")));
  if (v.count() == 0) fail(c, "size must be positive, got 0");
  if (v.count() > kMaxMemoryBytes) fail(c, "size " + c.node.Scalar() + " is absurd (> 64TiB)");
  return v;
}

FlopRate read_flop_rate(const Ctx& c) {
  const FlopRate v = unwrap(c, parse_flop_rate(scalar(c, "a FLOP rate such as 312TFLOP/s")));
  if (!(v.flops_per_second() > 0.0)) fail(c, "FLOP rate must be positive, got 0");
  if (v.flops_per_second() > kMaxFlopsPerSecond) {
    fail(c, "FLOP rate " + c.node.Scalar() + " is absurd (more than 1EFLOP/s per device)");
  }
  return v;
}

}  // namespace tawpipe::yaml
