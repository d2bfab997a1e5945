#include "exec/math/block.h"

#include <algorithm>
#include <vector>

#include "common/aligned.h"
#include "exec/math/attention.h"
#include "exec/math/gemm.h"
#include "exec/math/loss.h"
#include "exec/math/mlp.h"
#include "exec/math/norm.h"

namespace tawpipe::exec::math {
namespace {

using Vec = AlignedVector;  // at a cache line and page (common/aligned.h)

/// `v` holding at least n scalars. Workspaces only grow: after the first call at a shape, no
/// call allocates, zero-fills or page-faults (a fresh std::vector would do all three per call,
/// which on the host backend cost as much as the GEMMs: the kernels overwrite these buffers).
float* at_least(Vec& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

/// Everything one layer's forward computes that its backward needs.
struct LayerCache {
  float *h1, *r1, *q, *k, *v, *probs, *o, *x2, *h2, *r2, *gate, *up, *m;
};

/// Storage behind one LayerCache.
struct CacheStore {
  Vec h1, r1, q, k, v, probs, o, x2, h2, r2, gate, up, m;

  LayerCache cache(const Dims& d) {
    const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
    return {at_least(h1, T * H),   at_least(r1, T),
            at_least(q, T * H),    at_least(k, T * H),
            at_least(v, T * H),    at_least(probs, d.batch * d.heads * d.seq_len * d.seq_len),
            at_least(o, T * H),    at_least(x2, T * H),
            at_least(h2, T * H),   at_least(r2, T),
            at_least(gate, T * F), at_least(up, T * F),
            at_least(m, T * F)};
  }
};

/// One thread's scratch for the layer kernels (the host backend runs each IR stream on its own
/// thread, and calibration on the caller's): like a framework's caching allocator and
/// uninitialised workspaces, it is reused across calls and never cleared where the kernels
/// overwrite it.
struct Workspace {
  /// One cache per layer of the largest range seen: layers_backward recomputes the range's
  /// forward once and keeps every layer's intermediates (what checkpointing a block does);
  /// layers_forward and the head use the first.
  std::vector<CacheStore> layers;
  Vec dm, dgate, dup, dh, dx2, dout, dq, dk, dv, norm_grad;
  Vec ping, pong, out, grad, gin;
  std::vector<Vec> inputs;  ///< layers_backward: the recomputed input of every layer

  CacheStore& store(std::size_t layer) {
    if (layers.size() <= layer) layers.resize(layer + 1);
    return layers[layer];
  }
  LayerCache cache(const Dims& d, std::size_t layer = 0) { return store(layer).cache(d); }
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

void layer_forward(const Dims& d, const float* w, const float* x, float* y, const LayerCache& c) {
  const LayerLayout L = layer_layout(d);
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
  rmsnorm_forward(x, w + L.attn_norm, T, H, d.norm_eps, c.h1, c.r1);
  gemm(false, false, T, H, H, 1.0f, c.h1, H, w + L.wq, H, 0.0f, c.q, H);
  gemm(false, false, T, H, H, 1.0f, c.h1, H, w + L.wk, H, 0.0f, c.k, H);
  gemm(false, false, T, H, H, 1.0f, c.h1, H, w + L.wv, H, 0.0f, c.v, H);
  rope(d, c.q, false);
  rope(d, c.k, false);
  attention_forward(d, c.q, c.k, c.v, c.probs, c.o);
  std::copy(x, x + T * H, c.x2);
  gemm(false, false, T, H, H, 1.0f, c.o, H, w + L.wo, H, 1.0f, c.x2, H);
  rmsnorm_forward(c.x2, w + L.mlp_norm, T, H, d.norm_eps, c.h2, c.r2);
  gemm(false, false, T, F, H, 1.0f, c.h2, H, w + L.w_gate, F, 0.0f, c.gate, F);
  gemm(false, false, T, F, H, 1.0f, c.h2, H, w + L.w_up, F, 0.0f, c.up, F);
  swiglu_forward(c.gate, c.up, T * F, c.m);
  std::copy(c.x2, c.x2 + T * H, y);
  gemm(false, false, T, H, F, 1.0f, c.m, F, w + L.w_down, H, 1.0f, y, H);
}

/// Backward of one layer whose forward filled `c` from input x. dw == nullptr skips the weight
/// gradient (B of a split backward): the norms' weight gradients go to a scratch buffer and
/// the weight GEMMs are not run. The input gradient does not depend on dw, so B's dx and W's dw
/// are bit-identical to the fused call's.
void layer_backward(const Dims& d, const float* w, const float* x, const float* dy, float* dx,
                    float* dw, const LayerCache& c, Workspace& ws) {
  const LayerLayout L = layer_layout(d);
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
  const bool weights = dw != nullptr;
  float* g_attn_norm = weights ? dw + L.attn_norm : at_least(ws.norm_grad, 2 * H);
  float* g_mlp_norm = weights ? dw + L.mlp_norm : g_attn_norm + H;
  if (!weights) std::fill(g_attn_norm, g_attn_norm + 2 * H, 0.0f);  // discarded sums
  float* dm = at_least(ws.dm, T * F);
  float* dgate = at_least(ws.dgate, T * F);
  float* dup = at_least(ws.dup, T * F);
  float* dh = at_least(ws.dh, T * H);
  float* dx2 = at_least(ws.dx2, T * H);
  float* dout = at_least(ws.dout, T * H);
  float* dq = at_least(ws.dq, T * H);
  float* dk = at_least(ws.dk, T * H);
  float* dv = at_least(ws.dv, T * H);
  // MLP: y = x2 + m Wdown.
  if (weights) gemm(true, false, F, H, T, 1.0f, c.m, F, dy, H, 1.0f, dw + L.w_down, H);
  gemm(false, true, T, F, H, 1.0f, dy, H, w + L.w_down, H, 0.0f, dm, F);
  swiglu_backward(c.gate, c.up, dm, T * F, dgate, dup);
  if (weights) gemm(true, false, H, F, T, 1.0f, c.h2, H, dgate, F, 1.0f, dw + L.w_gate, F);
  if (weights) gemm(true, false, H, F, T, 1.0f, c.h2, H, dup, F, 1.0f, dw + L.w_up, F);
  gemm(false, true, T, H, F, 1.0f, dgate, F, w + L.w_gate, F, 0.0f, dh, H);
  gemm(false, true, T, H, F, 1.0f, dup, F, w + L.w_up, F, 1.0f, dh, H);
  rmsnorm_backward(c.x2, w + L.mlp_norm, c.r2, dh, T, H, dx2, g_mlp_norm);
  for (std::size_t i = 0; i < T * H; ++i)
    dx2[i] += dy[i];
  // Attention: x2 = x + o Wo.
  if (weights) gemm(true, false, H, H, T, 1.0f, c.o, H, dx2, H, 1.0f, dw + L.wo, H);
  gemm(false, true, T, H, H, 1.0f, dx2, H, w + L.wo, H, 0.0f, dout, H);
  attention_backward(d, c.q, c.k, c.v, c.probs, dout, dq, dk, dv);
  rope(d, dq, true);
  rope(d, dk, true);
  if (weights) gemm(true, false, H, H, T, 1.0f, c.h1, H, dq, H, 1.0f, dw + L.wq, H);
  if (weights) gemm(true, false, H, H, T, 1.0f, c.h1, H, dk, H, 1.0f, dw + L.wk, H);
  if (weights) gemm(true, false, H, H, T, 1.0f, c.h1, H, dv, H, 1.0f, dw + L.wv, H);
  gemm(false, true, T, H, H, 1.0f, dq, H, w + L.wq, H, 0.0f, dh, H);
  gemm(false, true, T, H, H, 1.0f, dk, H, w + L.wk, H, 1.0f, dh, H);
  gemm(false, true, T, H, H, 1.0f, dv, H, w + L.wv, H, 1.0f, dh, H);
  rmsnorm_backward(x, w + L.attn_norm, c.r1, dh, T, H, dx, g_attn_norm);
  for (std::size_t i = 0; i < T * H; ++i)
    dx[i] += dx2[i];
}

}  // namespace

void layers_forward(const Dims& d, const float* w, std::size_t n, const float* x, float* y) {
  const std::size_t TH = d.tokens() * d.hidden, phi = layer_layout(d).size;
  Workspace& ws = workspace();
  const LayerCache cache = ws.cache(d);
  float* buf[2] = {at_least(ws.ping, TH), at_least(ws.pong, TH)};
  const float* cur = x;
  for (std::size_t l = 0; l < n; ++l) {
    float* next = l + 1 == n ? y : buf[l % 2];
    layer_forward(d, w + l * phi, cur, next, cache);
    cur = next;
  }
  if (n == 0) std::copy(x, x + TH, y);
}

void layers_backward(const Dims& d, const float* w, std::size_t n, const float* x, const float* dy,
                     float* dx, float* dw) {
  const std::size_t TH = d.tokens() * d.hidden, phi = layer_layout(d).size;
  Workspace& ws = workspace();
  // Recompute the range's forward once from its checkpoint x, keeping every layer's input and
  // intermediates (n layer forwards, as the cost model's full recomputation counts; keeping
  // only the inputs and recomputing each layer again before its backward cost 2n - 1).
  if (ws.inputs.size() < n) ws.inputs.resize(n);
  std::vector<const float*> inputs(n, x);
  if (n > 0) ws.store(n - 1);  // grow once: the caches' pointers stay valid below
  std::vector<LayerCache> caches;
  caches.reserve(n);
  for (std::size_t l = 0; l < n; ++l)
    caches.push_back(ws.cache(d, l));
  float* out = at_least(ws.out, TH);
  for (std::size_t l = 0; l < n; ++l) {
    float* next = l + 1 < n ? at_least(ws.inputs[l + 1], TH) : out;
    layer_forward(d, w + l * phi, inputs[l], next, caches[l]);
    if (l + 1 < n) inputs[l + 1] = next;
  }
  float* buf[2] = {at_least(ws.grad, TH), at_least(ws.gin, TH)};
  const float* grad = dy;
  for (std::size_t l = n; l-- > 0;) {
    float* gin = buf[l % 2];
    layer_backward(d, w + l * phi, inputs[l], grad, gin, dw != nullptr ? dw + l * phi : nullptr,
                   caches[l], ws);
    grad = gin;
  }
  // dx may alias dy (an in-place activation gradient): written last, from the workspace.
  if (dx != nullptr) std::copy(grad, grad + TH, dx);
}

void embedding_forward(const Dims& d, const float* w_emb, const std::int32_t* tokens, float* x) {
  const EmbeddingLayout E = embedding_layout(d);
  for (std::size_t t = 0; t < d.tokens(); ++t) {
    const float* row = w_emb + E.token + static_cast<std::size_t>(tokens[t]) * d.hidden;
    std::copy(row, row + d.hidden, x + t * d.hidden);
  }
}

void embedding_backward(const Dims& d, const std::int32_t* tokens, const float* dx, float* dw_emb) {
  const EmbeddingLayout E = embedding_layout(d);
  for (std::size_t t = 0; t < d.tokens(); ++t) {
    float* row = dw_emb + E.token + static_cast<std::size_t>(tokens[t]) * d.hidden;
    for (std::size_t i = 0; i < d.hidden; ++i)
      row[i] += dx[t * d.hidden + i];
  }
}

double head_forward_backward(const Dims& d, const float* w_emb, const float* x,
                             const std::int32_t* targets, float scale, float* dx, float* dw_emb) {
  const EmbeddingLayout E = embedding_layout(d);
  const std::size_t T = d.tokens(), H = d.hidden, V = d.vocab;
  Workspace& ws = workspace();  // h, r, logits and dh are overwritten before use
  CacheStore& c = ws.store(0);
  float* h = at_least(c.h1, T * H);
  float* r = at_least(c.r1, T);
  float* logits = at_least(c.gate, T * V);
  float* dh = at_least(ws.dh, T * H);
  rmsnorm_forward(x, w_emb + E.final_norm, T, H, d.norm_eps, h, r);
  gemm(false, true, T, V, H, 1.0f, h, H, w_emb + E.lm_head, H, 0.0f, logits, V);
  const double loss = softmax_cross_entropy(logits, targets, T, V, scale, logits);
  // logits now holds dlogits. dW_head += dlogits^T h; dh = dlogits W_head.
  gemm(true, false, V, H, T, 1.0f, logits, V, h, H, 1.0f, dw_emb + E.lm_head, H);
  gemm(false, false, T, H, V, 1.0f, logits, V, w_emb + E.lm_head, H, 0.0f, dh, H);
  rmsnorm_backward(x, w_emb + E.final_norm, r, dh, T, H, dx, dw_emb + E.final_norm);
  return loss;
}

double head_loss(const Dims& d, const float* w_emb, const float* x, const std::int32_t* targets) {
  const EmbeddingLayout E = embedding_layout(d);
  Vec dx(d.tokens() * d.hidden), dw(E.size);
  return head_forward_backward(d, w_emb, x, targets, 1.0f, dx.data(), dw.data());
}

}  // namespace tawpipe::exec::math
