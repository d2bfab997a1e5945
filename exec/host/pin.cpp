#include "exec/host/pin.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tawpipe::exec::host {

Expected<int> pin_to_core(const topo::HostCpu& host, int gpu) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int cores = static_cast<int>(online > 0 ? online : 1);
  // A topology that states more cores than this machine has still runs (folded onto the cores
  // there are); the prediction then describes another machine.
  const int core = (gpu / host.ranks_per_core) % cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(core), &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    return make_error("cannot pin to core " + std::to_string(core) + ": " + std::strerror(errno));
  }
  return core;
}

}  // namespace tawpipe::exec::host
