/// \file
/// The communication and per-op parts of `tawexec calibrate --backend host`, measured through the
/// backend's own code paths so that the profile describes what a run does:
///  - sendrecv: one-way time of a message between rank 0 and the first rank of another core by
///    size (half a ping-pong, posted and waited for by exec/host/mpi_ops.h as the stream threads
///    do);
///  - broadcast, reduce, all_reduce, all_gather, reduce_scatter: time by size on 2 ranks (the
///    same pair) and on all ranks (when more than 2), each call posted and waited for by
///    mpi_ops.h on a communicator of those ranks; the time of a point is the slowest rank's mean;
///  - with every point, its CPU time: the busiest rank's thread CPU time per call (what the
///    transfer keeps a core busy; the simulator charges only this to the cores);
///  - op_overhead: the host backend's cost per IR op (interpreter issue, stream-thread hand-off,
///    completion), from a chain of 4-byte copies run by the interpreter (the program and the
///    timing loop are shared with the CUDA calibration).
/// Ranks that do not take part wait without spinning (MPI_Ibarrier + the yielding wait), so they
/// leave their cores to the ranks that measure.
#pragma once

#include <vector>

#include <mpi.h>
#include "common/error.h"

#include "common/ir/program.h"
#include "common/profile/profile.h"
#include "exec/backend.h"

namespace tawpipe::exec::host {

/// Collective over MPI_COMM_WORLD; every rank gets the same curves. `seconds_per_point` bounds
/// the repetitions of each point. 2-rank curves are measured between rank 0 and rank
/// `ranks_per_core` (the first rank of the next core), the others on all ranks; where ranks share
/// a core (and another core has ranks), the 2-rank curves once more between ranks 0 and 1, on one
/// core (scope shared_core). Each point
/// carries its CPU time (`cpu`), less `wake_cpu_seconds` per sleep of the waits (the thread CPU
/// time of one wake-up). Errors: MPI's.
Expected<std::vector<profile::CommMeasurement>> measure_communication(double seconds_per_point,
                                                                      int ranks_per_core,
                                                                      double wake_cpu_seconds);

/// The per-op overhead of the interpreter and host backend on this rank (not collective).
Expected<SimTime> measure_op_overhead(double seconds);

/// The one-rank program of the op-overhead measurement: `ops` 4-byte copies on the compute
/// stream, each waiting for the previous (fp32, no micro-batch). Shared with
/// `tawexec calibrate --backend cuda`, which runs it through the CUDA backend.
ir::Program op_overhead_program(int ops);

/// Prepares `backend` for `program` (one rank, e.g. op_overhead_program's) and runs it for about
/// `seconds` (at least 3 iterations, the first a warm-up): the median iteration time divided by
/// the program's op count.
Expected<SimTime> time_per_op(const ir::Program& program, Backend& backend, double seconds);

/// A barrier that sleeps instead of spinning (MPI_Ibarrier, then mpi_ops.h's wait).
Status quiet_barrier(MPI_Comm comm);

}  // namespace tawpipe::exec::host
