/// \file
/// Which buffers an executor must zero to give the IR's "a fresh buffer is empty (zero)": a buffer
/// an alloc op hands out, or a persistent buffer that does not keep its contents across
/// iterations, needs zeroing only when the first op that touches it can read what it holds; an
/// op that overwrites it whole first makes the zeroing a wasted fill. The host backend zeroes by
/// this plan (exec/host/host_backend.cpp), and the simulator charges the alloc ops' fills to
/// their rank's core on CPU topologies (sim/run/host_cpu.cpp, profile host.zero_bandwidth).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/ir/program.h"

namespace tawpipe::ir {

/// The zeroing of one rank's program.
struct ZeroingPlan {
  /// Per op: the buffers that op (an alloc) must zero when it hands them out.
  std::vector<std::vector<BufferId>> on_alloc;
  /// Per buffer: persistent, not kept across iterations, and zeroed at each iteration's start.
  std::vector<std::uint8_t> each_iteration;
};

/// Bytes at the start of buffer `b` that compute op `op` overwrites without reading them first
/// (the executor's kernels decide; whole_output below names the buffer).
using ComputeOverwrites = std::function<std::uint64_t(const Op& op, BufferId b)>;

/// The output that compute op `op` of `rank` writes whole before reading it, or kNone: the
/// activation output (the first written activation buffer) of forward / embedding_forward, the
/// activation-gradient output (the first written activation_grad buffer) of backward /
/// backward_input / head, when `op` does not also read it. Gradients and accumulate targets are
/// added into; optimizer state and weights are read-modify-write.
BufferId whole_output(const RankProgram& rank, const Op& op);

/// The plan of rank `rank` of `program`. What the non-compute ops overwrite is what the host
/// backend writes (exec/host/mpi_ops.cpp): a recv its bytes, a copy min(bytes, source size), a
/// broadcast or all-reduce the whole buffer, an all-gather the members' pieces, a reduce-scatter
/// one piece, a reduce nothing on a non-root (conservatively: nothing).
ZeroingPlan plan_zeroing(const Program& program, Rank rank,
                         const ComputeOverwrites& compute_overwrites);

/// Bytes the alloc ops of `rank` zero, per op (0 for other ops), by `plan`.
std::vector<std::uint64_t> zeroed_bytes_on_alloc(const RankProgram& rank, const ZeroingPlan& plan);

}  // namespace tawpipe::ir
