/// \file
/// Steady-state folding: time a training iteration of many micro-batches without generating or
/// simulating all of them.
///
/// Every method's iteration is a warm-up, a run of identical rounds (one more micro-batch per
/// worker adds the same ops, the same durations and the same network state) and a cool-down.
/// When the rounds repeat exactly, every additive figure of the report is an affine function of
/// the micro-batch count m for m past the warm-up:  X(m) = X(m0) + (m - m0) * dX.  Folding runs
/// the same method on the same cluster with three probe counts m0 < m0 + 1 < m0 + 2 (all far below
/// m), checks that the state repeats -- every additive figure moves by the SAME increment from
/// probe 1 to 2 as from probe 2 to 3 (iteration time; per rank: compute, exposed communication,
/// intra- and inter-node bytes; per link: bytes and busy time; per op class: count, bytes, FLOPs,
/// and the time of compute and copy classes) and every rank's peak memory is unchanged -- and
/// then extrapolates the remaining m - m0 - 2 rounds exactly along that increment. A validation
/// probe v well past them must agree; when the first probe is still in the warm-up (the set
/// misses), the set m0 + 1, m0 + 2, v is checked the same way (the figures must move (v - m0 -
/// 2) times as far from m0 + 2 to v as from m0 + 1 to m0 + 2) whenever v has run anyway: one
/// probe set fewer for WeiPipe on 3x8-a100, whose first round differs.
/// Not part of the check: the time communication ops spend from posting to completion
/// (`RankStats::comm_sum` and the `total` of send/recv/collective op classes). It includes
/// waiting for the peer, which is not periodic when a schedule posts receives rounds ahead
/// (WeiPipe's ring), so a folded report carries its linear extrapolation, an approximation; the
/// tables, CSV and JSON of tawsim and tawsim plan do not show it, and `--report` (which writes
/// it) never folds. The cool-down is
/// simulated (it is part of every probe). When the probes do not repeat (warm-up longer than the
/// probes, a schedule whose rounds span several micro-batches), a second set of larger probes is
/// tried; failing that, when the probes would not be much cheaper than the whole iteration, or
/// when the iteration time itself missed at two sets of 16 or more in a row (rounds that drift,
/// fold.cpp), the whole iteration is simulated (`FoldInfo::folded` false, with the reason: the kind
/// of figure that did not repeat, which tawsim's fold note prints).
///
/// Where the state does not repeat although the schedule does: WeiPipe on 3x8-a100 with
/// llama-h4096-l48 under the communication-compute contention model (sim/run/contention.cpp),
/// measured on main b004928, before one NCCL group's operations to a peer shared its channels
/// (b8e91d8; since then this configuration is NIC-bound and folds exactly, 10 of 64 rounds).
/// From 4 micro-batches on, the iteration time grows by exactly the same step per round (8.6258 s,
/// to the picosecond) and bytes and memory repeat, but WeiPipe posts its ring receives rounds
/// ahead, and ranks with slack (5-8, 16, 17) run ahead of the ring: rank 6 does a round's 51
/// compute ops every 8.5897 s, 36 ms faster than the period, so its lead grows with the
/// micro-batch count. How much of their compute overlaps communication kernels (and is slowed)
/// in the cool-down depends on that lead, so the per-round split of these ranks into compute and
/// exposed communication varies by up to 3 % and had not settled after 30 rounds: it is not
/// periodic, and extrapolating it would not be exact. Such a method is not folded; when a probe
/// set misses only on this split at every step length, at two bases in a row, larger probe sets
/// are not tried (they would cost more than they could save).
///
/// The mechanism is generic: it looks only at reports, never at one model's internals, so the
/// compute, network (protocols, SM contention) and host (processor sharing) models may change
/// underneath it. A model whose effect is not periodic in rounds simply makes the check fail.
///
/// A base whose probes all lie in the pipeline fill is not run: when some rank holds every
/// micro-batch of the base's last probe at once (from its first compute op to its last, in
/// program order), that rank's peak memory still grows with each micro-batch, so the set cannot
/// repeat (1F1B on 3x8-a100, 24 stages: the bases 4 and 16 are skipped after the base 2 missed).
/// Only the last probe's program is generated to see it; the bases that run decide as before.
///
/// With threads to spare the probes of a set run side by side, largest first, with a likely next
/// probe on an otherwise idle thread, each verified on its own thread; the result does not depend
/// on it.
///
/// Symmetry (issue 15 item 2) works underneath, in every probe: identical data-parallel replicas
/// are simulated once where the program and the network state allow it (sim/symmetry/symmetry.h
/// says where that holds and where it does not).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "schedules/workload.h"
#include "sim/simulator.h"

namespace tawpipe::sim {

/// How the iteration was timed.
struct FoldInfo {
  bool folded = false;
  std::int64_t rounds = 0;            ///< micro-batches per worker of the workload
  std::int64_t rounds_simulated = 0;  ///< micro-batches per worker actually simulated (largest
                                      ///< probe when folded, else `rounds`)
  std::int64_t rounds_folded = 0;     ///< rounds - rounds_simulated when folded, else 0
  std::string reason;                 ///< why the iteration was not folded (empty when folded)
  /// Replica symmetry (sim/symmetry/symmetry.h) of the simulated program(s): replicas simulated
  /// as one (1: none collapsed), ranks per replica, and why not (SimOutput's fields).
  std::int32_t replicas_collapsed = 1;
  std::int32_t replica_ranks = 0;
  std::string symmetry_note;
  /// A replayed noise trace (SimOptions::noise): each replicate's iteration time and the one
  /// reported (SimOutput's fields); empty without one.
  std::vector<SimTime> noise_iterations;
  std::int32_t noise_replicate = 0;
};

/// One method's simulation, folded when possible.
struct FoldedOutput {
  SimOutput output;
  FoldInfo fold;
};

/// Generates and simulates `variant` on `workload`. With `fold` (the default of tawsim; off with
/// --no-fold) and no per-op records or link usage requested, the iteration is folded as the file
/// comment says; otherwise the whole program is generated and simulated. Errors: the generator's
/// or the simulator's.
Expected<FoldedOutput> simulate_workload(const schedules::Workload& workload,
                                         const schedules::ScheduleVariant& variant,
                                         const SimOptions& options, bool fold);

}  // namespace tawpipe::sim
