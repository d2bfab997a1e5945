/// \file
/// `tawexec calibrate --backend host`: micro-benchmarks of this machine as the host backend uses
/// it, turned into a calibration profile (common/profile/profile.h) for `tawsim --profile`.
///
/// Measured (compute on the first rank of every core at once, the other ranks sleeping; every
/// compute figure's batches interleaved with the others', medians after a warm-up; the median over
/// the measuring ranks): GEMM FLOP/s at each GEMM shape of the block (forward and weight-gradient
/// shapes of the model at --seq-len, weight operands rotated beyond the caches), attention
/// forward and backward FLOP/s at the block's shape (counted as common/model/cost.h counts them:
/// causal, 2*S^2*H forward, 2.5x backward), the memory-bound kernels at the sizes and cache
/// state a run gives them (calibrate_kernels.h: norm, activation, residual add and copy hot at
/// activation size; the accumulate and AdamW of a layer piece and of a block and a block copy
/// with operands rotated beyond the caches; embedding gather and scatter-add; RoPE on q and k
/// and the head's softmax cross-entropy with its gradient, hot, each its own class), the cost of
/// a near-empty kernel call (launch_overhead) and of one IR op through the interpreter
/// (op_overhead); with 2 or more ranks, the communication curves of calibrate_comm.h (scope
/// shared_memory) and the shared-memory link latency and bandwidth derived from the sendrecv
/// curve. Between the compute figures and the communication curves, unless --noise-seconds is 0,
/// the noise trace (calibrate_noise.h): a fixed-work-quantum benchmark on the first rank of every
/// core at once, one unit per core.
#pragma once

#include <optional>
#include <string>

#include "common/error.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"

namespace tawpipe::exec::host {

struct CalibrateOptions {
  std::string device_kind = "cpu-core";  ///< profile key (the topology's device kind name)
  std::string model = "tiny";            ///< block shapes to measure GEMMs at
  std::int64_t seq_len = 64;
  double seconds_per_figure = 0.2;  ///< measuring time per figure
  /// The layers whose weights one rank's ops cycle through (0: the model's layers / ranks): a
  /// GEMM's weight-sized operands rotate over that many layers' weights (calibrate.cpp).
  std::int64_t layers_per_rank = 0;
  /// Wall seconds of the noise trace (calibrate_noise.h), the same span on every core; 0: no
  /// trace, the profile gets no noise section.
  double noise_seconds = 4.0;
  /// The topology's `host:` section: ranks are pinned as a run pins them, and the profile
  /// records it.
  std::optional<topo::HostCpu> host;
};

/// Extra figures that the profile schema has no field for (printed by the CLI).
struct CalibrateExtras {
  double allreduce_bus_bandwidth = 0.0;  ///< bytes/s, 4 MiB all-reduce over all ranks
  int ranks = 1;
};

/// Runs the benchmarks (collective over MPI_COMM_WORLD); rank 0's profile is returned (others
/// get an empty profile).
Expected<profile::Profile> calibrate_host(const CalibrateOptions& options, CalibrateExtras* extras);

/// The `tawexec calibrate` command line (argv[0] is "calibrate"); MPI is initialised and is
/// finalised here. Prints the profile YAML (or writes --output FILE) on rank 0.
int calibrate_main(int argc, char** argv);

}  // namespace tawpipe::exec::host
