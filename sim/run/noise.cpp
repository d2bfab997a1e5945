// Replay of a fixed-work-quantum noise trace (noise.h).
#include "sim/run/noise.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tawpipe::sim {

Expected<NoiseReplay> NoiseReplay::make(const profile::NoiseTrace& trace, int units,
                                        SimTime offset) {
  if (static_cast<int>(trace.units.size()) < units)
    return make_error("the profile's noise trace has " + std::to_string(trace.units.size()) +
                      " unit(s), the topology's host has " + std::to_string(units) +
                      " cores: calibrate on the run's layout");
  if (trace.quantum <= SimTime()) return make_error("the profile's noise quantum is not > 0");
  NoiseReplay r;
  r.quantum_ps_ = static_cast<double>(trace.quantum.picoseconds());
  r.offset_ps_ = static_cast<double>(offset.picoseconds());
  for (int u = 0; u < units; ++u) {
    const std::vector<double>& s = trace.units[static_cast<std::size_t>(u)];
    if (s.empty())
      return make_error("the profile's noise trace of unit " + std::to_string(u) + " is empty");
    Unit unit;
    unit.stretch = s;
    unit.end.reserve(s.size());
    double t = 0.0;
    for (const double x : s) {
      if (!(x > 0.0)) return make_error("a noise stretch is not > 0");
      t += x * r.quantum_ps_;
      unit.end.push_back(t);
    }
    unit.total = t;
    r.units_.push_back(std::move(unit));
  }
  return r;
}

SimTime NoiseReplay::span(const profile::NoiseTrace& trace) {
  double shortest = 0.0;
  for (const std::vector<double>& s : trace.units) {
    double t = 0.0;
    for (const double x : s)
      t += x;
    shortest = shortest == 0.0 ? t : std::min(shortest, t);
  }
  return SimTime::ps(
      static_cast<std::int64_t>(shortest * static_cast<double>(trace.quantum.picoseconds())));
}

double NoiseReplay::work_until(const Unit& u, double tau) const {
  // The quantum that contains tau: the first whose end is past it.
  const auto it = std::upper_bound(u.end.begin(), u.end.end(), tau);
  if (it == u.end.end()) return quantum_ps_ * static_cast<double>(u.end.size());
  const auto j = static_cast<std::size_t>(it - u.end.begin());
  const double begin = j == 0 ? 0.0 : u.end[j - 1];
  return quantum_ps_ * static_cast<double>(j) + (tau - begin) / u.stretch[j];
}

double NoiseReplay::time_of_work(const Unit& u, double w) const {
  // Quantum j delivers work [j q, (j + 1) q).
  const double n = std::floor(w / quantum_ps_);
  if (n >= static_cast<double>(u.end.size())) return u.total;
  const auto j = static_cast<std::size_t>(n);
  const double begin = j == 0 ? 0.0 : u.end[j - 1];
  return begin + (w - n * quantum_ps_) * u.stretch[j];
}

SimTime NoiseReplay::elapsed(int unit, SimTime at, SimTime work) const {
  if (work <= SimTime()) return work;
  const Unit& u = units_[static_cast<std::size_t>(unit)];
  const double period_work = quantum_ps_ * static_cast<double>(u.end.size());
  // Trace time of `at`, folded into one period.
  const double t = static_cast<double>(at.picoseconds()) + offset_ps_;
  const double cycles = std::floor(t / u.total);
  const double tau = t - cycles * u.total;
  // Work delivered from the start of this period to tau, plus the job's work: whole periods,
  // then the rest inside the last one.
  const double target = work_until(u, tau) + static_cast<double>(work.picoseconds());
  const double whole = std::floor(target / period_work);
  const double end = whole * u.total + time_of_work(u, target - whole * period_work);
  return SimTime::ps(std::max<std::int64_t>(1, std::llround(end - tau)));
}

}  // namespace tawpipe::sim
