/// \file
/// The calibration profile: achieved (measured) rates that override a topology's datasheet peaks
/// times efficiencies in the simulator. `tawexec calibrate` writes one; `tawsim --profile FILE`
/// reads it.
///
/// Schema (YAML, every field optional except `format_version`; units as in topology files):
///
///     format_version: 1
///     producer: "tawexec calibrate 0.1.0 (cuda backend)"   # free text
///     devices:                       # keyed by the topology's device kind name
///       a100-sxm4-80gb:
///         dtype: bf16                # dtype the FLOP rates were measured at (informational)
///         gemm: 268TFLOP/s           # achieved FLOP/s of large GEMMs
///         attention_fwd: 228TFLOP/s  # achieved FLOP/s of fused attention forward
///         attention_bwd: 196TFLOP/s  # ... backward
///         elementwise: 1500GB/s      # achieved bytes/s of element-wise kernels
///         memory_bandwidth: 1630GB/s # achieved bytes/s of streaming copies (HBM)
///         launch_overhead: 5us       # fixed cost per compute op
///     links:                         # keyed by link class (nvlink, nvswitch, pcie, cpu_link,
///       nvswitch:                    # shared_memory, nic, network)
///         bandwidth: 274GB/s         # achieved per-direction rate of one flow on such a link
///         latency: 600ns             # one-way latency per hop
///
/// Semantics in the simulator: a given device figure replaces peak x efficiency for that op class
/// (the FLOP rates are used as measured, whatever the run's dtype); a given link bandwidth replaces
/// capacity x efficiency of every link of that class, a given latency replaces their latency.
/// Absent fields keep the topology's values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/units.h"

namespace tawpipe::profile {

inline constexpr int kProfileFormatVersion = 1;

/// Measured figures of one device kind. Absent = use the topology's peak x efficiency.
struct DeviceProfile {
  std::string dtype;  ///< informational: dtype of the FLOP measurements (bf16, fp16, fp32)
  std::optional<FlopRate> gemm;
  std::optional<FlopRate> attention_fwd;
  std::optional<FlopRate> attention_bwd;
  std::optional<Bandwidth> elementwise;       ///< achieved bytes/s of element-wise kernels
  std::optional<Bandwidth> memory_bandwidth;  ///< achieved bytes/s of streaming copies
  std::optional<SimTime> launch_overhead;
  friend bool operator==(const DeviceProfile&, const DeviceProfile&) = default;
};

/// Measured figures of one link class.
struct LinkProfile {
  std::optional<Bandwidth> bandwidth;  ///< achieved per-direction rate (replaces cap x eff)
  std::optional<SimTime> latency;      ///< one-way latency per hop
  friend bool operator==(const LinkProfile&, const LinkProfile&) = default;
};

/// A whole profile. Maps are keyed by device kind name and link class name (sorted, so the
/// writer's output is deterministic).
struct Profile {
  int format_version = kProfileFormatVersion;
  std::string producer;
  std::map<std::string, DeviceProfile> devices;
  std::map<std::string, LinkProfile> links;
  friend bool operator==(const Profile&, const Profile&) = default;
};

/// Parses a profile. Errors (unknown keys with a "did you mean", missing units, unknown link
/// class, bad version) carry `file_name`, line, column and the key path.
Expected<Profile> read_profile_yaml(std::string_view text, std::string_view file_name);
/// Reads and parses a file.
Expected<Profile> read_profile_file(const std::string& path);
/// The YAML form above; read_profile_yaml(write_profile_yaml(p)) == p.
std::string write_profile_yaml(const Profile& profile);

}  // namespace tawpipe::profile
