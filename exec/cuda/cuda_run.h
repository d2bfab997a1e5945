/// \file
/// `tawexec --backend cuda` and `tawexec calibrate --backend cuda`: the command paths over the
/// CUDA DeviceApi, DeviceBackend and the interpreter. No CUDA types here (tawexec.cpp includes
/// it). Both expect MPI initialised and finalise it; they return the process exit status
/// (0 ok, 1 run-time failure, 2 bad input or no device: one line on stderr from rank 0).
#pragma once

#include <cstdint>
#include <string>

#include "exec/run_setup.h"

namespace tawpipe::exec::cuda {

/// What `tawexec --backend cuda` was asked to do (the shared flags of tawexec.cpp).
struct CudaRunOptions {
  ProgramOptions program;
  std::int64_t steps = 1;
  std::int64_t warmup = 0;
  std::string report_file, trace_file;
  double timeout_seconds = 0.0;
  bool verify = false;  ///< losses and final weights against the single-process reference
};

/// Runs the program on one GPU per MPI rank and writes the measured report and trace.
/// Without a visible device: exit 2 with "tawexec: no CUDA device visible (...)".
int run_main(const CudaRunOptions& options);

/// `tawexec calibrate --backend cuda` (argv[0] is "calibrate"): GEMM, attention, element-wise,
/// copy and launch figures of the device, NCCL point-to-point per link class (inside a node,
/// across nodes), written as the profile YAML `tawsim --profile` reads.
int calibrate_main(int argc, char** argv);

}  // namespace tawpipe::exec::cuda
