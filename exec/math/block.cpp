#include "exec/math/block.h"

#include <algorithm>
#include <vector>

#include "exec/math/attention.h"
#include "exec/math/gemm.h"
#include "exec/math/loss.h"
#include "exec/math/mlp.h"
#include "exec/math/norm.h"

namespace tawpipe::exec::math {
namespace {

using Vec = std::vector<float>;

/// Everything one layer's forward computes that its backward needs.
struct LayerCache {
  Vec h1, r1, q, k, v, probs, o, x2, h2, r2, gate, up, m;
  explicit LayerCache(const Dims& d) {
    const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
    h1.resize(T * H);
    r1.resize(T);
    q.resize(T * H);
    k.resize(T * H);
    v.resize(T * H);
    probs.resize(d.batch * d.heads * d.seq_len * d.seq_len);
    o.resize(T * H);
    x2.resize(T * H);
    h2.resize(T * H);
    r2.resize(T);
    gate.resize(T * F);
    up.resize(T * F);
    m.resize(T * F);
  }
};

void layer_forward(const Dims& d, const float* w, const float* x, float* y, LayerCache& c) {
  const LayerLayout L = layer_layout(d);
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
  rmsnorm_forward(x, w + L.attn_norm, T, H, d.norm_eps, c.h1.data(), c.r1.data());
  gemm(false, false, T, H, H, 1.0f, c.h1.data(), H, w + L.wq, H, 0.0f, c.q.data(), H);
  gemm(false, false, T, H, H, 1.0f, c.h1.data(), H, w + L.wk, H, 0.0f, c.k.data(), H);
  gemm(false, false, T, H, H, 1.0f, c.h1.data(), H, w + L.wv, H, 0.0f, c.v.data(), H);
  rope(d, c.q.data(), false);
  rope(d, c.k.data(), false);
  attention_forward(d, c.q.data(), c.k.data(), c.v.data(), c.probs.data(), c.o.data());
  std::copy(x, x + T * H, c.x2.begin());
  gemm(false, false, T, H, H, 1.0f, c.o.data(), H, w + L.wo, H, 1.0f, c.x2.data(), H);
  rmsnorm_forward(c.x2.data(), w + L.mlp_norm, T, H, d.norm_eps, c.h2.data(), c.r2.data());
  gemm(false, false, T, F, H, 1.0f, c.h2.data(), H, w + L.w_gate, F, 0.0f, c.gate.data(), F);
  gemm(false, false, T, F, H, 1.0f, c.h2.data(), H, w + L.w_up, F, 0.0f, c.up.data(), F);
  swiglu_forward(c.gate.data(), c.up.data(), T * F, c.m.data());
  std::copy(c.x2.begin(), c.x2.end(), y);
  gemm(false, false, T, H, F, 1.0f, c.m.data(), F, w + L.w_down, H, 1.0f, y, H);
}

/// Backward of one layer whose forward filled `c` from input x. dw == nullptr skips the weight
/// gradient (B of a split backward): the norms' weight gradients go to a scratch buffer and
/// the weight GEMMs are not run. The input gradient does not depend on dw, so B's dx and W's dw
/// are bit-identical to the fused call's.
void layer_backward(const Dims& d, const float* w, const float* x, const float* dy, float* dx,
                    float* dw, const LayerCache& c) {
  const LayerLayout L = layer_layout(d);
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
  Vec norm_scratch;
  const bool weights = dw != nullptr;
  if (!weights) norm_scratch.assign(L.size, 0.0f);
  float* g = weights ? dw : norm_scratch.data();
  // MLP: y = x2 + m Wdown.
  if (weights) gemm(true, false, F, H, T, 1.0f, c.m.data(), F, dy, H, 1.0f, dw + L.w_down, H);
  Vec dm(T * F), dgate(T * F), dup(T * F);
  gemm(false, true, T, F, H, 1.0f, dy, H, w + L.w_down, H, 0.0f, dm.data(), F);
  swiglu_backward(c.gate.data(), c.up.data(), dm.data(), T * F, dgate.data(), dup.data());
  if (weights)
    gemm(true, false, H, F, T, 1.0f, c.h2.data(), H, dgate.data(), F, 1.0f, dw + L.w_gate, F);
  if (weights)
    gemm(true, false, H, F, T, 1.0f, c.h2.data(), H, dup.data(), F, 1.0f, dw + L.w_up, F);
  Vec dh(T * H), dx2(T * H);
  gemm(false, true, T, H, F, 1.0f, dgate.data(), F, w + L.w_gate, F, 0.0f, dh.data(), H);
  gemm(false, true, T, H, F, 1.0f, dup.data(), F, w + L.w_up, F, 1.0f, dh.data(), H);
  rmsnorm_backward(c.x2.data(), w + L.mlp_norm, c.r2.data(), dh.data(), T, H, dx2.data(),
                   g + L.mlp_norm);
  for (std::size_t i = 0; i < T * H; ++i)
    dx2[i] += dy[i];
  // Attention: x2 = x + o Wo.
  if (weights) gemm(true, false, H, H, T, 1.0f, c.o.data(), H, dx2.data(), H, 1.0f, dw + L.wo, H);
  Vec dout(T * H), dq(T * H), dk(T * H), dv(T * H);
  gemm(false, true, T, H, H, 1.0f, dx2.data(), H, w + L.wo, H, 0.0f, dout.data(), H);
  attention_backward(d, c.q.data(), c.k.data(), c.v.data(), c.probs.data(), dout.data(), dq.data(),
                     dk.data(), dv.data());
  rope(d, dq.data(), true);
  rope(d, dk.data(), true);
  if (weights) gemm(true, false, H, H, T, 1.0f, c.h1.data(), H, dq.data(), H, 1.0f, dw + L.wq, H);
  if (weights) gemm(true, false, H, H, T, 1.0f, c.h1.data(), H, dk.data(), H, 1.0f, dw + L.wk, H);
  if (weights) gemm(true, false, H, H, T, 1.0f, c.h1.data(), H, dv.data(), H, 1.0f, dw + L.wv, H);
  gemm(false, true, T, H, H, 1.0f, dq.data(), H, w + L.wq, H, 0.0f, dh.data(), H);
  gemm(false, true, T, H, H, 1.0f, dk.data(), H, w + L.wk, H, 1.0f, dh.data(), H);
  gemm(false, true, T, H, H, 1.0f, dv.data(), H, w + L.wv, H, 1.0f, dh.data(), H);
  rmsnorm_backward(x, w + L.attn_norm, c.r1.data(), dh.data(), T, H, dx, g + L.attn_norm);
  for (std::size_t i = 0; i < T * H; ++i)
    dx[i] += dx2[i];
}

}  // namespace

void layers_forward(const Dims& d, const float* w, std::size_t n, const float* x, float* y) {
  const std::size_t TH = d.tokens() * d.hidden, phi = layer_layout(d).size;
  LayerCache cache(d);
  Vec cur(x, x + TH), next(TH);
  for (std::size_t l = 0; l < n; ++l) {
    layer_forward(d, w + l * phi, cur.data(), next.data(), cache);
    cur.swap(next);
  }
  std::copy(cur.begin(), cur.end(), y);
}

void layers_backward(const Dims& d, const float* w, std::size_t n, const float* x, const float* dy,
                     float* dx, float* dw) {
  const std::size_t TH = d.tokens() * d.hidden, phi = layer_layout(d).size;
  LayerCache cache(d);
  // Recompute the boundary inputs of every layer of the range (checkpoint = x).
  std::vector<Vec> inputs(n, Vec(TH));
  if (n > 0) std::copy(x, x + TH, inputs[0].begin());
  Vec out(TH);
  for (std::size_t l = 0; l + 1 < n; ++l) {
    layer_forward(d, w + l * phi, inputs[l].data(), inputs[l + 1].data(), cache);
  }
  Vec grad(dy, dy + TH), gin(TH);
  for (std::size_t l = n; l-- > 0;) {
    layer_forward(d, w + l * phi, inputs[l].data(), out.data(), cache);
    layer_backward(d, w + l * phi, inputs[l].data(), grad.data(), gin.data(),
                   dw != nullptr ? dw + l * phi : nullptr, cache);
    grad.swap(gin);
  }
  if (dx != nullptr) std::copy(grad.begin(), grad.end(), dx);
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
  Vec h(T * H), r(T), logits(T * V);
  rmsnorm_forward(x, w_emb + E.final_norm, T, H, d.norm_eps, h.data(), r.data());
  gemm(false, true, T, V, H, 1.0f, h.data(), H, w_emb + E.lm_head, H, 0.0f, logits.data(), V);
  const double loss = softmax_cross_entropy(logits.data(), targets, T, V, scale, logits.data());
  // logits now holds dlogits. dW_head += dlogits^T h; dh = dlogits W_head.
  gemm(true, false, V, H, T, 1.0f, logits.data(), V, h.data(), H, 1.0f, dw_emb + E.lm_head, H);
  Vec dh(T * H);
  gemm(false, false, T, H, V, 1.0f, logits.data(), V, w_emb + E.lm_head, H, 0.0f, dh.data(), H);
  rmsnorm_backward(x, w_emb + E.final_norm, r.data(), dh.data(), T, H, dx, dw_emb + E.final_norm);
  return loss;
}

double head_loss(const Dims& d, const float* w_emb, const float* x, const std::int32_t* targets) {
  const EmbeddingLayout E = embedding_layout(d);
  Vec dx(d.tokens() * d.hidden), dw(E.size);
  return head_forward_backward(d, w_emb, x, targets, 1.0f, dx.data(), dw.data());
}

}  // namespace tawpipe::exec::math
