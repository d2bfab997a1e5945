/// \file
/// The program executor: runs an IR Program on the simulated cluster with exactly the IR's
/// semantics (common/ir/program.h):
///  1. per rank and stream, ops run one at a time in program order; an op starts when the
///     previous op (or group) of its stream and all its dependencies have completed;
///  2. the ops of an NCCL group are posted together once all of them may start; the stream moves
///     on when all of them completed;
///  3. send/recv pairs match in issue (program) order per (communicator, source, destination);
///     the transfer starts when both sides are posted;
///  4. the k-th collective of every member of a communicator forms one instance; it starts when
///     every member has posted it;
///  5. alloc/free take no time and move the memory model by the summed size of every buffer they
///     list in `writes` (one or more).
/// Compute and copy ops take the compute model's time (scaled by 1 + sm_contention while a
/// communication op of the same rank is in flight when they start: NCCL kernels occupy SMs;
/// default 0, see SimOptions). Transfers go through the network model.
///
/// Deterministic: all state is local, every choice follows the event order, time is integer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/units.h"
#include "sim/memory/memory_model.h"
#include "sim/network/collectives.h"
#include "sim/network/network_model.h"
#include "sim/run/big_vector.h"
#include "sim/symmetry/symmetry.h"

namespace tawpipe::sim {

/// What the executor needs besides the program and topology.
/// ExecOptions::sm_contention: model the contention from channels, SMs and bus traffic.
inline constexpr double kModelContention = -1.0;

struct ExecOptions {
  const profile::Profile* profile = nullptr;  ///< may be null
  /// Communication kernels' contention with compute (contention.cpp): kModelContention (< 0)
  /// derives it from each NCCL operation's channels (SMs held) and bus traffic (HBM) on GPU
  /// ranks; 0 turns it off; > 0 overrides it with a flat relative slow-down of compute ops that
  /// start while a communication op of their rank is in flight.
  double sm_contention = kModelContention;
  MemoryOptions memory;
  bool record_link_usage = false;  ///< keep per-link usage samples (trace counter tracks)
  bool record_memory = false;      ///< keep per-rank memory samples (trace counter tracks)
  /// All-reduce algorithm: NCCL's tuner (automatic) or forced (sim/network/collectives.h).
  AllReduceAlgo all_reduce_algo = AllReduceAlgo::automatic;
  /// NCCL_PROTO, NCCL_MIN/MAX_NCHANNELS and the socket transport's threads and sockets.
  NcclOptions nccl;
  /// GPU topologies: a rank runs the operations of one NCCL communicator one at a time, in
  /// program order (NCCL's per-communicator device stream; tables.cpp build_comm_order). Off:
  /// operations of one communicator on different IR streams overlap (what-if).
  bool comm_order = true;
  /// Replica symmetry (sim/symmetry/symmetry.h): simulate replica 0 only, each transfer standing
  /// for its images in every replica. Null: every rank is simulated. Must outlive the run.
  const ReplicaSymmetry* symmetry = nullptr;
  /// CPU topologies: a calibrated noise trace replayed on the cores (sim/run/noise.h), its
  /// start at simulated time -noise_offset. Null: every core runs at the calibrated rates. Must
  /// outlive the run; needs one unit per core of the host (else execute() fails).
  const profile::NoiseTrace* noise = nullptr;
  SimTime noise_offset;
};

/// Per-rank time accounting (definitions in common/report/report.h).
struct RankTimes {
  SimTime compute;       ///< a compute or copy op runs
  SimTime exposed_comm;  ///< no compute or copy op runs, some communication op is in flight
};

/// Everything one run produced; turned into a report by `build_report` (report_builder.h).
struct ExecutionResult {
  std::vector<std::size_t> rank_offset;  ///< global index of rank r's op 0; size ranks + 1
  /// By global op index. With replica symmetry, replica 0's ops only: rank r's op i ran at the
  /// times of op i of rank `timing_rank(r)`.
  BigVector<SimTime> op_start;
  BigVector<SimTime> op_end;
  /// CPU topologies: the core work given to each compute op and copy (its job on its core:
  /// work at the calibrated rates plus the per-op overhead, stretched by the noise trace), and
  /// charged for each transfer on its thread (its copies, sums and wait wake-ups, sim/run/
  /// host_cpu.cpp charge_op_cpu); zero for other ops. Empty on device topologies. Indexed like
  /// op_start.
  BigVector<SimTime> op_cpu;
  std::size_t replica_ranks = 0;  ///< with replica symmetry: ranks per replica, else 0
  std::size_t timing_rank(std::size_t r) const { return replica_ranks > 0 ? r % replica_ranks : r; }
  std::vector<RankTimes> rank_times;
  std::vector<std::uint64_t> peak_memory_bytes;      ///< allocated + reserve + NCCL, by rank
  std::vector<MemoryBreakdown> peak_memory;          ///< at each rank's peak; sums to the above
  std::vector<std::uint64_t> memory_capacity_bytes;  ///< device memory by rank (0 = unknown)
  std::vector<std::vector<MemorySample>> memory_samples;  ///< with record_memory, by rank
  std::vector<double> intra_node_bytes_sent;
  std::vector<double> inter_node_bytes_sent;
  std::vector<double> link_bytes;  ///< by link id
  std::vector<SimTime> link_busy;  ///< by link id
  std::vector<LinkUsageSample> link_usage;
  SimTime first_start;
  SimTime last_end;
  std::uint64_t events = 0;
  std::uint64_t tree_all_reduces = 0;  ///< all-reduce instances run as trees
  /// Collective instances by NCCL protocol (LL, LL128, Simple); host communicators not counted.
  std::array<std::uint64_t, nccl::kProtos> protocol_counts{};
  /// Protocol and channels of the last collective or P2P transfer (the collectives table runs
  /// one per program); 0 channels on host communicators.
  nccl::Proto last_protocol = nccl::Proto::simple;
  int last_channels = 0;
  /// With ExecOptions::symmetry: why the flow system turned out not to be replica-symmetric
  /// (the figures are then not exact; simulate without symmetry). Empty: exact.
  std::string symmetry_broken;
  /// With ExecOptions::symmetry and exact: links (replica 0's standing for a set of counterparts,
  /// or shared) that a cross-replica collective loaded unevenly without limiting any replica's
  /// own transfer there (sim/symmetry/symmetry.h, "Uneven loads").
  std::int32_t uneven_links = 0;
};

/// Runs `program` once. Errors: placement or dtype problems, unmatched sends/receives or
/// collectives, or a stall (ops that never become ready; the message names the first one).
/// The program should have passed the verifier; the executor does not re-check dataflow.
Expected<ExecutionResult> execute(const ir::Program& program, const topo::Topology& topology,
                                  const ExecOptions& options);

}  // namespace tawpipe::sim
