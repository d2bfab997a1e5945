#include "exec/device/device_compute.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <utility>
#include <vector>

namespace tawpipe::exec::device {
namespace {

using std::int64_t;

int64_t i64(std::size_t v) {
  return static_cast<int64_t>(v);
}

/// Byte offset of element `i` of type `t`.
DevicePtr at(DevicePtr base, std::size_t i, DType t) {
  return base + static_cast<DevicePtr>(i * dtype_size(t));
}

/// Emits the block's calls on one stream; mirrors exec/math/block.cpp line by line.
class Emitter {
 public:
  explicit Emitter(const ComputeEnv& env)
      : env_(env), d_(env.dims), s_(env.scratch), act_(env.act) {}

  /// Row-major GEMM with A, B of the activation type and C of `c_type`.
  Status gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, DevicePtr a,
              std::size_t lda, DevicePtr b, std::size_t ldb, float beta, DevicePtr c,
              std::size_t ldc, DType c_type) {
    Gemm g;
    g.trans_a = ta;
    g.trans_b = tb;
    g.m = i64(m);
    g.n = i64(n);
    g.k = i64(k);
    g.alpha = 1.0f;
    g.beta = beta;
    g.a = a;
    g.b = b;
    g.c = c;
    g.lda = i64(lda);
    g.ldb = i64(ldb);
    g.ldc = i64(ldc);
    g.ab_type = act_;
    g.c_type = c_type;
    return env_.api->gemm(g, env_.stream);
  }
  Status gemm_act(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, DevicePtr a,
                  std::size_t lda, DevicePtr b, std::size_t ldb, float beta, DevicePtr c,
                  std::size_t ldc) {
    return gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, act_);
  }
  Status gemm_grad(std::size_t m, std::size_t n, std::size_t k, DevicePtr a, std::size_t lda,
                   DevicePtr b, std::size_t ldb, DevicePtr c, std::size_t ldc) {
    return gemm(true, false, m, n, k, a, lda, b, ldb, 1.0f, c, ldc, act_);
  }
  Status launch(Kernel kernel, std::initializer_list<DevicePtr> p, std::initializer_list<int64_t> s,
                std::initializer_list<float> f = {}, DType dtype2 = DType::f32) {
    KernelLaunch k;
    k.kernel = kernel;
    k.dtype = act_;
    k.dtype2 = dtype2;
    std::size_t i = 0;
    for (DevicePtr v : p)
      k.p[i++] = v;
    i = 0;
    for (int64_t v : s)
      k.s[i++] = v;
    i = 0;
    for (float v : f)
      k.f[i++] = v;
    return env_.api->launch(k, env_.stream);
  }
  Status copy(DevicePtr dst, DevicePtr src, std::size_t elements) {
    return env_.api->copy_device(dst, src, elements * dtype_size(act_), env_.stream);
  }
  Status rope(DevicePtr x, bool inverse) {
    return launch(Kernel::rope, {x},
                  {i64(d_.tokens()), i64(d_.heads), i64(d_.head_dim), i64(d_.seq_len)},
                  {d_.rope_base, inverse ? 1.0f : 0.0f});
  }
  /// Attention shape, causal (s[4] = 0), and the bytes of the `delta` piece, which is the
  /// workspace lent to cuDNN's fused attention (exec/device/attention_path.h: what the IR sizes).
  std::array<int64_t, 6> attn_shape() const {
    return {i64(d_.batch),
            i64(d_.heads),
            i64(d_.head_dim),
            i64(d_.seq_len),
            0,
            static_cast<int64_t>(attention_workspace_bytes(d_) - attention_lse_bytes(d_))};
  }

  Status layer_forward(DevicePtr w, DevicePtr x, DevicePtr y) {
    const math::LayerLayout L = math::layer_layout(d_);
    const std::size_t T = d_.tokens(), H = d_.hidden, F = d_.ffn;
    auto W = [&](std::size_t off) { return at(w, off, act_); };
    const auto a = attn_shape();
    TAWPIPE_TRY(launch(Kernel::rmsnorm_forward, {x, W(L.attn_norm), s_.h1, s_.r1}, {i64(T), i64(H)},
                       {d_.norm_eps}));
    TAWPIPE_TRY(gemm_act(false, false, T, H, H, s_.h1, H, W(L.wq), H, 0.0f, s_.q, H));
    TAWPIPE_TRY(gemm_act(false, false, T, H, H, s_.h1, H, W(L.wk), H, 0.0f, s_.k, H));
    TAWPIPE_TRY(gemm_act(false, false, T, H, H, s_.h1, H, W(L.wv), H, 0.0f, s_.v, H));
    TAWPIPE_TRY(rope(s_.q, false));
    TAWPIPE_TRY(rope(s_.k, false));
    TAWPIPE_TRY(launch(Kernel::attention_forward, {s_.q, s_.k, s_.v, s_.lse, s_.o, s_.delta},
                       {a[0], a[1], a[2], a[3], a[4], a[5]}));
    TAWPIPE_TRY(copy(s_.x2, x, T * H));
    TAWPIPE_TRY(gemm_act(false, false, T, H, H, s_.o, H, W(L.wo), H, 1.0f, s_.x2, H));
    TAWPIPE_TRY(launch(Kernel::rmsnorm_forward, {s_.x2, W(L.mlp_norm), s_.h2, s_.r2},
                       {i64(T), i64(H)}, {d_.norm_eps}));
    TAWPIPE_TRY(gemm_act(false, false, T, F, H, s_.h2, H, W(L.w_gate), F, 0.0f, s_.gate, F));
    TAWPIPE_TRY(gemm_act(false, false, T, F, H, s_.h2, H, W(L.w_up), F, 0.0f, s_.up, F));
    TAWPIPE_TRY(launch(Kernel::swiglu_forward, {s_.gate, s_.up, s_.m}, {i64(T * F)}));
    TAWPIPE_TRY(copy(y, s_.x2, T * H));
    return gemm_act(false, false, T, H, F, s_.m, F, W(L.w_down), H, 1.0f, y, H);
  }

  Status layer_backward(DevicePtr w, DevicePtr x, DevicePtr dy, DevicePtr dx, DevicePtr dw) {
    const math::LayerLayout L = math::layer_layout(d_);
    const std::size_t T = d_.tokens(), H = d_.hidden, F = d_.ffn;
    auto W = [&](std::size_t off) { return at(w, off, act_); };
    auto DW = [&](std::size_t off) { return at(dw, off, act_); };
    const auto a = attn_shape();
    // MLP: y = x2 + m Wdown.
    TAWPIPE_TRY(gemm_grad(F, H, T, s_.m, F, dy, H, DW(L.w_down), H));
    TAWPIPE_TRY(gemm_act(false, true, T, F, H, dy, H, W(L.w_down), H, 0.0f, s_.dm, F));
    TAWPIPE_TRY(
        launch(Kernel::swiglu_backward, {s_.gate, s_.up, s_.dm, s_.dgate, s_.dup}, {i64(T * F)}));
    TAWPIPE_TRY(gemm_grad(H, F, T, s_.h2, H, s_.dgate, F, DW(L.w_gate), F));
    TAWPIPE_TRY(gemm_grad(H, F, T, s_.h2, H, s_.dup, F, DW(L.w_up), F));
    TAWPIPE_TRY(gemm_act(false, true, T, H, F, s_.dgate, F, W(L.w_gate), F, 0.0f, s_.dh, H));
    TAWPIPE_TRY(gemm_act(false, true, T, H, F, s_.dup, F, W(L.w_up), F, 1.0f, s_.dh, H));
    TAWPIPE_TRY(launch(Kernel::rmsnorm_backward,
                       {s_.x2, W(L.mlp_norm), s_.r2, s_.dh, s_.dx2, DW(L.mlp_norm)},
                       {i64(T), i64(H)}));
    TAWPIPE_TRY(launch(Kernel::add, {s_.dx2, dy}, {i64(T * H)}, {}, act_));
    // Attention: x2 = x + o Wo.
    TAWPIPE_TRY(gemm_grad(H, H, T, s_.o, H, s_.dx2, H, DW(L.wo), H));
    TAWPIPE_TRY(gemm_act(false, true, T, H, H, s_.dx2, H, W(L.wo), H, 0.0f, s_.dout, H));
    TAWPIPE_TRY(launch(Kernel::attention_backward,
                       {s_.q, s_.k, s_.v, s_.o, s_.lse, s_.dout, s_.dq, s_.dk, s_.dv, s_.delta},
                       {a[0], a[1], a[2], a[3], a[4], a[5]}));
    TAWPIPE_TRY(rope(s_.dq, true));
    TAWPIPE_TRY(rope(s_.dk, true));
    TAWPIPE_TRY(gemm_grad(H, H, T, s_.h1, H, s_.dq, H, DW(L.wq), H));
    TAWPIPE_TRY(gemm_grad(H, H, T, s_.h1, H, s_.dk, H, DW(L.wk), H));
    TAWPIPE_TRY(gemm_grad(H, H, T, s_.h1, H, s_.dv, H, DW(L.wv), H));
    TAWPIPE_TRY(gemm_act(false, true, T, H, H, s_.dq, H, W(L.wq), H, 0.0f, s_.dh, H));
    TAWPIPE_TRY(gemm_act(false, true, T, H, H, s_.dk, H, W(L.wk), H, 1.0f, s_.dh, H));
    TAWPIPE_TRY(gemm_act(false, true, T, H, H, s_.dv, H, W(L.wv), H, 1.0f, s_.dh, H));
    TAWPIPE_TRY(launch(Kernel::rmsnorm_backward,
                       {x, W(L.attn_norm), s_.r1, s_.dh, dx, DW(L.attn_norm)}, {i64(T), i64(H)}));
    return launch(Kernel::add, {dx, s_.dx2}, {i64(T * H)}, {}, act_);
  }

  const ComputeEnv& env_;
  const math::Dims& d_;
  const Scratch& s_;
  DType act_;
};

}  // namespace

std::uint64_t attention_lse_bytes(const math::Dims& d) {
  return std::uint64_t{d.batch} * d.heads * d.seq_len * sizeof(float);
}

std::uint64_t attention_workspace_bytes(const math::Dims& d) {
  return 2 * attention_lse_bytes(d) + std::uint64_t{d.tokens()} * d.hidden * sizeof(float);
}

Expected<Scratch> allocate_scratch(DeviceApi& api, StreamHandle stream, const math::Dims& d,
                                   DType act, std::size_t max_layers) {
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn, V = d.vocab;
  const std::size_t a = dtype_size(act);
  Scratch s;
  std::uint64_t offset = 0;
  std::vector<std::pair<DevicePtr*, std::uint64_t>> pieces;
  auto piece = [&](DevicePtr* p, std::size_t bytes) { pieces.emplace_back(p, bytes); };
  for (DevicePtr* p : {&s.h1, &s.q, &s.k, &s.v, &s.o, &s.x2, &s.h2, &s.dh, &s.dx2, &s.dout, &s.dq,
                       &s.dk, &s.dv, &s.out, &s.grad, &s.gin})
    piece(p, T * H * a);
  for (DevicePtr* p : {&s.gate, &s.up, &s.m, &s.dm, &s.dgate, &s.dup})
    piece(p, T * F * a);
  piece(&s.r1, T * 4);
  piece(&s.r2, T * 4);
  piece(&s.lse, attention_lse_bytes(d));
  piece(&s.delta, attention_workspace_bytes(d) - attention_lse_bytes(d));
  piece(&s.inputs, std::max<std::size_t>(max_layers, 1) * T * H * a);
  piece(&s.logits, T * V * a);
  piece(&s.tokens, 2 * T * 4);
  for (auto& [p, bytes] : pieces) {
    *p = offset;  // relative for now
    offset += (bytes + 255) / 256 * 256;
  }
  auto base = api.mem_alloc(offset, stream);
  if (!base.ok()) return base.error();
  for (auto& [p, bytes] : pieces)
    *p += *base;
  s.total_bytes = offset;
  return s;
}

Status layers_forward(const ComputeEnv& env, DevicePtr w, std::size_t n, DevicePtr x, DevicePtr y) {
  Emitter e(env);
  const math::Dims& d = env.dims;
  const std::size_t TH = d.tokens() * d.hidden, phi = math::layer_layout(d).size;
  if (n == 0) return e.copy(y, x, TH);
  // Ping-pong between scratch.out and scratch.gin; the last layer writes y.
  DevicePtr cur = x;
  for (std::size_t l = 0; l < n; ++l) {
    const DevicePtr next = l + 1 == n ? y : (l % 2 == 0 ? env.scratch.out : env.scratch.gin);
    TAWPIPE_TRY(e.layer_forward(at(w, l * phi, env.act), cur, next));
    cur = next;
  }
  return Status::success();
}

Status layers_backward(const ComputeEnv& env, DevicePtr w, std::size_t n, DevicePtr x, DevicePtr dy,
                       DevicePtr dx, DevicePtr dw) {
  Emitter e(env);
  const math::Dims& d = env.dims;
  const Scratch& s = env.scratch;
  const std::size_t TH = d.tokens() * d.hidden, phi = math::layer_layout(d).size;
  if (n == 0) return e.copy(dx, dy, TH);
  auto input = [&](std::size_t l) { return at(s.inputs, l * TH, env.act); };
  TAWPIPE_TRY(e.copy(input(0), x, TH));
  for (std::size_t l = 0; l + 1 < n; ++l)
    TAWPIPE_TRY(e.layer_forward(at(w, l * phi, env.act), input(l), input(l + 1)));
  TAWPIPE_TRY(e.copy(s.grad, dy, TH));
  for (std::size_t l = n; l-- > 0;) {
    const DevicePtr wl = at(w, l * phi, env.act);
    TAWPIPE_TRY(e.layer_forward(wl, input(l), s.out));
    const DevicePtr gout = l == 0 ? dx : s.gin;
    TAWPIPE_TRY(e.layer_backward(wl, input(l), s.grad, gout, at(dw, l * phi, env.act)));
    if (l > 0) TAWPIPE_TRY(e.copy(s.grad, s.gin, TH));
  }
  return Status::success();
}

Status embedding_forward(const ComputeEnv& env, DevicePtr w_emb, DevicePtr x) {
  Emitter e(env);
  const math::EmbeddingLayout E = math::embedding_layout(env.dims);
  return e.launch(Kernel::embedding_forward, {at(w_emb, E.token, env.act), env.scratch.tokens, x},
                  {i64(env.dims.tokens()), i64(env.dims.hidden)});
}

Status embedding_backward(const ComputeEnv& env, DevicePtr dx, DevicePtr dw_emb) {
  Emitter e(env);
  const math::EmbeddingLayout E = math::embedding_layout(env.dims);
  return e.launch(Kernel::embedding_backward,
                  {env.scratch.tokens, dx, at(dw_emb, E.token, env.act)},
                  {i64(env.dims.tokens()), i64(env.dims.hidden)});
}

Status head_forward_backward(const ComputeEnv& env, DevicePtr w_emb, DevicePtr x, float scale,
                             DevicePtr dx, DevicePtr dw_emb, DevicePtr loss) {
  Emitter e(env);
  const math::Dims& d = env.dims;
  const Scratch& s = env.scratch;
  const math::EmbeddingLayout E = math::embedding_layout(d);
  const std::size_t T = d.tokens(), H = d.hidden, V = d.vocab;
  const DevicePtr targets = at(s.tokens, T, DType::i32);
  const DevicePtr head = at(w_emb, E.lm_head, env.act);
  TAWPIPE_TRY(e.launch(Kernel::rmsnorm_forward, {x, at(w_emb, E.final_norm, env.act), s.h1, s.r1},
                       {i64(T), i64(H)}, {d.norm_eps}));
  TAWPIPE_TRY(e.gemm_act(false, true, T, V, H, s.h1, H, head, H, 0.0f, s.logits, V));
  TAWPIPE_TRY(
      e.launch(Kernel::cross_entropy, {s.logits, targets, loss}, {i64(T), i64(V)}, {scale}));
  TAWPIPE_TRY(e.gemm_grad(V, H, T, s.logits, V, s.h1, H, at(dw_emb, E.lm_head, env.act), H));
  TAWPIPE_TRY(e.gemm_act(false, false, T, H, V, s.logits, V, head, H, 0.0f, s.dh, H));
  return e.launch(
      Kernel::rmsnorm_backward,
      {x, at(w_emb, E.final_norm, env.act), s.r1, s.dh, dx, at(dw_emb, E.final_norm, env.act)},
      {i64(T), i64(H)});
}

}  // namespace tawpipe::exec::device
