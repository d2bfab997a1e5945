#include "exec/host/compute_ops.h"

#include "common/ir/zeroing.h"

#include <algorithm>
#include <string>
#include <vector>

#include "exec/math/adamw.h"
#include "exec/math/block.h"
#include "exec/math/init.h"

namespace tawpipe::exec::host {
namespace {

using ir::BufferRole;

bool is_weight(BufferRole r) {
  return r == BufferRole::weights || r == BufferRole::weight_staging ||
         r == BufferRole::master_weights;
}
bool is_grad(BufferRole r) {
  return r == BufferRole::gradient || r == BufferRole::gradient_staging;
}

/// The op's operands, classified by role.
struct Operands {
  ir::BufferId weights = ir::kNone, act_in = ir::kNone, agrad_in = ir::kNone, grad_in = ir::kNone,
               state = ir::kNone, act_out = ir::kNone, agrad_out = ir::kNone, grad_out = ir::kNone;
  std::vector<ir::BufferId> weights_out;
};

Operands classify(const ir::RankProgram& rp, const ir::Op& op) {
  Operands o;
  auto role = [&](ir::BufferId b) { return rp.buffers[static_cast<std::size_t>(b)].role; };
  for (ir::BufferId b : ir::reads(rp, op)) {
    const BufferRole r = role(b);
    if (is_weight(r) && o.weights == ir::kNone) o.weights = b;
    if (r == BufferRole::activation && o.act_in == ir::kNone) o.act_in = b;
    if (r == BufferRole::activation_grad && o.agrad_in == ir::kNone) o.agrad_in = b;
    if (is_grad(r) && o.grad_in == ir::kNone) o.grad_in = b;
    if (r == BufferRole::optimizer_state) o.state = b;
  }
  for (ir::BufferId b : ir::writes(rp, op)) {
    const BufferRole r = role(b);
    if (r == BufferRole::activation && o.act_out == ir::kNone) o.act_out = b;
    if (r == BufferRole::activation_grad && o.agrad_out == ir::kNone) o.agrad_out = b;
    if (is_grad(r) && o.grad_out == ir::kNone) o.grad_out = b;
    if (r == BufferRole::optimizer_state) o.state = b;
    if (is_weight(r)) o.weights_out.push_back(b);
  }
  return o;
}

}  // namespace

std::size_t compute_overwrites(const ir::RankProgram& rp, const ir::Op& op, ir::BufferId b,
                               const math::Dims& d) {
  // The kernels write their activation (-gradient) output whole: tokens x H scalars.
  return b != ir::kNone && ir::whole_output(rp, op) == b ? d.tokens() * d.hidden : 0;
}

Expected<double> run_compute(const ir::Program& program, ir::Rank rank, ir::OpIndex index,
                             const ComputeContext& ctx, const BufferAccess& buffer) {
  const ir::RankProgram& rp = program.ranks[static_cast<std::size_t>(rank)];
  const ir::Op& op = rp.ops[static_cast<std::size_t>(index)];
  const math::Dims& d = ctx.dims;
  const Operands o = classify(rp, op);
  const std::string where = "rank " + std::to_string(rank) + " op " + std::to_string(index) + " (" +
                            ir::name(op.compute) + ")";
  // Fetches an operand with at least `need` scalars.
  auto get = [&](ir::BufferId b, std::size_t need, const char* what) -> Expected<float*> {
    if (b == ir::kNone) return make_error(where + ": no " + std::string(what) + " operand");
    auto span = buffer(b);
    if (!span.ok()) return make_error(where + ": " + span.error().message);
    if (span->size() < need) {
      return make_error(where + ": " + what + " operand '" +
                        rp.buffers[static_cast<std::size_t>(b)].name + "' holds " +
                        std::to_string(span->size()) + " scalars, needs " + std::to_string(need));
    }
    return span->data();
  };
#define TAWPIPE_GET(var, id, need, what)       \
  auto var##_or = get(id, need, what);         \
  if (!var##_or.ok()) return var##_or.error(); \
  float* var = *var##_or

  const std::size_t TH = d.tokens() * d.hidden;
  const std::size_t nlayers =
      op.layer_end > op.layer_begin ? static_cast<std::size_t>(op.layer_end - op.layer_begin) : 0;
  const std::size_t wsize = math::block_size(d, op.layer_begin, op.layer_end);
  switch (op.compute) {
    case ir::ComputeKind::embedding_forward: {
      TAWPIPE_GET(w, o.weights, wsize, "weight");
      TAWPIPE_GET(x, o.act_out, TH, "activation output");
      const auto mb = math::micro_batch_tokens(d, ctx.seed, ctx.step, op.sample);
      math::embedding_forward(d, w, mb.inputs.data(), x);
      return 0.0;
    }
    case ir::ComputeKind::forward: {
      TAWPIPE_GET(w, o.weights, wsize, "weight");
      TAWPIPE_GET(x, o.act_in, TH, "activation input");
      TAWPIPE_GET(y, o.act_out, TH, "activation output");
      math::layers_forward(d, w, nlayers, x, y);
      return 0.0;
    }
    case ir::ComputeKind::backward:
    case ir::ComputeKind::backward_input:     // B of a split backward: no weight gradient
    case ir::ComputeKind::backward_weight: {  // W: no input gradient
      TAWPIPE_GET(w, o.weights, wsize, "weight");
      TAWPIPE_GET(x, o.act_in, TH, "activation input");
      TAWPIPE_GET(dy, o.agrad_in, TH, "activation-gradient input");
      float* dx = nullptr;
      float* dw = nullptr;
      if (op.compute != ir::ComputeKind::backward_weight) {
        TAWPIPE_GET(agrad, o.agrad_out, TH, "activation-gradient output");
        dx = agrad;
      }
      if (op.compute != ir::ComputeKind::backward_input) {
        TAWPIPE_GET(grad, o.grad_out, wsize, "gradient");
        dw = grad;
      }
      math::layers_backward(d, w, nlayers, x, dy, dx, dw);
      return 0.0;
    }
    case ir::ComputeKind::head: {
      TAWPIPE_GET(w, o.weights, wsize, "weight");
      TAWPIPE_GET(x, o.act_in, TH, "activation input");
      TAWPIPE_GET(dx, o.agrad_out, TH, "activation-gradient output");
      TAWPIPE_GET(dw, o.grad_out, wsize, "gradient");
      const auto mb = math::micro_batch_tokens(d, ctx.seed, ctx.step, op.sample);
      return math::head_forward_backward(d, w, x, mb.targets.data(), ctx.grad_scale, dx, dw);
    }
    case ir::ComputeKind::embedding_backward: {
      TAWPIPE_GET(dx, o.agrad_in, TH, "activation-gradient input");
      TAWPIPE_GET(dw, o.grad_out, wsize, "gradient");
      const auto mb = math::micro_batch_tokens(d, ctx.seed, ctx.step, op.sample);
      math::embedding_backward(d, mb.inputs.data(), dx, dw);
      return 0.0;
    }
    case ir::ComputeKind::accumulate: {
      const auto& reads = ir::reads(rp, op);
      const auto& writes = ir::writes(rp, op);
      if (reads.empty() || writes.empty()) return make_error(where + ": needs a read and a write");
      auto src = buffer(reads[0]);
      auto dst = buffer(writes[0]);
      if (!src.ok()) return make_error(where + ": " + src.error().message);
      if (!dst.ok()) return make_error(where + ": " + dst.error().message);
      const std::size_t n = std::min(src->size(), dst->size());
      for (std::size_t i = 0; i < n; ++i)
        (*dst)[i] += (*src)[i];
      return 0.0;
    }
    case ir::ComputeKind::optimizer: {
      auto grad = buffer(o.grad_in);
      if (o.grad_in == ir::kNone || !grad.ok()) return make_error(where + ": no gradient operand");
      const std::size_t n = grad->size();
      TAWPIPE_GET(state, o.state, 2 * n, "optimizer-state");
      if (o.weights_out.empty()) return make_error(where + ": no weight operand to update");
      // The first weight operand is stepped; the others (master copy) receive the same values,
      // which in fp32 is exactly what a master/compute pair holds.
      TAWPIPE_GET(w, o.weights_out[0], n, "weight");
      math::adamw_step(ctx.optimizer, ctx.step + 1, grad->data(), w, state, state + n, n);
      for (std::size_t i = 1; i < o.weights_out.size(); ++i) {
        TAWPIPE_GET(copy, o.weights_out[i], n, "weight");
        std::copy(w, w + n, copy);
      }
      return 0.0;
    }
  }
#undef TAWPIPE_GET
  return make_error(where + ": unknown compute kind");
}

}  // namespace tawpipe::exec::host
