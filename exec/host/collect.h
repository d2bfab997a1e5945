/// \file
/// End-of-run collection over MPI_COMM_WORLD: op timings and peak memory to rank 0 for the
/// measured report, losses, and every rank's final weights compared on rank 0 with the
/// reference trainer (--verify). All functions are collective over the world: every rank calls
/// them in the same order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "exec/host/host_backend.h"
#include "exec/interpreter.h"
#include "exec/reference.h"

namespace tawpipe::exec::host {

/// Every rank's record (rank 0 gets all, indexed by rank; others get an empty vector). Times
/// stay relative to each rank's own iteration start (ranks start after a barrier).
Expected<std::vector<IterationRecord>> gather_records(const IterationRecord& mine, int world);

/// Sum of `value` over ranks, on rank 0 (others get 0).
Expected<double> reduce_sum(double value);

/// Per rank values gathered on rank 0.
Expected<std::vector<std::uint64_t>> gather_u64(std::uint64_t value, int world);

/// Every rank's `value` on rank 0, indexed by rank (others get an empty vector).
Expected<std::vector<std::string>> gather_strings(const std::string& value, int world);

/// Outcome of comparing every rank's weights with the reference.
struct WeightCheck {
  double max_relative_diff = 0.0;  ///< over all weights-role buffers of all ranks
  std::string worst;               ///< "rank 2 buffer w.l1 scalar 17"
  std::int64_t buffers = 0;        ///< buffers compared
};

/// Rank 0 compares each rank's persistent weights-role buffers (their initial TensorRef says
/// which block or piece they hold) with `reference` (rank 0 only; nullptr elsewhere).
/// Relative difference of a scalar: |w - ref| / max(|ref|, rms of the reference block), so
/// near-zero weights are judged against the block's scale; padding must stay zero.
Expected<WeightCheck> check_weights(const ir::Program& program, ir::Rank rank,
                                    const HostBackend& backend, const ReferenceTrainer* reference);

/// The same for any backend: `fetch` returns a compared buffer's values as floats (a device
/// backend copies and decodes them), `element_bytes` is the stored element size (4 for fp32,
/// 2 for bf16 storage) that turns the IR's byte sizes into element counts. Collective over the
/// world like the overload above.
Expected<WeightCheck> check_weights(
    const ir::Program& program, ir::Rank rank,
    const std::function<Expected<std::vector<float>>(ir::BufferId)>& fetch,
    std::size_t element_bytes, const ReferenceTrainer* reference);

}  // namespace tawpipe::exec::host
