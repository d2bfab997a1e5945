// The program executor's entry point (executor.h); the implementation is split by concern over
// tables.cpp, event_loop.cpp and transfers.cpp (executor_impl.h).
#include "sim/run/executor.h"

#include "sim/run/executor_impl.h"

namespace tawpipe::sim {

Expected<ExecutionResult> execute(const ir::Program& program, const topo::Topology& topology,
                                  const ExecOptions& options) {
  auto compute = ComputeModel::create(program, topology, options.profile);
  if (!compute.ok()) return compute.error();
  detail::Executor ex(program, topology, options, std::move(*compute));
  TAWPIPE_TRY(ex.prepare());
  return ex.run();
}

}  // namespace tawpipe::sim
