#include "exec/calibrate_flags.h"

#include <cmath>
#include <iostream>

#include <fmt/core.h>
#include <mpi.h>
#include <boost/program_options.hpp>

#include "common/io.h"
#include "common/topology/loader.h"
#include "exec/cli_support.h"

namespace tawpipe::exec::cli {

std::optional<int> parse_calibrate_flags(int argc, char** argv, CalibrateFlags& flags) {
  namespace po = boost::program_options;
  po::options_description visible("tawexec calibrate options");
  // clang-format off
  visible.add_options()
    ("help,h", "print this help")
    ("backend", po::value(&flags.backend), fmt::format("host or cuda [{}]", flags.backend).c_str())
    ("topology,t", po::value(&flags.topology),
     fmt::format("topology whose device kind the profile describes [{}]", flags.topology).c_str())
    ("model,m", po::value(&flags.model),
     fmt::format("model whose block shapes to measure [{}]", flags.model).c_str())
    ("seq-len", po::value(&flags.seq_len),
     fmt::format("sequence length of the measured shapes [{}]", flags.seq_len).c_str());
  if (flags.seconds_per_figure) {
    visible.add_options()
      ("seconds", po::value(&*flags.seconds_per_figure),
       fmt::format("measuring time per figure [{}]", *flags.seconds_per_figure).c_str());
  }
  if (flags.layers_per_rank) {
    visible.add_options()
      ("layers-per-rank", po::value(&*flags.layers_per_rank),
       fmt::format("layers whose weights a rank's ops cycle through (GEMM operands come from "
                   "beyond the cache as in a run; 0: the model's layers / ranks) [{}]",
                   *flags.layers_per_rank).c_str());
  }
  if (flags.noise_seconds) {
    visible.add_options()
      ("noise-seconds", po::value(&*flags.noise_seconds),
       fmt::format("wall seconds of the noise trace: fixed work quanta (~1 ms) on every core at "
                   "once, each quantum's duration recorded (0: no noise section) [{}]",
                   *flags.noise_seconds).c_str());
  }
  visible.add_options()
    ("output,o", po::value(&flags.output), "write the profile YAML to FILE [-: standard output]");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(visible).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return kCalibrate.usage_error(std::string(e.what()) + " (see tawexec calibrate --help)");
  }
  if (flags.layers_per_rank && *flags.layers_per_rank < 0) {
    return kCalibrate.usage_error("--layers-per-rank must be >= 0, got " +
                                  std::to_string(*flags.layers_per_rank) +
                                  " (see tawexec calibrate --help)");
  }
  if (flags.noise_seconds && !(std::isfinite(*flags.noise_seconds) && *flags.noise_seconds >= 0)) {
    return kCalibrate.usage_error(
        fmt::format("--noise-seconds must be >= 0, got {}", *flags.noise_seconds) +
        " (see tawexec calibrate --help)");
  }
  if (vm.count("help")) {
    if (world_rank() == 0) {
      std::cout << "Usage: mpirun -np 2 tawexec calibrate --backend host [options]\n\n" << visible;
    }
    MPI_Finalize();
    return kExitOk;
  }
  return std::nullopt;
}

Expected<std::string> calibrate_device_kind(const std::string& topology) {
  auto path = topo::resolve_topology(topology);
  if (!path.ok()) return path.error();
  auto topo = topo::load_topology_file(*path);
  if (!topo.ok()) return topo.error();
  return topo->device(0).name;
}

int write_calibrated_profile(const std::string& output, const profile::Profile& profile) {
  Status s = write_text_file(output, profile::write_profile_yaml(profile));
  if (s.ok()) return kExitOk;
  kCalibrate.say(s.error().to_string());
  return kExitUsage;
}

}  // namespace tawpipe::exec::cli
