// `tawexec calibrate`: the command line around exec/host/calibrate.h.
#include <cstdlib>
#include <string>

#include <fmt/core.h>
#include <mpi.h>

#include "common/topology/loader.h"
#include "exec/calibrate_flags.h"
#include "exec/cli_support.h"
#include "exec/host/calibrate.h"
#include "exec/host/pin.h"
#ifdef TAWPIPE_HAVE_CUDA_BACKEND
#include "exec/cuda/cuda_run.h"
#endif

namespace tawpipe::exec::host {

using cli::kCalibrate;

int calibrate_main(int argc, char** argv) {
  CalibrateOptions o;
  cli::CalibrateFlags flags{"host", "localhost-cpu",      o.model,           o.seq_len,
                            "-",    o.seconds_per_figure, o.layers_per_rank, o.noise_seconds};
  if (auto status = cli::parse_calibrate_flags(argc, argv, flags)) return *status;
  if (flags.backend == "cuda") {
#ifdef TAWPIPE_HAVE_CUDA_BACKEND
    return cuda::calibrate_main(argc, argv);
#else
    return kCalibrate.usage_error(
        "CUDA backend not built (CUDA Toolkit/NCCL not found at configure time)");
#endif
  }
  if (flags.backend != "host")
    return kCalibrate.usage_error("--backend must be host or cuda, got '" + flags.backend + "'");
  auto kind = cli::calibrate_device_kind(flags.topology);
  if (!kind.ok()) return kCalibrate.usage_error(kind.error().to_string());
  o.device_kind = *kind;
  if (auto path = topo::resolve_topology(flags.topology); path.ok()) {
    if (auto t = topo::load_topology_file(*path); t.ok()) o.host = t->host_cpu();
  }
  if (o.host && std::getenv("TAWPIPE_NO_PIN") == nullptr) {
    // Pinned as `tawexec` pins a run on this topology (rank r on GPU r).
    auto core = pin_to_core(*o.host, cli::world_rank());
    if (!core.ok()) kCalibrate.say(core.error().message);
  }
  o.model = flags.model;
  o.seq_len = flags.seq_len;
  o.seconds_per_figure = *flags.seconds_per_figure;
  o.layers_per_rank = *flags.layers_per_rank;
  o.noise_seconds = *flags.noise_seconds;
  CalibrateExtras extras;
  auto profile = calibrate_host(o, &extras);
  if (!profile.ok()) return kCalibrate.usage_error(profile.error().to_string());
  int status = cli::kExitOk;
  if (cli::world_rank() == 0) {
    status = cli::write_calibrated_profile(flags.output, *profile);
    if (extras.ranks >= 2) {
      kCalibrate.say(fmt::format("all-reduce bus bandwidth over {} ranks: {:.2f} GB/s (4 MiB)",
                                 extras.ranks, extras.allreduce_bus_bandwidth / 1e9));
    } else {
      kCalibrate.say("one rank: no MPI figures (run under mpirun -np 2)");
    }
  }
  MPI_Finalize();
  return status;
}

}  // namespace tawpipe::exec::host
