/// \file
/// Turns what the interpreter measured on every rank into the simulator's report schema
/// (common/report/report.h, kind "measured"), so `tawsim compare` and the Chrome-trace writer
/// treat predicted and measured runs alike; and the order of an interleaved launch's programs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ir/program.h"
#include "common/model/model.h"
#include "common/report/report.h"
#include "exec/interpreter.h"

namespace tawpipe::exec {

/// Inputs of the measured report.
struct Measurement {
  std::vector<IterationRecord> ranks;     ///< the last measured iteration, per rank
  double mean_iteration_seconds = 0.0;    ///< over the measured iterations
  std::vector<std::uint64_t> peak_bytes;  ///< per rank: highest live buffer bytes
  std::string producer;                   ///< "tawexec 0.1.0 (host backend)"
  /// The ranks' clocks are one clock (every rank on one host, CLOCK_MONOTONIC): the report then
  /// states each rank's start offset (report::RankStats::start_offset).
  bool shared_clock = false;
};

/// The report. Op records keep each rank's times relative to its own iteration start (ranks
/// start together after a barrier, within the barrier's release skew: up to ~10 ms on an
/// oversubscribed host); with `shared_clock` each rank's start offset is in its rank_stats.
/// iteration_time is the median over measured iterations of (max over ranks of the last op's end);
/// the per-rank breakdown follows report.h's definitions on the last iteration. MFU/HFU are left 0
/// (a host has no meaningful peak FLOP/s).
report::Report measured_report(const ir::Program& program, const model::ModelConfig& model,
                               const Measurement& m);

/// The order in which an interleaved launch (`tawexec` given several programs) runs its `n`
/// programs in timed round `round` (0-based): rotated by one program every second round, and
/// every odd round the reverse of the round before it (0 1 2, 2 1 0, 1 2 0, 0 2 1, ...). So each
/// program takes every position, and over two consecutive rounds every program's mean position
/// is (n - 1) / 2: a speed change of the machine that is linear over the two rounds moves every
/// program's mean step time alike, and pairs of programs run in both orders equally often.
std::vector<std::size_t> interleave_order(std::int64_t round, std::size_t n);

}  // namespace tawpipe::exec
