/// \file
/// The flags `tawexec calibrate` takes for every backend (--backend, --topology, --model,
/// --seq-len, --output; --seconds, --layers-per-rank and --noise-seconds where the backend has
/// them), parsed and
/// checked in one place. Each backend parses the command line with its own defaults (the host path
/// first, then, for `--backend cuda`, the CUDA path again). MPI must be initialised.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/profile/profile.h"

namespace tawpipe::exec::cli {

/// The common calibrate flags. The values on entry are the defaults, shown in --help as [value].
struct CalibrateFlags {
  std::string backend;
  std::string topology;  ///< whose device kind the profile describes
  std::string model;     ///< whose block shapes to measure
  std::int64_t seq_len = 0;
  std::string output = "-";  ///< "-": standard output
  /// --seconds (measuring time per figure): taken only when set on entry.
  std::optional<double> seconds_per_figure;
  /// --layers-per-rank (host: the layers whose weights one rank's ops cycle through, which sets
  /// the GEMMs' operand reuse distance; 0: the model's layers / ranks): taken only when set on
  /// entry.
  std::optional<std::int64_t> layers_per_rank;
  /// --noise-seconds (host: the wall span of the noise trace, the same on every core; 0: none):
  /// taken only when set on entry.
  std::optional<double> noise_seconds;
};

/// Parses `argv` (argv[0] is "calibrate") into `flags`. Returns nullopt when the command goes
/// on; otherwise it has printed --help (rank 0) or the one-line error of a bad flag (rank 0,
/// "tawexec calibrate: ... (see tawexec calibrate --help)"), finalised MPI, and returns the exit
/// status (0 or 2).
std::optional<int> parse_calibrate_flags(int argc, char** argv, CalibrateFlags& flags);

/// The profile key of --topology: its first device kind's name. Errors: the topology loader's
/// (unknown name, file:line:col in the file).
Expected<std::string> calibrate_device_kind(const std::string& topology);

/// Writes the profile YAML to `output` (rank 0 only). Returns the exit status: 0, or 2 after
/// "tawexec calibrate: cannot write ..." on stderr.
int write_calibrated_profile(const std::string& output, const profile::Profile& profile);

}  // namespace tawpipe::exec::cli
