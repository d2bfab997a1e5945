/// \file
/// The noise trace of `tawexec calibrate --backend host` (profile::NoiseTrace, issue 13): a
/// fixed-work-quantum benchmark (FWQ, Sottile & Minnich, "Analysis of microbenchmarks for
/// performance tuning of clusters", Cluster 2004), run on every core at once and replayed by the
/// simulator onto each core's timeline as LogGOPSim replays noise (Hoefler et al., SC10).
///
/// Every measuring rank (the first rank of each core) runs the same quantum (a fixed number of
/// single-threaded OpenBLAS sgemm calls at one of the block's shapes, about 1 ms) back to back
/// for the same wall span, all cores starting at one CLOCK_MONOTONIC instant, and records each
/// quantum's duration. All cores at once, because the two kinds of noise act differently on a
/// run: what slows every core at once (the hypervisor stealing the VM, memory bandwidth shared by
/// the cores) delays all ranks alike and must stay common to them in the replay, while what
/// slows one core alone (an interrupt, another thread, one vCPU running slower) is what
/// desynchronises the ranks, which lock-step schedules such as FSDP pay for at every layer.
/// Measured one core after the other, the two could not be told apart.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/profile/profile.h"

namespace tawpipe::exec::host {

/// The profile's noise trace from the measured quanta: `seconds[u]` holds unit u's quantum
/// durations (seconds, in the order they ran), units in unit order (host: core order). The
/// reference `quantum` is the median over all units' quanta (the mean of the two middle ones
/// for an even count), rounded to the nanosecond (the clock's resolution); each stretch is its
/// duration / quantum rounded to 4 decimals (at least 0.0001), so that the YAML stays compact
/// and reads back unchanged. Errors: no units, a unit without quanta, a duration that is not a
/// finite number > 0.
Expected<profile::NoiseTrace> noise_trace(const std::vector<std::vector<double>>& seconds,
                                          std::string work);

/// One quantum: `repeats` calls of C[m x n] = A[m x k] B[k x n] (row-major sgemm, hot operands).
struct FwqWork {
  std::size_t m = 0, n = 0, k = 0;
};

/// Runs the FWQ (collective over MPI_COMM_WORLD): rank 0 picks the repeat count that makes a
/// quantum about 1 ms; the ranks with `measures` set run quanta from one common start for
/// `seconds` of wall time, the others sleep through the span, then wait without spinning.
/// Returns rank 0's trace, one unit per measuring rank in world-rank order (rank r's unit is
/// core r / ranks_per_core when the first rank of every core measures); nullopt on the other
/// ranks. Rank 0 must measure. Errors: MPI's, noise_trace's.
Expected<std::optional<profile::NoiseTrace>> measure_noise(const FwqWork& work, double seconds,
                                                           bool measures);

}  // namespace tawpipe::exec::host
