/// \file
/// Strong unit types used everywhere in tawpipe: Bytes, Bandwidth, SimTime and FlopRate.
///
/// Values are parsed from text with a unit once, at the boundary (YAML loader, CLI), and carried
/// as typed values afterwards, so no function ever receives a bare `double bw`.
///
/// Unit conventions (as in NCCL, nccl-tests and vendor datasheets):
///  - decimal prefixes are powers of 1000 (`GB` = 1e9 bytes), binary ones powers of 1024 (`GiB`);
///  - a lower-case `b` means bits: `200Gb/s` = 25e9 bytes/s;
///  - bandwidth is per direction;
///  - simulated time is an integer count of picoseconds, so event ordering is exact.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace tawpipe {

/// A byte count. Non-negative by construction.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(std::uint64_t count) : count_(count) {}
  static constexpr Bytes kib(std::uint64_t n) { return Bytes(n << 10); }
  static constexpr Bytes mib(std::uint64_t n) { return Bytes(n << 20); }
  static constexpr Bytes gib(std::uint64_t n) { return Bytes(n << 30); }

  constexpr std::uint64_t count() const { return count_; }
  constexpr double as_double() const { return static_cast<double>(count_); }

  constexpr Bytes& operator+=(Bytes o) {
    count_ += o.count_;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    count_ -= o.count_;
    return *this;
  }
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes(a.count_ + b.count_); }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes(a.count_ - b.count_); }
  friend constexpr Bytes operator*(Bytes a, std::uint64_t k) { return Bytes(a.count_ * k); }
  friend constexpr Bytes operator*(std::uint64_t k, Bytes a) { return Bytes(a.count_ * k); }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;

 private:
  std::uint64_t count_ = 0;
};

/// A data rate in bytes per second (per direction for links).
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_second(double v) { return Bandwidth(v); }
  static constexpr Bandwidth gigabytes_per_second(double v) { return Bandwidth(v * 1e9); }
  static constexpr Bandwidth gigabits_per_second(double v) { return Bandwidth(v * 1e9 / 8.0); }

  constexpr double bytes_per_second() const { return bytes_per_s_; }
  constexpr double gigabytes_per_second() const { return bytes_per_s_ / 1e9; }

  friend constexpr Bandwidth operator*(Bandwidth a, double k) {
    return Bandwidth(a.bytes_per_s_ * k);
  }
  friend constexpr Bandwidth operator*(double k, Bandwidth a) {
    return Bandwidth(a.bytes_per_s_ * k);
  }
  friend constexpr auto operator<=>(Bandwidth, Bandwidth) = default;

 private:
  constexpr explicit Bandwidth(double v) : bytes_per_s_(v) {}
  double bytes_per_s_ = 0.0;
};

/// A compute rate in floating-point operations per second.
class FlopRate {
 public:
  constexpr FlopRate() = default;
  static constexpr FlopRate flops_per_second(double v) { return FlopRate(v); }
  static constexpr FlopRate teraflops(double v) { return FlopRate(v * 1e12); }

  constexpr double flops_per_second() const { return flops_per_s_; }
  constexpr double teraflops() const { return flops_per_s_ / 1e12; }

  friend constexpr FlopRate operator*(FlopRate a, double k) { return FlopRate(a.flops_per_s_ * k); }
  friend constexpr auto operator<=>(FlopRate, FlopRate) = default;

 private:
  constexpr explicit FlopRate(double v) : flops_per_s_(v) {}
  double flops_per_s_ = 0.0;
};

/// Simulated or measured time as an integer number of picoseconds (range about +-106 days).
class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime ps(std::int64_t v) { return SimTime(v); }
  static constexpr SimTime ns(std::int64_t v) { return SimTime(v * 1000); }
  static constexpr SimTime us(std::int64_t v) { return SimTime(v * 1000'000); }
  static constexpr SimTime ms(std::int64_t v) { return SimTime(v * 1000'000'000); }
  /// Rounds to the nearest picosecond. Precondition: the value fits in int64 picoseconds.
  static SimTime from_seconds(double seconds);
  static constexpr SimTime max() { return SimTime(INT64_MAX); }

  constexpr std::int64_t picoseconds() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr SimTime& operator+=(SimTime o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr SimTime& operator-=(SimTime o) {
    ps_ -= o.ps_;
    return *this;
  }
  friend constexpr SimTime operator+(SimTime a, SimTime b) { return SimTime(a.ps_ + b.ps_); }
  friend constexpr SimTime operator-(SimTime a, SimTime b) { return SimTime(a.ps_ - b.ps_); }
  friend constexpr SimTime operator*(SimTime a, std::int64_t k) { return SimTime(a.ps_ * k); }
  friend constexpr auto operator<=>(SimTime, SimTime) = default;

 private:
  constexpr explicit SimTime(std::int64_t v) : ps_(v) {}
  std::int64_t ps_ = 0;
};

/// Time to move `bytes` at `rate` (no latency), rounded up to a whole picosecond.
/// Precondition: rate > 0.
SimTime transfer_time(Bytes bytes, Bandwidth rate);

// Parsing. Every parser requires a unit; a bare number is an error ("missing unit"). Whitespace
// between number and unit is allowed ("12.5 GB/s"). Errors carry only a message: the caller
// (YAML loader, CLI) adds file, line, column and key path.

/// `80GiB`, `1.5GB`, `4096B`, `512KiB`, `1e9B`. Must be a whole, non-negative number of bytes.
Expected<Bytes> parse_bytes(std::string_view text);
/// `300GB/s`, `200Gb/s`, `12.5 GB/s`, `1.5e9B/s`, `100Mb/s`, `25GiB/s`. Must be finite, >= 0.
Expected<Bandwidth> parse_bandwidth(std::string_view text);
/// `2us`, `800ns`, `1.5ms`, `3s`, `10ps`. Must be finite, >= 0, and a whole number of picoseconds
/// after conversion (fractions of a picosecond are rejected, not rounded).
Expected<SimTime> parse_time(std::string_view text);
/// `312TFLOP/s`, `19.5 TFLOPS`, `1e12FLOP/s`, `989.4TFLOP/s`. Must be finite, >= 0.
Expected<FlopRate> parse_flop_rate(std::string_view text);

// Formatting. Each result parses back to exactly the same value (tested as a round trip).
std::string to_string(Bytes v);
std::string to_string(Bandwidth v);
std::string to_string(SimTime v);
std::string to_string(FlopRate v);

/// Human-oriented formatting with a fixed number of significant digits (tables, summaries):
/// `806.4 MB`, `24.0 GB/s`, `1.25 ms`. Not meant to round-trip.
std::string pretty(Bytes v);
std::string pretty(Bandwidth v);
std::string pretty(SimTime v);

}  // namespace tawpipe
