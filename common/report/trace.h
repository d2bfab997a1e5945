/// \file
/// Chrome trace-event JSON (the format Perfetto and chrome://tracing open) for one run of a
/// Program, predicted or measured: one process per rank (named "rank R (gpu G)"), one thread per
/// stream (named after the IR stream), every op record as a complete ("X") event named by its
/// kind with its details as args (layers, micro-batch, FLOPs, bytes, peer, communicator), and
/// optional counter ("C") tracks: per-link utilisation in one extra process "links", per-rank
/// tracks (memory in use) inside the rank's process.
///
/// Timestamps are microseconds with picosecond resolution (six decimals). Output is
/// deterministic: events follow the order of `report.ops`, counters the order given.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common/ir/program.h"
#include "common/report/report.h"
#include "common/units.h"

namespace tawpipe::report {

/// One counter track: a named value over time (a step function).
struct CounterTrack {
  std::string name;                                ///< e.g. a link name
  std::string unit;                                ///< the args key, e.g. "GB/s"
  std::vector<std::pair<SimTime, double>> points;  ///< in time order
  /// The rank whose process shows the track (e.g. its memory in use), or kNone for the shared
  /// "links" process.
  ir::Rank rank = ir::kNone;
};

/// Which ranks to keep (large runs).
struct TraceOptions {
  std::vector<ir::Rank> ranks;  ///< empty = every rank present in report.ops
};

/// Writes the trace of `report.ops` (ops of `program`). Preconditions: every record names an op
/// of `program`.
void write_chrome_trace(const ir::Program& program, const Report& report,
                        const std::vector<CounterTrack>& counters, const TraceOptions& options,
                        std::ostream& out);

}  // namespace tawpipe::report
