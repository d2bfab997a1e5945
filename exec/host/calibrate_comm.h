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
///  - every curve a second time cold at 1, 4 and 16 MiB (profile `cold_pool`): each call's send
///    and receive buffers rotated over kColdPoolBytes per rank (exec/host/calibrate_kernels.h),
///    as Intel MPI Benchmarks' -off_cache does. A run's large messages are weight and gradient
///    blocks whose cache state depends on what the rank touched since their last use: WeiPipe's
///    ring forwards a block ~90 ms (a backward, 157 MB of traffic) after posting it, TawPipe
///    broadcasts a block it has just received. Measured on this VM (2 ranks on 2 cores, a 12.9 MB
///    message, Open MPI 4.1 vader/CMA, session 17, docs/validate-host.md): one-way 1.0-1.7 ms
///    with the same buffers every call, 1.9-2.9 ms rotated over 40 buffers; rotated over 1..64
///    buffers the time rises until ~50 MB per side and stays. WeiPipe's exchanges in the
///    localhost-cpu runs took 2.0-2.5 ms per message pair, the hot curve's 1.5 ms. So calibration
///    measures both ends and the simulator places each transfer between them by its reuse
///    distance (sim/network/mpi_shm.h).
///  - with compute bursts (the block's GEMMs: one layer's, and the rank's block's), every curve
///    once more per burst after compute (profile `after_compute`: its median seconds) at the
///    cold curves' sizes: the hot buffers, each call after the burst on every member and a
///    quiet barrier, only the call timed (a message one way, alternately each rank's, its CPU
///    time both ranks' sum). A run's transfers follow its cores' compute, which leaves their
///    buffers as cold as a rotation past the caches or colder whatever the bytes between, and
///    the more so the longer it computed (session 27, docs/validate-host.md: a 3 MiB all-gather
///    on 2 ranks, 145-173 us of CPU back to back, 378-417 rotated, ~306 after 4 ms of the
///    block's GEMMs, ~395 after 30 ms; FSDP's took 370-400 us in its runs).
/// Ranks that do not take part wait without spinning (MPI_Ibarrier + the yielding wait), so they
/// leave their cores to the ranks that measure.
#pragma once

#include <cstdint>
#include <functional>
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
/// One burst of compute on the calling rank's core (the block's GEMMs); returns its seconds.
using ComputeBurst = std::function<double()>;

/// Per burst in `compute`, every curve once more after compute (profile `after_compute`): at
/// the cold curves' sizes, the hot buffers, each call after that burst on every member.
Expected<std::vector<profile::CommMeasurement>> measure_communication(
    double seconds_per_point, int ranks_per_core, double wake_cpu_seconds,
    const std::vector<ComputeBurst>& compute = {});

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

/// A cold curve's buffer rotation: the `call`-th call of `bytes` uses the bytes at this offset of
/// each pool (send and receive), set call mod cold_sets of page-aligned sets of `stride` = bytes
/// rounded up to 4 KiB: consecutive calls touch different bytes, and a set comes back after the
/// others (at least pool_bytes - stride of them) were touched.
std::uint64_t cold_offset(std::uint64_t bytes, std::uint64_t call, std::uint64_t pool_bytes);
/// How many sets the calls of `bytes` rotate through: max(2, ceil(pool_bytes / stride)), as the
/// cold kernel figures rotate (calibrate_kernels.h rotation_sets).
std::uint64_t cold_sets(std::uint64_t bytes, std::uint64_t pool_bytes);
/// The rotation's stride for `bytes`: bytes rounded up to whole 4 KiB pages (at least one).
std::uint64_t cold_stride(std::uint64_t bytes);
/// Bytes each pool needs so that cold_offset(b, k, pool_bytes) + b fits for every b <= largest.
std::uint64_t cold_pool_capacity(std::uint64_t pool_bytes, std::uint64_t largest);

}  // namespace tawpipe::exec::host
