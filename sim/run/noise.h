/// \file
/// Replays a calibrated fixed-work-quantum noise trace (profile `noise`, common/profile/profile.h)
/// on the cores of a CPU topology, as LogGOPSim replays FWQ traces (Hoefler, Schneider and
/// Lumsdaine, "Characterizing the influence of system noise on large-scale applications by
/// simulation", SC10).
///
/// Why: the calibrated rates are medians, so a simulated core runs every op at the same speed,
/// and identical ranks stay in lock-step. A real core loses time to interrupts, other threads
/// and the hypervisor, and its speed drifts; every core loses it at other moments. A method that
/// synchronises all ranks often (FSDP: a collective per layer) waits at each sync for the rank
/// that lost most since the last one, while a pipeline's slack absorbs part of it.
///
/// Model: unit u's trace is the fixed quanta its core ran back to back during calibration,
/// quantum j taking s_j x q (q the median quantum of all units). Replayed, core u delivers one
/// quantum of work q in s_j x q of wall time during quantum j: its availability is 1 / s_j. The
/// trace starts at simulated time -offset and repeats; every unit is replayed with the same
/// offset, so what slowed every core at once in calibration slows them at once in the replay.
/// A job that needs `work` of a whole core, starting at t, takes the wall time in which the
/// core's availability from t integrates to `work` (elapsed()).
///
/// Approximation: the stretch is decided when a job starts, from the core's availability from
/// then on, as if the job had the core to itself; a job that shares its core (core_sharing.h)
/// runs longer than its work, and the trace's quanta it really overlaps are later ones. Quanta
/// last ~1 ms and the noise's slow phases last longer, so the difference is small.
#pragma once

#include <vector>

#include "common/error.h"
#include "common/profile/profile.h"
#include "common/units.h"

namespace tawpipe::sim {

class NoiseReplay {
 public:
  /// Checks that `trace` has at least `units` units; uses the first `units`.
  static Expected<NoiseReplay> make(const profile::NoiseTrace& trace, int units, SimTime offset);

  /// Wall time that `work` of a whole core takes on unit `unit` from time `at` (>= work when the
  /// core is slower than the reference, < work when faster).
  SimTime elapsed(int unit, SimTime at, SimTime work) const;

  /// The span of the shortest unit's trace: replicate offsets are spread over it.
  static SimTime span(const profile::NoiseTrace& trace);

 private:
  struct Unit {
    std::vector<double> end;      ///< wall time (ps) at the end of quantum j, from the trace start
    std::vector<double> stretch;  ///< s_j
    double total = 0.0;           ///< end.back(): one period of the trace
  };
  /// Work (ps of a whole core) the unit delivers from the trace start to trace time tau (within
  /// one period).
  double work_until(const Unit& u, double tau) const;
  /// Trace time (within one period, or at its end) at which the delivered work reaches w
  /// (0 <= w <= one period's work).
  double time_of_work(const Unit& u, double w) const;

  double quantum_ps_ = 0.0;
  double offset_ps_ = 0.0;
  std::vector<Unit> units_;
};

}  // namespace tawpipe::sim
