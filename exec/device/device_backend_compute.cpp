#include <algorithm>
#include <vector>

#include "exec/device/device_backend_impl.h"
#include "exec/math/init.h"

// The compute ops of DeviceBackend: operands found by role (as exec/host/compute_ops.cpp does),
// then the block's calls from device_compute.h.
namespace tawpipe::exec::device {

using ir::BufferRole;

Status DeviceBackend::Impl::post_compute(ir::OpIndex i, const ir::Op& op) {
  const StreamHandle s = streams.at(op.stream);
  // Operands by role, as exec/host/compute_ops.cpp finds them.
  ir::BufferId w = ir::kNone, act_in = ir::kNone, agrad_in = ir::kNone, grad_in = ir::kNone,
               state = ir::kNone, act_out = ir::kNone, agrad_out = ir::kNone, grad_out = ir::kNone;
  std::vector<ir::BufferId> weights_out;
  auto role = [&](ir::BufferId b) { return rp->buffers[static_cast<std::size_t>(b)].role; };
  auto first = [](ir::BufferId& slot, ir::BufferId b) {
    if (slot == ir::kNone) slot = b;
  };
  for (ir::BufferId b : ir::reads(*rp, op)) {
    const BufferRole r = role(b);
    if (is_weight_role(r)) first(w, b);
    if (r == BufferRole::activation) first(act_in, b);
    if (r == BufferRole::activation_grad) first(agrad_in, b);
    if (is_grad_role(r)) first(grad_in, b);
    if (r == BufferRole::optimizer_state) state = b;
  }
  for (ir::BufferId b : ir::writes(*rp, op)) {
    const BufferRole r = role(b);
    if (r == BufferRole::activation) first(act_out, b);
    if (r == BufferRole::activation_grad) first(agrad_out, b);
    if (is_grad_role(r)) first(grad_out, b);
    if (r == BufferRole::optimizer_state) state = b;
    if (is_weight_role(r)) weights_out.push_back(b);
  }
  const std::uint64_t TH = dims.tokens() * dims.hidden;
  const std::size_t nlayers =
      op.layer_end > op.layer_begin ? static_cast<std::size_t>(op.layer_end - op.layer_begin) : 0;
  const std::uint64_t wsize = math::block_size(dims, op.layer_begin, op.layer_end);
  const std::optional<ComputeEnv>& env = envs[op.stream];
  // The op's inputs and targets, uploaded for the whole iteration in begin_iteration: a
  // stream-ordered device copy, no host synchronisation.
  auto tokens = [&](bool) -> Status {
    const std::int64_t at = tokens_at[static_cast<std::size_t>(i)];
    if (at < 0) return make_error(where(i) + "no token slot");
    return api.copy_device(env->scratch.tokens, tokens_dev + static_cast<DevicePtr>(at) * 4,
                           2 * TH / dims.hidden * 4, s);
  };
#define TAWPIPE_OPERAND(var, id, need, what)   \
  auto var##_or = operand(i, id, need, what);  \
  if (!var##_or.ok()) return var##_or.error(); \
  const DevicePtr var = *var##_or

  switch (op.compute) {
    case ir::ComputeKind::embedding_forward: {
      TAWPIPE_OPERAND(wp, w, wsize, "weight");
      TAWPIPE_OPERAND(x, act_out, TH, "activation output");
      TAWPIPE_TRY(tokens(false));
      return embedding_forward(*env, wp, x);
    }
    case ir::ComputeKind::forward: {
      TAWPIPE_OPERAND(wp, w, wsize, "weight");
      TAWPIPE_OPERAND(x, act_in, TH, "activation input");
      TAWPIPE_OPERAND(y, act_out, TH, "activation output");
      return layers_forward(*env, wp, nlayers, x, y);
    }
    case ir::ComputeKind::backward: {
      TAWPIPE_OPERAND(wp, w, wsize, "weight");
      TAWPIPE_OPERAND(x, act_in, TH, "activation input");
      TAWPIPE_OPERAND(dy, agrad_in, TH, "activation-gradient input");
      TAWPIPE_OPERAND(dx, agrad_out, TH, "activation-gradient output");
      TAWPIPE_OPERAND(dw, grad_out, wsize, "gradient");
      return layers_backward(*env, wp, nlayers, x, dy, dx, dw);
    }
    case ir::ComputeKind::backward_input:
    case ir::ComputeKind::backward_weight:
      return make_error(where(i) + "the device backend does not run the split backward (" +
                        ir::name(op.compute) +
                        ") yet; run zero-bubble schedules on the host backend");
    case ir::ComputeKind::head: {
      TAWPIPE_OPERAND(wp, w, wsize, "weight");
      TAWPIPE_OPERAND(x, act_in, TH, "activation input");
      TAWPIPE_OPERAND(dx, agrad_out, TH, "activation-gradient output");
      TAWPIPE_OPERAND(dw, grad_out, wsize, "gradient");
      TAWPIPE_TRY(tokens(true));
      return head_forward_backward(*env, wp, x, grad_scale, dx, dw, loss);
    }
    case ir::ComputeKind::embedding_backward: {
      TAWPIPE_OPERAND(dx, agrad_in, TH, "activation-gradient input");
      TAWPIPE_OPERAND(dw, grad_out, wsize, "gradient");
      TAWPIPE_TRY(tokens(false));
      return embedding_backward(*env, dx, dw);
    }
    case ir::ComputeKind::accumulate: {
      const auto reads = ir::reads(*rp, op);
      const auto writes = ir::writes(*rp, op);
      if (reads.empty() || writes.empty()) return make_error(where(i) + "needs a read and a write");
      TAWPIPE_OPERAND(src, reads[0], 0, "accumulate source");
      TAWPIPE_OPERAND(dst, writes[0], 0, "accumulate target");
      KernelLaunch k;
      k.kernel = Kernel::add;
      k.dtype = types[static_cast<std::size_t>(writes[0])];
      k.dtype2 = types[static_cast<std::size_t>(reads[0])];
      k.p[0] = dst;
      k.p[1] = src;
      k.s[0] = static_cast<std::int64_t>(std::min(elements_of(reads[0]), elements_of(writes[0])));
      return api.launch(k, s);
    }
    case ir::ComputeKind::optimizer: {
      // Step the fp32 copy (the master, or f32 weights), then cast it into the others. Its
      // length is the block's (or piece's) parameter count; the gradient may be bf16.
      ir::BufferId primary = ir::kNone;
      for (ir::BufferId b : weights_out)
        if (types[static_cast<std::size_t>(b)] == DType::f32 &&
            (primary == ir::kNone || role(b) == BufferRole::master_weights))
          primary = b;
      if (primary == ir::kNone)
        return make_error(where(i) + "no fp32 weight operand (master copy) to update");
      const std::uint64_t n = elements_of(primary);
      TAWPIPE_OPERAND(master, primary, n, "weight");
      TAWPIPE_OPERAND(g, grad_in, n, "gradient");
      TAWPIPE_OPERAND(st, state, 2 * n, "optimizer-state");
      KernelLaunch k;
      k.kernel = Kernel::adamw;
      k.dtype2 = types[static_cast<std::size_t>(grad_in)];
      k.p = {g, master, st, st + n * 4};
      k.s[0] = static_cast<std::int64_t>(n);
      const model::AdamWConfig& c = options.optimizer;
      k.f = {static_cast<float>(c.lr),           static_cast<float>(c.beta1),
             static_cast<float>(c.beta2),        static_cast<float>(c.eps),
             static_cast<float>(c.weight_decay), static_cast<float>(step + 1)};
      TAWPIPE_TRY(api.launch(k, s));
      for (ir::BufferId b : weights_out) {
        if (b == primary) continue;
        TAWPIPE_OPERAND(dst, b, n, "weight");
        KernelLaunch cast;
        cast.kernel = Kernel::cast;
        cast.dtype = types[static_cast<std::size_t>(b)];
        cast.dtype2 = DType::f32;
        cast.p[0] = dst;
        cast.p[1] = master;
        cast.s[0] = static_cast<std::int64_t>(n);
        TAWPIPE_TRY(api.launch(cast, s));
      }
      return Status::success();
    }
  }
#undef TAWPIPE_OPERAND
  return make_error(where(i) + "unknown compute kind");
}

}  // namespace tawpipe::exec::device
