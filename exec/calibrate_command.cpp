// `tawexec calibrate`: the command line around exec/host/calibrate.h.
#include <iostream>
#include <string>

#include <fmt/core.h>
#include <mpi.h>
#include <boost/program_options.hpp>

#include "common/io.h"
#include "common/topology/loader.h"
#include "exec/cli_support.h"
#include "exec/host/calibrate.h"
#ifdef TAWPIPE_HAVE_CUDA_BACKEND
#include "exec/cuda/cuda_run.h"
#endif

namespace tawpipe::exec::host {

using cli::kCalibrate;

int calibrate_main(int argc, char** argv) {
  namespace po = boost::program_options;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string backend = "host", topology = "localhost-cpu", output = "-";
  CalibrateOptions o;
  po::options_description visible("tawexec calibrate options");
  // clang-format off
  visible.add_options()
    ("help,h", "print this help")
    ("backend", po::value(&backend), "host or cuda [host]")
    ("topology,t", po::value(&topology), "topology whose device kind the profile describes "
                                         "[localhost-cpu]")
    ("model,m", po::value(&o.model), "model whose block shapes to measure [tiny]")
    ("seq-len", po::value(&o.seq_len), "sequence length of the measured shapes [64]")
    ("seconds", po::value(&o.seconds_per_figure), "measuring time per figure [0.2]")
    ("output,o", po::value(&output), "write the profile YAML to FILE [-: standard output]");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(visible).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return kCalibrate.usage_error(std::string(e.what()) + " (see tawexec calibrate --help)");
  }
  if (vm.count("help")) {
    if (rank == 0) {
      std::cout << "Usage: mpirun -np 2 tawexec calibrate --backend host [options]\n\n" << visible;
    }
    MPI_Finalize();
    return 0;
  }
  if (backend == "cuda") {
#ifdef TAWPIPE_HAVE_CUDA_BACKEND
    return cuda::calibrate_main(argc, argv);
#else
    return kCalibrate.usage_error(
        "CUDA backend not built (CUDA Toolkit/NCCL not found at configure time)");
#endif
  }
  if (backend != "host")
    return kCalibrate.usage_error("--backend must be host or cuda, got '" + backend + "'");
  auto path = topo::resolve_topology(topology);
  if (!path.ok()) return kCalibrate.usage_error(path.error().to_string());
  auto topo = topo::load_topology_file(*path);
  if (!topo.ok()) return kCalibrate.usage_error(topo.error().to_string());
  o.device_kind = topo->device(0).name;
  CalibrateExtras extras;
  auto profile = calibrate_host(o, &extras);
  if (!profile.ok()) return kCalibrate.usage_error(profile.error().to_string());
  int status = 0;
  if (rank == 0) {
    Status s = write_text_file(output, profile::write_profile_yaml(*profile));
    if (!s.ok()) {
      kCalibrate.say(s.error().to_string());
      status = cli::kExitUsage;
    }
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
