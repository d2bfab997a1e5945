/// \file
/// A tiny seeded generator for the simulator's randomised tests: SplitMix64 (Steele, Lea and
/// Flood, OOPSLA 2014). Written out so that every standard library produces the same instances,
/// unlike std:: distributions, whose algorithms are implementation-defined.
#pragma once

#include <cstdint>

namespace tawpipe::sim::testing {

class TestRng {
 public:
  explicit TestRng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  /// Uniform integer in [0, n). Precondition: n > 0. (Modulo bias is irrelevant here.)
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }
  /// True with probability p.
  bool chance(double p) { return unit() < p; }

 private:
  std::uint64_t state_;
};

}  // namespace tawpipe::sim::testing
