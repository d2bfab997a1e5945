/// \file
/// Rates by shape: how long one kernel of the catalogue (common/model/kernels.h) takes on a
/// device kind. Used once, when the compute model builds its cost table; never in the event loop.
///
///     time(kernel) = max(flops / rate(shape), bytes / bandwidth(class, shape)) + launch
///
/// gemm: tile and wave quantisation over the device's SMs (NVIDIA "Matrix Multiplication
///   Background User's Guide" §2.3, §3.1-3.2). For each candidate output tile tm x tn (the
///   CUTLASS/cuBLAS tile set below) the kernel runs waves = ceil(tiles / sm_count) waves, each
///   as long as one tile takes on one SM at the device's best GEMM rate (MAMF) divided by the
///   SMs, with `k_overhead` extra K-steps per tile for the pipeline's fill and epilogue:
///       tiles = ceil(m / tm) * ceil(n / tn) * batch
///       t(tile) = waves * 2 * tm * tn * (k + k_overhead) / (best / sm_count) / tile_efficiency
///   The fastest tile wins (cuBLAS's heuristics pick a good one), then a fixed `gemm_overhead`
///   is added. The rate is FLOPs over that time; bytes / streaming bandwidth bounds it from
///   below (memory-bound roofline for skinny shapes). Without an SM count (CPU kinds) the GEMM
///   runs at `best` (plain roofline).
/// attention_fwd / attention_bwd: measured rate tables by head dimension and sequence length
///   for the kernel's mask, interpolated log-linearly in the sequence length and in the head
///   dimension; outside the measured head dimensions the trend of the two nearest entries is
///   extended (smaller heads, lower rate; hardware.md has no head-dim-32 figure); outside the
///   measured sequence lengths the rate is clamped to the end points.
/// memory-bound classes: a measured fraction of HBM bandwidth, optionally by reduction width
///   (norms: Liger-Kernel RMSNorm by H), interpolated log-linearly in the width.
/// launch: the device's per-kernel launch overhead; fused kernels (bias epilogues) cost nothing.
///
/// A calibration profile (common/profile/profile.h) replaces the rate of a class by its
/// measured points: a flat point replaces it for every shape; shaped points are interpolated
/// log-linearly in the kernel's work (FLOPs for gemm and attention, bytes for the others)
/// between the nearest measured points, and outside them the built-in model is used, scaled
/// to agree with the nearest measured point.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/model/kernel_class.h"
#include "common/model/kernels.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/units.h"

namespace tawpipe::sim {

/// One candidate GEMM output tile with its efficiency relative to the best tile (smaller tiles
/// reuse operands less).
struct GemmTile {
  std::int64_t m = 0;
  std::int64_t n = 0;
  double efficiency = 1.0;
};

/// The tile set of the GEMM model: the tile shapes the NVIDIA GEMM guide lists for cuBLAS on
/// A100/H100 (256x128, 128x256, 128x128, 128x64, 64x128); relative efficiencies: 1 for the
/// large tiles, 0.95 for 128x128, 0.6 for the 64-wide ones. The two factors are set from the
/// H100 kernel timings of OpenXLA's matmul_interpolator_data.h (hardware.md): with them every
/// documented H100 cube and skinny shape is within 12 % (tests/unit/simulator/
/// kernel_rates_test.cpp lists the ratios); no end-to-end figure is involved.
const std::vector<GemmTile>& gemm_tiles();

/// Everything the per-kernel model needs for one device kind at one compute dtype, resolved
/// once (topology tables, efficiencies as fallbacks, profile points).
struct KernelRates {
  double peak_flops_per_second = 0.0;    ///< datasheet peak at the dtype
  double hbm_bytes_per_second = 0.0;     ///< datasheet memory bandwidth
  double stream_bytes_per_second = 0.0;  ///< achieved streaming rate (roofline of FLOP kernels)
  int sm_count = 0;                      ///< 0: no tile / wave model
  double gemm_best_flops_per_second = 0.0;
  double gemm_k_overhead = 0.0;
  double gemm_overhead_seconds = 0.0;
  double launch_seconds = 0.0;  ///< per (non-fused) kernel
  /// Attention tables (empty: use the flat fallback rates below).
  std::vector<topo::AttentionRateTable> attention;
  double attention_fwd_fallback = 0.0;  ///< peak x efficiency.attention_fwd
  double attention_bwd_fallback = 0.0;
  /// Achieved fraction of HBM bandwidth by class and width (empty: fallback fraction).
  std::array<std::vector<topo::WidthFraction>, model::kNumKernelClasses> bandwidth;
  double elementwise_fallback_fraction = 0.0;  ///< efficiency.elementwise
  double copy_fallback_fraction = 0.0;         ///< efficiency.memory
  /// Profile points by class (empty: built-in model).
  std::array<std::vector<profile::KernelPoint>, model::kNumKernelClasses> measured;
};

/// Resolves the rates of `kind` at `dtype` ("bf16", "fp16", "fp32") with `profile` (may be
/// null) applied. Errors: unknown dtype, a zero rate.
Expected<KernelRates> kernel_rates(const topo::DeviceKind& kind, std::string_view dtype,
                                   const profile::Profile* profile);

/// Built-in GEMM duration in seconds (no launch, no profile): tile/wave model + overhead,
/// bounded below by the bytes at the streaming rate.
double gemm_seconds(const KernelRates& r, std::int64_t m, std::int64_t n, std::int64_t k,
                    std::int64_t batch, double bytes);
/// Built-in attention rate (FLOP/s) for a kernel's shape and mask, forward or backward.
double attention_flops_per_second(const KernelRates& r, bool backward, std::int64_t head_dim,
                                  std::int64_t seq, bool causal);
/// Built-in achieved bandwidth (bytes/s) of a memory-bound class at a reduction width.
double memory_bytes_per_second(const KernelRates& r, model::KernelClass cls, std::int64_t width);

/// Duration of one kernel (not `count` of them) in seconds, launch included (0 launch for
/// fused kernels), with the profile's points applied.
double kernel_seconds(const model::Kernel& kernel, const KernelRates& r);

}  // namespace tawpipe::sim
