#include "exec/host/calibrate_kernels.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "common/model/cost.h"
#include "common/model/kernels.h"
#include "exec/math/gemm.h"

namespace tawpipe::exec::host {
namespace {

using model::KernelClass;

// The kernel model's bytes of the kernel `name` of one layer's forward (fp32, one sequence).
double layer_kernel_bytes(const model::ModelConfig& cfg, std::int64_t seq_len,
                          std::string_view name) {
  model::MicroBatchShape shape;
  shape.seq_len = seq_len;
  shape.dtype_bytes = 4;
  for (const model::Kernel& k : model::layer_forward_kernels(cfg, shape))
    if (k.name == name) return k.bytes;
  return 0.0;
}

// The kernel model's bytes of the head's loss, forward and backward (softmax_xent and
// softmax_xent_bwd): the host runs both in one call (exec/math/loss.h).
double head_loss_bytes(const model::ModelConfig& cfg, const model::MicroBatchShape& shape) {
  double bytes = 0.0;
  for (const model::Kernel& k : model::head_forward_kernels(cfg, shape))
    if (k.cls == KernelClass::softmax_xent) bytes += k.bytes;
  for (const model::Kernel& k : model::head_backward_kernels(cfg, shape))
    if (k.cls == KernelClass::softmax_xent) bytes += k.bytes;
  return bytes;
}

}  // namespace

std::vector<MemoryFigure> memory_figures(const model::ModelConfig& cfg, const math::Dims& d,
                                         std::int64_t layers, int world) {
  using K = MemoryFigure::Kernel;
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
  const auto seq = static_cast<std::int64_t>(d.seq_len);
  model::MicroBatchShape shape;
  shape.seq_len = seq;
  shape.dtype_bytes = 4;
  const auto per_layer = static_cast<std::size_t>(model::param_counts(cfg).per_layer);
  const auto ranks = static_cast<std::size_t>(std::max(world, 1));
  const std::size_t piece = (per_layer + ranks - 1) / ranks;  // FSDP pads as FlatParameter does
  const std::size_t block = per_layer * static_cast<std::size_t>(std::max<std::int64_t>(layers, 1));
  const auto n64 = [](std::size_t n) { return static_cast<std::int64_t>(n); };
  std::vector<MemoryFigure> all = {
      {K::rmsnorm, KernelClass::norm, "RMSNorm over T x H (hot)", T * H,
       layer_kernel_bytes(cfg, seq, "attn_norm"), false},
      {K::swiglu, KernelClass::activation, "SwiGLU over T x F (hot)", T * F,
       layer_kernel_bytes(cfg, seq, "swiglu"), false},
      {K::residual_add, KernelClass::residual, "residual add over T x H (hot)", T * H,
       layer_kernel_bytes(cfg, seq, "attn_residual"), false},
      {K::accumulate, KernelClass::residual, "accumulate of a layer piece (cold)", piece,
       model::accumulate_kernels(n64(piece), 4).front().bytes, true},
      {K::accumulate, KernelClass::residual, "accumulate of a block (cold)", block,
       model::accumulate_kernels(n64(block), 4).front().bytes, true},
      {K::adamw, KernelClass::optimizer, "AdamW of a layer piece (cold)", piece,
       model::optimizer_kernels(n64(piece), 4).front().bytes, true},
      {K::adamw, KernelClass::optimizer, "AdamW of a block (cold)", block,
       model::optimizer_kernels(n64(block), 4).front().bytes, true},
      {K::copy, KernelClass::copy, "copy of T x max(H, F) (hot)", T * std::max(H, F),
       model::copy_kernels(n64(4 * T * std::max(H, F))).front().bytes, false},
      {K::copy, KernelClass::copy, "copy of a block (cold)", block,
       model::copy_kernels(n64(4 * block)).front().bytes, true},
      {K::embedding_fwd, KernelClass::embedding, "embedding gather", T * H,
       model::embedding_forward_kernels(cfg, shape).front().bytes, false},
      {K::embedding_bwd, KernelClass::embedding, "embedding scatter-add", T * H,
       model::embedding_backward_kernels(cfg, shape).front().bytes, false},
      // Their own classes, not the norm figure: RoPE's sin/cos rotation and the loss's exp and
      // log per logit cost more per byte than a norm's multiply-adds.
      {K::rope, KernelClass::rope, "RoPE on q and k (hot)", 2 * T * H,
       layer_kernel_bytes(cfg, seq, "rope"), false},
      {K::softmax_xent, KernelClass::softmax_xent, "softmax cross-entropy and gradient over T x V",
       T * d.vocab, head_loss_bytes(cfg, shape), false},
      // Last, so that the other figures keep their neighbours in the interleaved timing.
      {K::zero, KernelClass::copy, "zero of a block (cold)", block,
       4.0 * static_cast<double>(block), true},
  };
  std::vector<MemoryFigure> out;
  for (MemoryFigure& f : all) {
    const bool repeat = std::any_of(out.begin(), out.end(), [&](const MemoryFigure& g) {
      return g.cls == f.cls && g.model_bytes == f.model_bytes &&
             (g.kernel == K::zero) == (f.kernel == K::zero);
    });
    if (!repeat && f.model_bytes > 0.0 && f.elements > 0) out.push_back(std::move(f));
  }
  return out;
}

std::size_t rotation_sets(double set_bytes, bool cold, double pool_bytes) {
  if (!cold || !(set_bytes > 0.0)) return 1;
  return std::max<std::size_t>(2, static_cast<std::size_t>(std::ceil(pool_bytes / set_bytes)));
}

std::vector<GemmShape> block_gemm_shapes(const math::Dims& d) {
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
  return {{T, H, H, false}, {T, F, H, false}, {T, H, F, false},
          {H, H, T, true},  {H, F, T, true},  {F, H, T, true}};
}

namespace {
std::size_t set_floats(const GemmShape& s) {
  return s.k * s.n + s.m * s.n;  // B and C
}
}  // namespace

BlockGemms::BlockGemms(std::vector<GemmShape> shapes, double weight_bytes)
    : shapes_(std::move(shapes)) {
  std::size_t a_floats = 1;
  for (const GemmShape& s : shapes_) {
    a_floats = std::max(a_floats, s.m * s.k);
    const std::size_t floats = set_floats(s);
    const auto sets = static_cast<std::size_t>(
        std::max(1.0, std::ceil(weight_bytes / (4.0 * static_cast<double>(floats)))));
    sets_.push_back(sets);
    next_set_.push_back(0);
    pools_.emplace_back(sets * floats, 0.25f);
  }
  a_.assign(a_floats, 0.5f);
}

const float* BlockGemms::next_b(std::size_t i) const {
  return pools_[i].data() + next_set_[i] * set_floats(shapes_[i]);
}

const float* BlockGemms::last_c(std::size_t i) const {
  const std::size_t last = (next_set_[i] + sets_[i] - 1) % sets_[i];
  return pools_[i].data() + last * set_floats(shapes_[i]) + shapes_[i].k * shapes_[i].n;
}

void BlockGemms::run(std::size_t i) {
  const GemmShape& s = shapes_[i];
  float* b = pools_[i].data() + next_set_[i] * set_floats(s);
  next_set_[i] = (next_set_[i] + 1) % sets_[i];
  const std::size_t lda = s.trans_a ? s.m : s.k;
  math::gemm(s.trans_a, false, s.m, s.n, s.k, 1.0f, a_.data(), lda, b, s.n, 0.0f, b + s.k * s.n,
             s.n);
}

double BlockGemms::next() {
  const std::size_t i = turn_++ % shapes_.size();
  run(i);
  return shapes_[i].flops();
}

std::map<model::KernelClass, std::vector<profile::KernelPoint>> memory_points(
    const std::vector<MemoryFigure>& figures, const std::vector<double>& seconds) {
  std::map<model::KernelClass, std::vector<profile::KernelPoint>> out;
  for (std::size_t i = 0; i < figures.size() && i < seconds.size(); ++i) {
    if (!(seconds[i] > 0.0) || figures[i].kernel == MemoryFigure::Kernel::zero) continue;
    profile::KernelPoint p;
    p.bytes = Bytes(static_cast<std::uint64_t>(figures[i].model_bytes));
    p.bandwidth = Bandwidth::bytes_per_second(figures[i].model_bytes / seconds[i]);
    out[figures[i].cls].push_back(p);
  }
  for (auto& [cls, points] : out) {
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.bytes->count() < b.bytes->count(); });
  }
  return out;
}

}  // namespace tawpipe::exec::host
