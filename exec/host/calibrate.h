/// \file
/// `tawexec calibrate --backend host`: micro-benchmarks of this machine as the host backend uses
/// it, turned into a calibration profile (common/profile/profile.h) for `tawsim --profile`.
///
/// Measured: GEMM FLOP/s at the block's shapes (the tiny preset's by default), attention forward
/// and backward FLOP/s (counted as common/model/cost.h counts them: causal, 2*B*S^2*H forward,
/// 2.5x backward), element-wise bytes/s (RMSNorm and SwiGLU), streaming-copy bandwidth, the cost
/// of a near-empty op (launch overhead), and, with 2 or more MPI ranks, point-to-point latency
/// and bandwidth between ranks 0 and 1 (ping-pong) plus all-reduce bus bandwidth over all ranks.
#pragma once

#include <string>

#include "common/error.h"
#include "common/profile/profile.h"

namespace tawpipe::exec::host {

struct CalibrateOptions {
  std::string device_kind = "cpu-core";  ///< profile key (the topology's device kind name)
  std::string model = "tiny";            ///< block shapes to measure GEMMs at
  std::int64_t seq_len = 64;
  double seconds_per_figure = 0.2;  ///< measuring time per figure
};

/// Extra figures that the profile schema has no field for (printed by the CLI).
struct CalibrateExtras {
  double allreduce_bus_bandwidth = 0.0;  ///< bytes/s, 4 MiB all-reduce over all ranks
  int ranks = 1;
};

/// Runs the benchmarks (collective over MPI_COMM_WORLD). Every rank measures; rank 0's figures
/// are returned (others get an empty profile).
Expected<profile::Profile> calibrate_host(const CalibrateOptions& options, CalibrateExtras* extras);

/// The `tawexec calibrate` command line (argv[0] is "calibrate"); MPI is initialised and is
/// finalised here. Prints the profile YAML (or writes --output FILE) on rank 0.
int calibrate_main(int argc, char** argv);

}  // namespace tawpipe::exec::host
