#include "sim/compute/compute_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace tawpipe::sim {
namespace {

SimTime seconds_up(double seconds) {
  return SimTime::ps(static_cast<std::int64_t>(std::ceil(seconds * 1e12)));
}

double class_time(double flops, double rate, double bytes, double bw) {
  const double t_flops = flops > 0.0 ? flops / rate : 0.0;
  const double t_bytes = bytes > 0.0 ? bytes / bw : 0.0;
  return std::max(t_flops, t_bytes);
}

// The best measured rate of a class (FLOP/s or bytes/s), if the profile has points for it.
std::optional<double> best_rate(const profile::DeviceProfile& p, model::KernelClass cls) {
  const auto it = p.kernels.find(cls);
  if (it == p.kernels.end()) return std::nullopt;
  std::optional<double> best;
  for (const profile::KernelPoint& point : it->second) {
    const double v = point.rate        ? point.rate->flops_per_second()
                     : point.bandwidth ? point.bandwidth->bytes_per_second()
                                       : 0.0;
    if (v > 0.0 && (!best || v > *best)) best = v;
  }
  return best;
}

}  // namespace

Expected<DeviceRates> device_rates(const topo::DeviceKind& kind, std::string_view dtype,
                                   const profile::Profile* profile) {
  double peak = 0.0;
  if (dtype == "bf16") {
    peak = kind.peak_bf16.flops_per_second();
  } else if (dtype == "fp16") {
    peak = kind.peak_fp16.flops_per_second();
  } else if (dtype == "fp32") {
    peak = kind.peak_fp32.flops_per_second();
  } else {
    return make_error("unknown compute dtype '" + std::string(dtype) +
                      "' in the program header (expected bf16, fp16 or fp32)");
  }
  const topo::OpClassEfficiency& eff = kind.efficiency;
  const double hbm = kind.memory_bandwidth.bytes_per_second();
  DeviceRates r;
  r.peak_flops_per_second = peak;
  r.gemm_flops_per_second = peak * eff.gemm;
  r.attention_fwd_flops_per_second = peak * eff.attention_fwd;
  r.attention_bwd_flops_per_second = peak * eff.attention_bwd;
  r.elementwise_flops_per_second = kind.peak_fp32.flops_per_second();
  r.memory_bytes_per_second = hbm * eff.memory;
  r.elementwise_bytes_per_second = hbm * eff.elementwise;
  r.launch_overhead = kind.launch_overhead;
  if (profile != nullptr) {
    const auto it = profile->devices.find(kind.name);
    if (it != profile->devices.end()) {
      const profile::DeviceProfile& p = it->second;
      using model::KernelClass;
      if (auto v = best_rate(p, KernelClass::gemm)) r.gemm_flops_per_second = *v;
      if (auto v = best_rate(p, KernelClass::attention_fwd)) r.attention_fwd_flops_per_second = *v;
      if (auto v = best_rate(p, KernelClass::attention_bwd)) r.attention_bwd_flops_per_second = *v;
      if (auto v = best_rate(p, KernelClass::activation)) r.elementwise_bytes_per_second = *v;
      if (p.memory_bandwidth) r.memory_bytes_per_second = p.memory_bandwidth->bytes_per_second();
      if (p.launch_overhead) r.launch_overhead = *p.launch_overhead;
    }
  }
  for (double v : {r.gemm_flops_per_second, r.attention_fwd_flops_per_second,
                   r.attention_bwd_flops_per_second, r.elementwise_flops_per_second,
                   r.memory_bytes_per_second, r.elementwise_bytes_per_second}) {
    if (!(v > 0.0) || !std::isfinite(v))
      return make_error("device kind '" + kind.name + "' has a zero or invalid rate at dtype " +
                        std::string(dtype));
  }
  return r;
}

SimTime compute_time(const ir::Cost& cost, const DeviceRates& rates, bool backward) {
  const auto g = static_cast<std::size_t>(ir::OpClass::gemm);
  const auto a = static_cast<std::size_t>(ir::OpClass::attention);
  const auto e = static_cast<std::size_t>(ir::OpClass::elementwise);
  const double attention_rate =
      backward ? rates.attention_bwd_flops_per_second : rates.attention_fwd_flops_per_second;
  const double seconds =
      class_time(cost.flops[g], rates.gemm_flops_per_second, cost.bytes[g],
                 rates.memory_bytes_per_second) +
      class_time(cost.flops[a], attention_rate, cost.bytes[a], rates.memory_bytes_per_second) +
      class_time(cost.flops[e], rates.elementwise_flops_per_second, cost.bytes[e],
                 rates.elementwise_bytes_per_second);
  return seconds_up(seconds) + rates.launch_overhead;
}

namespace {

// Seconds per kernel class of `cost` on a device (see ComputeModel::class_seconds).
std::array<double, model::kNumKernelClasses> cost_class_seconds(const ir::Cost& cost,
                                                                const DeviceRates& rates,
                                                                const KernelRates& kr,
                                                                bool backward) {
  std::array<double, model::kNumKernelClasses> out{};
  const auto at = [&](model::KernelClass c) -> double& { return out[static_cast<std::size_t>(c)]; };
  if (!cost.kernels.empty()) {
    for (const model::Kernel& k : cost.kernels)
      at(k.cls) += static_cast<double>(k.count) * kernel_seconds(k, kr);
    return out;
  }
  const auto g = static_cast<std::size_t>(ir::OpClass::gemm);
  const auto a = static_cast<std::size_t>(ir::OpClass::attention);
  const auto e = static_cast<std::size_t>(ir::OpClass::elementwise);
  at(model::KernelClass::gemm) = class_time(cost.flops[g], rates.gemm_flops_per_second,
                                            cost.bytes[g], rates.memory_bytes_per_second);
  at(backward ? model::KernelClass::attention_bwd : model::KernelClass::attention_fwd) = class_time(
      cost.flops[a],
      backward ? rates.attention_bwd_flops_per_second : rates.attention_fwd_flops_per_second,
      cost.bytes[a], rates.memory_bytes_per_second);
  at(model::KernelClass::residual) = class_time(cost.flops[e], rates.elementwise_flops_per_second,
                                                cost.bytes[e], rates.elementwise_bytes_per_second) +
                                     rates.launch_overhead.seconds();
  return out;
}

}  // namespace

Expected<ComputeModel> ComputeModel::create(const ir::Program& program,
                                            const topo::Topology& topology,
                                            const profile::Profile* profile) {
  const auto& placement = program.header.placement;
  if (placement.size() != program.ranks.size())
    return make_error("program placement has " + std::to_string(placement.size()) +
                      " entries for " + std::to_string(program.ranks.size()) + " ranks");
  ComputeModel m;
  const auto& kinds = topology.device_kinds();
  for (const topo::DeviceKind& k : kinds) {
    auto r = device_rates(k, program.header.dtype, profile);
    if (!r.ok()) return r.error();
    m.kinds_.push_back(*r);
    auto kr = sim::kernel_rates(k, program.header.dtype, profile);
    if (!kr.ok()) return kr.error();
    // The copy bandwidth as the kernel model sees a large copy (profile points included).
    constexpr double kProbe = 1 << 30;
    const double probe_seconds =
        kernel_seconds(model::copy_kernels(static_cast<std::int64_t>(kProbe))[0], *kr) -
        kr->launch_seconds;
    m.copy_bytes_per_second_.push_back(2.0 * kProbe / probe_seconds);
    double op_overhead = 0.0;
    if (profile != nullptr) {
      const auto it = profile->devices.find(k.name);
      if (it != profile->devices.end() && it->second.op_overhead)
        op_overhead = it->second.op_overhead->seconds();
    }
    m.op_overhead_seconds_.push_back(op_overhead);
    m.kernel_rates_.push_back(std::move(*kr));
  }
  for (std::int32_t gpu : placement) {
    if (gpu < 0 || gpu >= topology.num_gpus())
      return make_error("program placement names GPU " + std::to_string(gpu) + ", topology '" +
                        topology.name() + "' has " + std::to_string(topology.num_gpus()));
    const std::string& name = topology.device(gpu).name;
    const auto it = std::find_if(kinds.begin(), kinds.end(),
                                 [&](const topo::DeviceKind& k) { return k.name == name; });
    m.kind_of_rank_.push_back(static_cast<std::int32_t>(it - kinds.begin()));
  }
  m.num_costs_ = program.costs.size();
  m.table_.resize(m.kinds_.size() * m.num_costs_ * 2);
  m.class_table_.resize(m.table_.size());
  for (std::size_t k = 0; k < m.kinds_.size(); ++k) {
    for (std::size_t c = 0; c < m.num_costs_; ++c) {
      const ir::Cost& cost = program.costs[c];
      for (std::size_t b = 0; b < 2; ++b) {
        const std::size_t slot = (k * m.num_costs_ + c) * 2 + b;
        m.class_table_[slot] = cost_class_seconds(cost, m.kinds_[k], m.kernel_rates_[k], b == 1);
        if (cost.kernels.empty()) {
          m.table_[slot] = compute_time(cost, m.kinds_[k], b == 1);
        } else {
          double seconds = m.op_overhead_seconds_[k];
          for (double s : m.class_table_[slot])
            seconds += s;
          m.table_[slot] = seconds_up(seconds);
        }
      }
    }
  }
  return m;
}

SimTime ComputeModel::op_time(ir::Rank rank, const ir::Op& op) const {
  const std::size_t k = idx(kind_of_rank_[idx(rank)]);
  if (op.kind == ir::OpKind::copy) return seconds_up(copy_seconds(rank, op.bytes));
  if (op.kind != ir::OpKind::compute || op.cost == ir::kNone) return SimTime();
  // B carries the attention backward; W has only GEMMs, so either rate gives the same time.
  const std::size_t b =
      op.compute == ir::ComputeKind::backward || op.compute == ir::ComputeKind::backward_input ? 1
                                                                                               : 0;
  return table_[(k * num_costs_ + idx(op.cost)) * 2 + b];
}

double ComputeModel::copy_seconds(ir::Rank rank, std::uint64_t bytes) const {
  const std::size_t k = idx(kind_of_rank_[idx(rank)]);
  return 2.0 * static_cast<double>(bytes) / copy_bytes_per_second_[k] +
         kernel_rates_[k].launch_seconds;
}

std::array<double, model::kNumKernelClasses> ComputeModel::class_seconds(ir::Rank rank,
                                                                         ir::CostId cost,
                                                                         bool backward) const {
  const std::size_t k = idx(kind_of_rank_[idx(rank)]);
  return class_table_[(k * num_costs_ + idx(cost)) * 2 + (backward ? 1 : 0)];
}

}  // namespace tawpipe::sim
