/// \file
/// The repeat check and the extrapolation of steady-state folding (fold.h): pure functions of the
/// probes' reports, apart from the probe driver in fold.cpp that decides which probes to run.
/// Internal to sim/fold.
#pragma once

#include <cstdint>
#include <string>

#include "common/model/train_config.h"
#include "sim/simulator.h"

namespace tawpipe::sim::fold_detail {

/// Why three probes a < b < c do not repeat; `none` when b - a == c - b for every additive figure
/// (the rounds between them repeat) and the peak memory of b and c agree (the steady state holds
/// no more memory per round). Not checked: the time from posting to completion of communication
/// ops (RankStats::comm_sum, the `total` of communication op classes), which includes waiting for
/// the peer and is not periodic when a schedule posts receives rounds ahead (WeiPipe's ring: each
/// round adds a little more waiting).
enum class Miss {
  none,
  layout,     ///< different ranks, links or op classes
  iteration,  ///< the iteration time does not grow by one step per round: warm-up
  memory,     ///< peak memory still grows
  traffic,    ///< bytes, FLOPs, op counts or link busy time do not grow by one step
  split,      ///< only the per-rank split into compute and exposed communication differs
};

/// Whether the probes a < b < c repeat (Miss::none) or why not. `k` > 1: c lies k steps past b
/// (the validation probe of a base, fold.h), so the figures must move k times as much from b to
/// c as from a to b, and a's peak memory must equal b's and c's.
Miss repeats(const report::Report& a, const report::Report& b, const report::Report& c,
             std::int64_t k = 1);

/// The reason a probe set gives for not folding (FoldInfo::reason); `last_probe` is the set's
/// largest micro-batch count.
std::string miss_reason(Miss miss, std::int64_t last_probe);

/// X = X(from) + n * (X(hi) - X(lo)) for every additive figure; derived figures recomputed as
/// sim/simulator.cpp computes them; `batch` is the workload's own batch.
SimOutput extrapolate(const SimOutput& from, const SimOutput& lo, const SimOutput& hi,
                      std::int64_t n, const model::ResolvedBatch& batch);

/// The validation probe agrees with the extrapolation: iteration time, per-rank compute and
/// exposed communication, peak memory, per-link bytes.
bool agrees(const report::Report& predicted, const report::Report& actual);

}  // namespace tawpipe::sim::fold_detail
