/// \file
/// tawsim's simulator API: time one iteration of an IR Program on a topology and summarise it
/// as a `report::Report` (common/report/report.h defines every field).
///
/// Models (one folder each): the program executor (sim/run/executor.h: IR semantics), the
/// compute model (sim/compute/compute_model.h), the flow-level network with NCCL-style
/// collectives (sim/network/), the memory model (sim/memory/memory_model.h). Several
/// simulations may run concurrently in different threads: no global state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/ir/verify_cache.h"
#include "common/model/model.h"
#include "common/profile/profile.h"
#include "common/report/report.h"
#include "common/report/trace.h"
#include "common/topology/topology.h"
#include "sim/memory/memory_model.h"
#include "sim/network/collectives.h"
#include "sim/network/network_model.h"

namespace tawpipe::sim {

/// Knobs of one simulation.
struct SimOptions {
  /// Calibration profile overriding datasheet rates (common/profile/profile.h).
  std::optional<profile::Profile> profile;
  /// File name of `profile`, for the report's "profile" field.
  std::string profile_name;
  /// The model the program was generated from, for model FLOPs (MFU). Without it, model_flops
  /// and MFU are reported as 0.
  std::optional<model::ModelConfig> model;
  /// Contention of communication kernels with compute on the same GPU (sim/run/contention.cpp):
  /// negative (default) = modelled from each NCCL operation's channels (one SM each, held while
  /// the kernel runs) and its bus traffic through HBM; 0 = off; > 0 = a flat relative slow-down
  /// of compute ops that start while a communication op of their rank is in flight (an override,
  /// e.g. from a measurement).
  double sm_contention = -1.0;
  /// GPU topologies: a rank runs one NCCL communicator's operations one at a time, in program
  /// order (NCCL's per-communicator device stream; sim/run/tables.cpp build_comm_order). False
  /// lets operations of one communicator on different IR streams overlap (what-if).
  bool comm_order = true;
  MemoryOptions memory;
  /// Keep per-op start/end records in the report (`Report::ops`).
  bool record_ops = false;
  /// With record_ops: only these ranks (empty = all ranks).
  std::vector<ir::Rank> record_ranks;
  /// Keep per-link usage samples for trace counter tracks (`SimOutput::link_usage`).
  bool record_link_usage = false;
  /// All-reduce algorithm, as NCCL_ALGO: automatic = NCCL's tuner (ring or tree, whichever the
  /// model predicts faster; tree only across nodes), or forced ring / tree
  /// (sim/network/collectives.h).
  AllReduceAlgo nccl_algo = AllReduceAlgo::automatic;
  /// NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS, socket transport threads/sockets
  /// (sim/network/nccl_tuning.h).
  NcclOptions nccl;
  /// Simulate identical data-parallel replicas once (sim/symmetry/symmetry.h) when the program
  /// and the network allow it; exact, so on by default (tawsim --no-symmetry turns it off).
  /// Never with record_ops or record_link_usage (they need every rank's own records).
  bool symmetry = true;
  /// CPU topologies whose profile has a noise trace (profile `noise`, sim/run/noise.h): replay
  /// it on the cores. The iteration is simulated `noise_replicates` times, the trace started at
  /// offsets spread evenly over its span (k / n of it for replicate k), and the replicate of
  /// median iteration time is the result (the lower median for an even count), as a measured
  /// iteration time is the median of steps that meet the machine's noise at other moments. The
  /// same offsets for every method, so that their predicted gaps compare like with like. Ranks
  /// on different cores meet different noise: replica symmetry is off while it replays.
  bool noise = true;
  int noise_replicates = 21;
  /// `Report::producer`; empty = "tawsim <version>".
  std::string producer;
  /// Verify the program (common/ir/verifier.h) before simulating it: design.md section 4, "the
  /// verifier proves a program well-formed before anything runs it". A program that fails is
  /// never simulated: run_simulation returns an error for which is_invalid_program() holds. A
  /// replica-compact program is verified in its compact form (ir::verify), in its whole form
  /// (FullProgram) only where the compact form cannot be. Every tawsim command
  /// that simulates sets it (sim/cli/run.h default_sim_options, sim/collectives_table.cpp); off
  /// by default for library users: tests that simulate deliberately incomplete hand-made
  /// programs, and the simulate-only benchmarks (tests/bench/bench_simulator.cpp).
  bool verify = false;
  /// Programs that passed verification (common/ir/verify_cache.h): a shared program object in
  /// the set (run_simulation's shared_ptr overload) is not verified again, one that passes is
  /// added. Sweeps share one set over their points. Null: every program is verified.
  std::shared_ptr<ir::VerifiedPrograms> verified;
  /// With `verify`: check the symbolic dataflow too (ir::VerifyOptions::skip_dataflow off).
  /// Only programs without training tensors turn it off: the collective benchmarks of
  /// `tawsim collectives` (sim/collectives_table.h) move untyped buffers, which the content rules
  /// of training programs do not describe; structure, matching and deadlock freedom are checked.
  bool verify_dataflow = true;
  /// Threads of the verifier (ir::VerifyOptions::threads; 0: the machine's hardware threads).
  int verify_threads = 0;
  /// Test hook (tests/unit/cli): "sample" shifts the sample of rank 0's first forward op before
  /// the program is verified and simulated, a dataflow fault the simulator itself would not
  /// notice; tawsim sets it from the environment variable TAWSIM_TEST_FAULT. Empty: none.
  std::string test_fault;
};

/// Whether `e` is run_simulation's error for a program that failed verification (its message
/// starts with "program fails verification (STAGE): ", then the verifier's one-line message).
bool is_invalid_program(const Error& e);

/// A report plus what only traces need.
struct SimOutput {
  report::Report report;
  std::vector<LinkUsageSample> link_usage;  ///< with record_link_usage, in time order
  /// With record_link_usage: per rank, memory in use (allocated + reserve + NCCL) over time.
  std::vector<std::vector<MemorySample>> memory_samples;
  std::uint64_t events = 0;                         ///< engine events handled
  std::uint64_t tree_all_reduces = 0;               ///< all-reduce instances run as trees
  nccl::Proto last_protocol = nccl::Proto::simple;  ///< of the last collective or P2P transfer
  int last_channels = 0;                            ///< of the last collective or P2P transfer
  /// Replica symmetry: replicas simulated as one (1: every rank simulated), and why not when
  /// SimOptions::symmetry was on but the program or the network was not symmetric.
  std::int32_t replicas_collapsed = 1;
  std::int32_t replica_ranks = 0;
  std::string symmetry_note;
  /// Replica symmetry held although a cross-replica collective loaded this many links unevenly
  /// (ExecutionResult::uneven_links).
  std::int32_t uneven_links = 0;
  /// With a replayed noise trace (SimOptions::noise): every replicate's iteration time, in
  /// offset order, and which one is the result. Empty: no noise replayed.
  std::vector<SimTime> noise_iterations;
  std::int32_t noise_replicate = 0;
};

/// The whole program, on demand: what a replica-compact program (ir::Program::stored_ranks)
/// falls back to when replica symmetry does not hold.
using FullProgram = std::function<Expected<std::shared_ptr<const ir::Program>>()>;

/// Runs `program` on `topology`. Errors: the program does not fit the topology (placement,
/// dtype), unmatched transfers, or a stall; never crashes on a verified program.
/// A replica-compact `program` runs under replica symmetry (sim/symmetry/symmetry.h) when
/// SimOptions allow it and its replicas turn out symmetric; otherwise `full()` is simulated
/// instead (an error when `full` is empty). The output is the same either way.
Expected<SimOutput> run_simulation(const ir::Program& program, const topo::Topology& topology,
                                   const SimOptions& options, const FullProgram& full = {});

/// As above, for a program shared through schedules::ProgramCache: with SimOptions::verified,
/// a program object that passed verification before is not verified again.
Expected<SimOutput> run_simulation(const std::shared_ptr<const ir::Program>& program,
                                   const topo::Topology& topology, const SimOptions& options,
                                   const FullProgram& full = {});

/// Convenience: `run_simulation(...).report`.
Expected<report::Report> simulate(const ir::Program& program, const topo::Topology& topology,
                                  const SimOptions& options);

/// Per-link counter tracks (GB/s in use over time) for `report::write_chrome_trace`, from
/// `SimOutput::link_usage`; one track per link that carried traffic, in link id order.
std::vector<report::CounterTrack> link_counter_tracks(const topo::Topology& topology,
                                                      const std::vector<LinkUsageSample>& usage);

/// One "memory" counter track per rank (GiB in use over time, shown inside the rank's process),
/// from `SimOutput::memory_samples`.
std::vector<report::CounterTrack> memory_counter_tracks(
    const std::vector<std::vector<MemorySample>>& samples);

}  // namespace tawpipe::sim
