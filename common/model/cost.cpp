// Per-op-class totals as sums over the kernel catalogue (kernels.cpp holds the FLOP and byte
// formulas of each kernel), activation memory and model FLOPs. Conventions are in cost.h.
#include "common/model/cost.h"

#include "common/model/memory.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

namespace tawpipe::model {
namespace {

// The op class a kernel class is totalled under.
enum class Totals { gemm, attention, elementwise };

Totals totals_of(KernelClass c) {
  if (c == KernelClass::gemm) return Totals::gemm;
  if (c == KernelClass::attention_fwd || c == KernelClass::attention_bwd) return Totals::attention;
  return Totals::elementwise;
}

}  // namespace

OpCost cost_of(KernelList kernels) {
  OpCost c;
  for (const Kernel& k : kernels) {
    const double n = static_cast<double>(k.count);
    switch (totals_of(k.cls)) {
      case Totals::gemm:
        c.gemm_flops += n * k.flops;
        c.gemm_bytes += n * k.bytes;
        break;
      case Totals::attention:
        c.attention_flops += n * k.flops;
        c.attention_bytes += n * k.bytes;
        break;
      case Totals::elementwise:
        c.elementwise_flops += n * k.flops;
        c.elementwise_bytes += n * k.bytes;
        break;
    }
  }
  c.kernels = std::move(kernels);
  return c;
}

OpCost& OpCost::operator+=(const OpCost& o) {
  gemm_flops += o.gemm_flops;
  attention_flops += o.attention_flops;
  elementwise_flops += o.elementwise_flops;
  gemm_bytes += o.gemm_bytes;
  attention_bytes += o.attention_bytes;
  elementwise_bytes += o.elementwise_bytes;
  kernels.insert(kernels.end(), o.kernels.begin(), o.kernels.end());
  return *this;
}

OpCost& OpCost::operator*=(double k) {
  assert(k >= 0.0);
  gemm_flops *= k;
  attention_flops *= k;
  elementwise_flops *= k;
  gemm_bytes *= k;
  attention_bytes *= k;
  elementwise_bytes *= k;
  if (!kernels.empty()) {
    assert(k == std::floor(k) && "kernel counts scale by whole numbers");
    kernels = repeated(std::move(kernels), static_cast<std::int64_t>(k));
  }
  return *this;
}

OpCost layer_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(layer_forward_kernels(cfg, shape));
}

OpCost layer_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(layer_backward_kernels(cfg, shape));
}

OpCost layer_backward_input_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(layer_backward_input_kernels(cfg, shape));
}

OpCost layer_backward_weight_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(layer_backward_weight_kernels(cfg, shape));
}

OpCost layer_recompute_cost(const ModelConfig& cfg, const MicroBatchShape& shape,
                            RecomputePolicy policy) {
  return cost_of(layer_recompute_kernels(cfg, shape, policy));
}

OpCost head_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(head_forward_kernels(cfg, shape));
}

OpCost head_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(head_backward_kernels(cfg, shape));
}

OpCost embedding_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(embedding_forward_kernels(cfg, shape));
}

OpCost embedding_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return cost_of(embedding_backward_kernels(cfg, shape));
}

OpCost optimizer_step_cost(std::int64_t params, std::int64_t compute_dtype_bytes) {
  return cost_of(optimizer_kernels(params, compute_dtype_bytes));
}

FlopsPerToken model_flops_per_token(const ModelConfig& cfg, std::int64_t seq_len,
                                    AttentionMask mask) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  FlopsPerToken f;
  f.dense_flops = 6.0 * (d(cfg.layers) * d(layer_gemm_params(cfg)) + d(cfg.vocab) * d(cfg.hidden));
  const double per_layer = d(seq_len) * d(cfg.q_width());
  f.attention_flops = (mask == AttentionMask::kCausal ? 6.0 : 12.0) * d(cfg.layers) * per_layer;
  return f;
}

double hardware_flops_per_token(const ModelConfig& cfg, std::int64_t seq_len,
                                RecomputePolicy policy) {
  const MicroBatchShape shape{1, seq_len, 2};
  const OpCost layer = layer_forward_cost(cfg, shape) + layer_backward_cost(cfg, shape) +
                       layer_recompute_cost(cfg, shape, policy);
  const OpCost head = head_forward_cost(cfg, shape) + head_backward_cost(cfg, shape);
  const double matmul =
      static_cast<double>(cfg.layers) * (layer.gemm_flops + layer.attention_flops) +
      head.gemm_flops + head.attention_flops;
  return matmul / static_cast<double>(seq_len);
}

}  // namespace tawpipe::model
