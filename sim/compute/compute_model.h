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
/// That op-class formula is the fallback for costs without kernels (hand-built costs, old IR
/// files). Costs that carry their kernels (common/model/kernels.h; every schedule's) are costed
/// kernel by kernel with rates by shape (kernel_rates.h):
///
///     time = sum over kernels of count * (max(flops / rate(shape), bytes / bandwidth) + launch)
///            + op_overhead (profile; interpreter cost per IR op)
///
/// and a copy op moves 2 * bytes at the `copy` class bandwidth plus one launch.
///
/// A calibration profile (common/profile/profile.h) replaces the rate or bandwidth of every class
/// it measures, and the launch overhead. Durations are rounded up to whole picoseconds and cached
/// per (device kind, cost id, forward/backward), so `op_time` does no arithmetic on the hot path
/// beyond a table lookup (a copy op: one division).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/units.h"
#include "sim/compute/kernel_rates.h"

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
  /// The per-kernel rates of `rank`'s device.
  const KernelRates& kernel_rates(ir::Rank rank) const {
    return kernel_rates_[idx(kind_of_rank_[idx(rank)])];
  }
  /// Seconds one op with cost `cost` spends in each kernel class on `rank`'s device (launches
  /// included; for costs without kernels: gemm, attention_fwd/_bwd by `backward` and the
  /// element-wise time under `residual`). For the reports' per-kernel-class shares.
  std::array<double, model::kNumKernelClasses> class_seconds(ir::Rank rank, ir::CostId cost,
                                                             bool backward) const;
  /// Seconds of a copy op of `bytes` on `rank`'s device.
  double copy_seconds(ir::Rank rank, std::uint64_t bytes) const;

 private:
  static std::size_t idx(std::int32_t v) { return static_cast<std::size_t>(v); }

  std::vector<DeviceRates> kinds_;
  std::vector<KernelRates> kernel_rates_;
  std::vector<double> copy_bytes_per_second_;  ///< per kind: 2 x bytes of a copy op move at this
  std::vector<double> op_overhead_seconds_;    ///< per kind (profile op_overhead)
  std::vector<std::int32_t> kind_of_rank_;
  std::size_t num_costs_ = 0;
  /// [kind][cost][0 = forward-like, 1 = backward]: seconds per kernel class
  std::vector<std::array<double, model::kNumKernelClasses>> class_table_;
  /// [kind][cost][0 = forward-like, 1 = backward]
  std::vector<SimTime> table_;
};

}  // namespace tawpipe::sim
