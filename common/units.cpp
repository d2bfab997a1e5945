#include "common/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/strings.h"

namespace tawpipe {
namespace {

struct UnitFactor {
  std::string_view name;
  long double factor;  // multiplies the number to get the base unit
};

// Byte units: decimal (SI) and binary (IEC) prefixes.
constexpr std::array kByteUnits = {
    UnitFactor{"B", 1.0L},
    UnitFactor{"KB", 1e3L},
    UnitFactor{"MB", 1e6L},
    UnitFactor{"GB", 1e9L},
    UnitFactor{"TB", 1e12L},
    UnitFactor{"KiB", 1024.0L},
    UnitFactor{"MiB", 1048576.0L},
    UnitFactor{"GiB", 1073741824.0L},
    UnitFactor{"TiB", 1099511627776.0L},
};

// Bandwidth units in bytes per second; lower-case b = bits.
constexpr std::array kBandwidthUnits = {
    UnitFactor{"B/s", 1.0L},         UnitFactor{"KB/s", 1e3L},
    UnitFactor{"MB/s", 1e6L},        UnitFactor{"GB/s", 1e9L},
    UnitFactor{"TB/s", 1e12L},       UnitFactor{"KiB/s", 1024.0L},
    UnitFactor{"MiB/s", 1048576.0L}, UnitFactor{"GiB/s", 1073741824.0L},
    UnitFactor{"b/s", 0.125L},       UnitFactor{"Kb/s", 125.0L},
    UnitFactor{"Mb/s", 1.25e5L},     UnitFactor{"Gb/s", 1.25e8L},
    UnitFactor{"Tb/s", 1.25e11L},    UnitFactor{"Gbps", 1.25e8L},
    UnitFactor{"Mbps", 1.25e5L},     UnitFactor{"Gbit/s", 1.25e8L},
};

// Time units in picoseconds.
constexpr std::array kTimeUnits = {
    UnitFactor{"ps", 1.0L}, UnitFactor{"ns", 1e3L}, UnitFactor{"us", 1e6L},
    UnitFactor{"ms", 1e9L}, UnitFactor{"s", 1e12L},
};

// Compute-rate units in FLOP/s.
constexpr std::array kFlopUnits = {
    UnitFactor{"FLOP/s", 1.0L},   UnitFactor{"FLOPS", 1.0L},    UnitFactor{"GFLOP/s", 1e9L},
    UnitFactor{"GFLOPS", 1e9L},   UnitFactor{"TFLOP/s", 1e12L}, UnitFactor{"TFLOPS", 1e12L},
    UnitFactor{"PFLOP/s", 1e15L}, UnitFactor{"PFLOPS", 1e15L},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

template <std::size_t N>
std::string unit_list(const std::array<UnitFactor, N>& units) {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.name;
  }
  return out;
}

// Splits "12.5 GB/s" into 12.5 * 1e9; checks sign and finiteness. `what` names the quantity.
// `exact_integers` parses the number as long double (64-bit mantissa on x86-64), so integer
// byte and picosecond counts up to 2^63 survive exactly; rates use the double parse so that the
// shortest double representation round-trips.
template <std::size_t N>
Expected<long double> parse_with_unit(std::string_view text, const std::array<UnitFactor, N>& units,
                                      std::string_view what, bool exact_integers = false) {
  const std::string_view s = trim(text);
  if (s.empty())
    return make_error("empty " + std::string(what) + " (expected e.g. a number and a unit)");
  double number = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec == std::errc::result_out_of_range) {
    return make_error("number out of range in " + std::string(what) + " '" + std::string(s) + "'");
  }
  if (ec != std::errc()) {
    return make_error("expected a " + std::string(what) +
                      " such as a number followed by a unit, got '" + std::string(s) + "'");
  }
  if (!std::isfinite(number)) {
    return make_error(std::string(what) + " must be finite, got '" + std::string(s) + "'");
  }
  const std::string_view unit = trim(s.substr(static_cast<std::size_t>(end - s.data())));
  if (unit.empty()) {
    return make_error("missing unit in " + std::string(what) + " '" + std::string(s) +
                      "' (one of: " + unit_list(units) + ")");
  }
  for (const auto& u : units) {
    if (u.name == unit) {
      if (number < 0.0 || std::signbit(number)) {
        return make_error(std::string(what) + " must not be negative, got '" + std::string(s) +
                          "'");
      }
      long double precise = number;
      if (exact_integers) {
        [[maybe_unused]] const auto r = std::from_chars(s.data(), end, precise);
        assert(r.ec == std::errc() && r.ptr == end);
      }
      return precise * u.factor;
    }
  }
  return make_error("unknown unit '" + std::string(unit) + "' in " + std::string(what) + " '" +
                    std::string(s) + "' (one of: " + unit_list(units) + ")");
}

// True when v is within rounding noise of an integer.
bool is_whole(long double v) {
  const long double r = std::round(v);
  return std::fabs(v - r) <= 1e-9L * std::fmax(1.0L, std::fabs(v));
}

// Formats `v` (in base units) as "<number><unit>" with the first unit among `preferred` whose
// text parses back to exactly `v`; falls back to the base unit.
template <class T, class Parse>
std::string format_round_trip(double base_value, std::initializer_list<UnitFactor> preferred,
                              std::string_view base_unit, const T& original, Parse parse) {
  for (const auto& u : preferred) {
    const std::string text =
        shortest_number(static_cast<double>(base_value / u.factor)) + std::string(u.name);
    auto back = parse(text);
    if (back.ok() && *back == original) return text;
  }
  return shortest_number(base_value) + std::string(base_unit);
}

std::string with_sig_digits(double v, std::string_view unit) {
  std::array<char, 64> buf{};
  const int digits = v >= 100.0 ? 1 : (v >= 10.0 ? 2 : 3);
  std::snprintf(buf.data(), buf.size(), "%.*f %.*s", digits, v, static_cast<int>(unit.size()),
                unit.data());
  return buf.data();
}

}  // namespace

SimTime SimTime::from_seconds(double seconds) {
  return SimTime(static_cast<std::int64_t>(std::llround(seconds * 1e12)));
}

SimTime transfer_time(Bytes bytes, Bandwidth rate) {
  assert(rate.bytes_per_second() > 0.0);
  const long double ps = static_cast<long double>(bytes.count()) * 1e12L /
                         static_cast<long double>(rate.bytes_per_second());
  return SimTime::ps(static_cast<std::int64_t>(std::ceil(ps - 1e-6L)));
}

Expected<Bytes> parse_bytes(std::string_view text) {
  auto v = parse_with_unit(text, kByteUnits, "size", true);
  if (!v.ok()) return std::move(v).error();
  if (*v > 9.0e18L) return make_error("size '" + std::string(trim(text)) + "' is absurdly large");
  if (!is_whole(*v)) {
    return make_error("size '" + std::string(trim(text)) + "' is not a whole number of bytes");
  }
  return Bytes(static_cast<std::uint64_t>(std::llround(*v)));
}

Expected<Bandwidth> parse_bandwidth(std::string_view text) {
  auto v = parse_with_unit(text, kBandwidthUnits, "bandwidth");
  if (!v.ok()) return std::move(v).error();
  if (*v > 1e18L)
    return make_error("bandwidth '" + std::string(trim(text)) + "' is absurdly large");
  return Bandwidth::bytes_per_second(static_cast<double>(*v));
}

Expected<SimTime> parse_time(std::string_view text) {
  auto v = parse_with_unit(text, kTimeUnits, "time", true);
  if (!v.ok()) return std::move(v).error();
  if (*v > 9.0e18L) return make_error("time '" + std::string(trim(text)) + "' is absurdly large");
  if (!is_whole(*v)) {
    return make_error("time '" + std::string(trim(text)) +
                      "' is not a whole number of picoseconds");
  }
  return SimTime::ps(std::llround(*v));
}

Expected<FlopRate> parse_flop_rate(std::string_view text) {
  auto v = parse_with_unit(text, kFlopUnits, "compute rate");
  if (!v.ok()) return std::move(v).error();
  if (*v > 1e21L)
    return make_error("compute rate '" + std::string(trim(text)) + "' is absurdly large");
  return FlopRate::flops_per_second(static_cast<double>(*v));
}

std::string to_string(Bytes v) {
  const std::uint64_t n = v.count();
  if (n == 0) return "0B";
  constexpr std::array<std::pair<std::uint64_t, std::string_view>, 8> kUnits = {{
      {1ULL << 40, "TiB"},
      {1ULL << 30, "GiB"},
      {1ULL << 20, "MiB"},
      {1ULL << 10, "KiB"},
      {1000000000000ULL, "TB"},
      {1000000000ULL, "GB"},
      {1000000ULL, "MB"},
      {1000ULL, "KB"},
  }};
  for (const auto& [factor, name] : kUnits) {
    if (n % factor == 0) return std::to_string(n / factor) + std::string(name);
  }
  return std::to_string(n) + "B";
}

std::string to_string(SimTime v) {
  const std::int64_t ps = v.picoseconds();
  if (ps == 0) return "0s";
  constexpr std::array<std::pair<std::int64_t, std::string_view>, 4> kUnits = {{
      {1000000000000LL, "s"},
      {1000000000LL, "ms"},
      {1000000LL, "us"},
      {1000LL, "ns"},
  }};
  for (const auto& [factor, name] : kUnits) {
    if (ps % factor == 0) return std::to_string(ps / factor) + std::string(name);
  }
  return std::to_string(ps) + "ps";
}

std::string to_string(Bandwidth v) {
  return format_round_trip(v.bytes_per_second(),
                           {UnitFactor{"GB/s", 1e9L}, UnitFactor{"MB/s", 1e6L}}, "B/s", v,
                           parse_bandwidth);
}

std::string to_string(FlopRate v) {
  return format_round_trip(v.flops_per_second(), {UnitFactor{"TFLOP/s", 1e12L}}, "FLOP/s", v,
                           parse_flop_rate);
}

std::string pretty(Bytes v) {
  const double b = v.as_double();
  if (b >= 1e12) return with_sig_digits(b / 1e12, "TB");
  if (b >= 1e9) return with_sig_digits(b / 1e9, "GB");
  if (b >= 1e6) return with_sig_digits(b / 1e6, "MB");
  if (b >= 1e3) return with_sig_digits(b / 1e3, "KB");
  return std::to_string(v.count()) + " B";
}

std::string pretty(Bandwidth v) {
  const double b = v.bytes_per_second();
  if (b >= 1e9) return with_sig_digits(b / 1e9, "GB/s");
  if (b >= 1e6) return with_sig_digits(b / 1e6, "MB/s");
  return with_sig_digits(b, "B/s");
}

std::string pretty(SimTime v) {
  const double s = v.seconds();
  if (s >= 1.0) return with_sig_digits(s, "s");
  if (s >= 1e-3) return with_sig_digits(s * 1e3, "ms");
  if (s >= 1e-6) return with_sig_digits(s * 1e6, "us");
  return with_sig_digits(s * 1e9, "ns");
}

}  // namespace tawpipe
