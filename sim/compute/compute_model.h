/// \file
/// The compute model: how long one compute (or local copy) op of the IR takes on a given GPU.
///
/// For a device kind with peak FLOP/s `peak` at the program's compute dtype, HBM bandwidth `hbm`
/// and the topology's efficiencies `eff` (common/topology/topology.h, OpClassEfficiency):
///
///     time = sum over op classes c of max(flops_c / rate_c, bytes_c / bw_c) + launch_overhead
///
///     gemm:        rate = peak * eff.gemm,                         bw = hbm * eff.memory
///     attention:   rate = peak * eff.attention_fwd (forward-like ops) or eff.attention_bwd
///                  (backward ops, whose attention FLOPs include the recomputed forward),
///                                                                  bw = hbm * eff.memory
///     elementwise: rate = FP32 (CUDA-core) peak,                   bw = hbm * eff.elementwise
///
/// Element-wise kernels run on CUDA cores, not tensor cores, hence the FP32 peak; their
/// efficiency is a fraction of memory bandwidth (the topology schema defines it so). A copy op
/// reads and writes its bytes: time = 2 * bytes / (hbm * eff.memory) + launch_overhead.
///
/// A calibration profile (common/profile/profile.h) replaces the rate or bandwidth of every class
/// it measures, and the launch overhead. Durations are rounded up to whole picoseconds and cached
/// per (device kind, cost id, forward/backward), so `op_time` does no arithmetic on the hot path
/// beyond a table lookup.
#pragma once

#include <cstdint>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/units.h"

namespace tawpipe::sim {

/// Achieved rates of one device kind after efficiencies and profile overrides.
struct DeviceRates {
  double gemm_flops_per_second = 0.0;
  double attention_fwd_flops_per_second = 0.0;
  double attention_bwd_flops_per_second = 0.0;
  double elementwise_flops_per_second = 0.0;
  double memory_bytes_per_second = 0.0;       ///< GEMM/attention operand traffic and copies
  double elementwise_bytes_per_second = 0.0;  ///< element-wise kernels
  SimTime launch_overhead;
  double peak_flops_per_second = 0.0;  ///< datasheet peak at the compute dtype (for MFU/HFU)
};

/// Rates of `kind` for compute dtype `dtype` ("bf16", "fp16", "fp32"), with `profile` (may be
/// null) applied. Errors: unknown dtype.
Expected<DeviceRates> device_rates(const topo::DeviceKind& kind, std::string_view dtype,
                                   const profile::Profile* profile);

/// Duration of `cost` at `rates`; `backward` selects the attention backward rate.
SimTime compute_time(const ir::Cost& cost, const DeviceRates& rates, bool backward);

/// Per-program cache of compute durations on every rank's device.
class ComputeModel {
 public:
  /// Resolves the device of every rank through `program.header.placement`. Errors: unknown
  /// dtype, placement out of range or of the wrong length, a device rate of zero.
  static Expected<ComputeModel> create(const ir::Program& program, const topo::Topology& topology,
                                       const profile::Profile* profile);

  /// Duration of compute or copy op `op` of `rank` (other kinds: zero).
  SimTime op_time(ir::Rank rank, const ir::Op& op) const;
  /// The rates of `rank`'s device.
  const DeviceRates& rates(ir::Rank rank) const { return kinds_[idx(kind_of_rank_[idx(rank)])]; }

 private:
  static std::size_t idx(std::int32_t v) { return static_cast<std::size_t>(v); }

  std::vector<DeviceRates> kinds_;
  std::vector<std::int32_t> kind_of_rank_;
  std::size_t num_costs_ = 0;
  /// [kind][cost][0 = forward-like, 1 = backward]
  std::vector<SimTime> table_;
};

}  // namespace tawpipe::sim
