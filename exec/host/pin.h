/// \file
/// Pins a host-backend rank to the core its CPU topology places it on (topo::HostCpu: rank r's
/// GPU g runs on core g / ranks_per_core), so that the ranks share cores exactly as the simulator
/// assumes (sim/run/core_sharing.h). Called before the backend starts its stream threads, which
/// inherit the affinity.
#pragma once

#include "common/error.h"
#include "common/topology/topology.h"

namespace tawpipe::exec::host {

/// Restricts this process to core `(gpu / host.ranks_per_core) % online cores` and returns that
/// core. Errors: sched_setaffinity's (e.g. the core is outside the allowed set of a container).
Expected<int> pin_to_core(const topo::HostCpu& host, int gpu);

}  // namespace tawpipe::exec::host
