#include "exec/device/sdpa_graph.h"

#include <cmath>
#include <set>

namespace tawpipe::exec::device {
namespace {

using std::int64_t;
using Dims = std::array<int64_t, 4>;

/// Appends tensors and operations; virtual uids count from 100, non-virtual ones are fixed.
class Builder {
 public:
  explicit Builder(SdpaGraph& g) : g_(g) {}

  int64_t tensor(const char* name, Dims dims, Dims strides, ElemType type, Binding b,
                 int64_t uid = 0) {
    GraphTensor t;
    t.uid = uid != 0 ? uid : next_virtual_++;
    t.name = name;
    t.dims = dims;
    t.strides = strides;
    t.type = type;
    t.is_virtual = b == Binding::none;
    t.by_value = b == Binding::scale || b == Binding::lowest || b == Binding::one;
    t.binding = b;
    g_.tensors.push_back(t);
    return t.uid;
  }
  int64_t scalar(const char* name, Binding b, int64_t uid) {
    return tensor(name, {1, 1, 1, 1}, {1, 1, 1, 1}, ElemType::f32, b, uid);
  }
  /// A virtual tensor shaped like `like`, packed row-major.
  int64_t virtual_like(const char* name, const Dims& d, ElemType type = ElemType::f32) {
    return tensor(name, d, packed(d), type, Binding::none);
  }
  static Dims packed(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

  int64_t matmul(const char* name, int64_t a, int64_t b, int64_t c) {
    GraphOp op;
    op.kind = OpKind::matmul;
    op.name = name;
    op.in = {a, b, 0};
    op.out = c;
    g_.ops.push_back(op);
    return c;
  }
  int64_t pw(const char* name, PointwiseMode m, int64_t x, int64_t b, int64_t out,
             ElemType compute = ElemType::f32, int64_t t = 0, int64_t axis = -1) {
    GraphOp op;
    op.kind = OpKind::pointwise;
    op.name = name;
    op.pointwise = m;
    op.compute = compute;
    op.axis = axis;
    op.in = {x, b, t};
    op.out = out;
    g_.ops.push_back(op);
    return out;
  }
  int64_t reduce(const char* name, ReductionMode m, int64_t x, int64_t out) {
    GraphOp op;
    op.kind = OpKind::reduction;
    op.name = name;
    op.reduction = m;
    op.in = {x, 0, 0};
    op.out = out;
    g_.ops.push_back(op);
    return out;
  }
  int64_t reshape(const char* name, int64_t x, int64_t out) {
    GraphOp op;
    op.kind = OpKind::reshape;
    op.name = name;
    op.in = {x, 0, 0};
    op.out = out;
    g_.ops.push_back(op);
    return out;
  }

 private:
  SdpaGraph& g_;
  int64_t next_virtual_ = 100;
};

// Fixed uids of the tensors the caller binds (the variant pack's keys).
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kDout,
  kDq,
  kDk,
  kDv,
  kDqAccum,
  kScale,
  kLowest,
  kOne
};

/// S = Q K^T * scale, causally masked: returns the uid of the masked scores.
int64_t scores(Builder& b, const SdpaKey& k, const Dims& ss) {
  const int64_t s = b.matmul("matmul_q_kt", kQ, kK, b.virtual_like("s", ss));
  int64_t out = b.pw("mul_scale", PointwiseMode::mul, s, kScale, b.virtual_like("s_scaled", ss));
  if (!k.causal) return out;
  const int64_t row = b.pw("row_index", PointwiseMode::gen_index, out, 0,
                           b.virtual_like("row", ss, ElemType::i32), ElemType::i32, 0, 2);
  const int64_t col = b.pw("col_index", PointwiseMode::gen_index, out, 0,
                           b.virtual_like("col", ss, ElemType::i32), ElemType::i32, 0, 3);
  const int64_t keep = b.pw("row_ge_col", PointwiseMode::cmp_ge, row, col,
                            b.virtual_like("keep", ss, ElemType::boolean), ElemType::boolean);
  b.scalar("lowest", Binding::lowest, kLowest);
  return b.pw("causal_select", PointwiseMode::binary_select, out, kLowest,
              b.virtual_like("s_masked", ss), ElemType::f32, keep);
}

bool broadcastable(const Dims& in, const Dims& out) {
  for (std::size_t i = 0; i < 4; ++i)
    if (in[i] != out[i] && in[i] != 1) return false;
  return true;
}

int64_t elements(const Dims& d) {
  return d[0] * d[1] * d[2] * d[3];
}

std::string dims_text(const Dims& d) {
  return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) +
         "," + std::to_string(d[3]) + "]";
}

}  // namespace

std::string to_string(const SdpaKey& k) {
  return std::string(k.direction == SdpaDirection::forward ? "fwd" : "bwd") + " b" +
         std::to_string(k.batch) + " h" + std::to_string(k.heads) + " s" + std::to_string(k.seq) +
         " d" + std::to_string(k.head_dim) + " " + name(k.dtype) + (k.causal ? " causal" : " full");
}

const GraphTensor* SdpaGraph::tensor(std::int64_t uid) const {
  for (const GraphTensor& t : tensors)
    if (t.uid == uid) return &t;
  return nullptr;
}

Status sdpa_supported(const SdpaKey& k) {
  if (k.dtype != DType::bf16 && k.dtype != DType::f16)
    return make_error(std::string("cuDNN SDPA needs bf16 or f16 storage, not ") + name(k.dtype));
  if (k.head_dim < 8 || k.head_dim > 256 || k.head_dim % 8 != 0)
    return make_error(
        "cuDNN SDPA needs a head dimension that is a multiple of 8 in [8, 256], not " +
        std::to_string(k.head_dim));
  if (k.batch <= 0 || k.heads <= 0 || k.seq <= 0) return make_error("empty attention shape");
  return Status::success();
}

Expected<SdpaGraph> build_sdpa_graph(const SdpaKey& k) {
  TAWPIPE_TRY(sdpa_supported(k));
  SdpaGraph g;
  g.key = k;
  g.scale = 1.0f / std::sqrt(static_cast<float>(k.head_dim));
  Builder b(g);
  const int64_t B = k.batch, H = k.heads, S = k.seq, D = k.head_dim, W = H * D;
  const Dims bhsd{B, H, S, D}, rows{S * W, D, W, 1};    // our [b*s x h*d] rows as [b,h,s,d]
  const Dims bhds{B, H, D, S}, rows_t{S * W, D, 1, W};  // the transposed view [b,h,d,s]
  const Dims ss{B, H, S, S}, stat{B, H, S, 1}, stat_st{H * S, S, 1, 1};
  const ElemType io = ElemType::io;
  b.tensor("q", bhsd, rows, io, Binding::q, kQ);
  b.tensor("k_t", bhds, rows_t, io, Binding::k, kK);
  b.scalar("scale", Binding::scale, kScale);

  if (k.direction == SdpaDirection::forward) {
    b.tensor("v", bhsd, rows, io, Binding::v, kV);
    const int64_t s = scores(b, k, ss);
    const int64_t m = b.reduce("row_max", ReductionMode::max, s, b.virtual_like("max", stat));
    const int64_t centred = b.pw("sub_max", PointwiseMode::sub, s, m, b.virtual_like("s_m", ss));
    const int64_t e = b.pw("exp", PointwiseMode::exp, centred, 0, b.virtual_like("e", ss));
    const int64_t l = b.reduce("row_sum", ReductionMode::add, e, b.virtual_like("sum", stat));
    const int64_t log_l = b.pw("log", PointwiseMode::log, l, 0, b.virtual_like("log_sum", stat));
    b.tensor("stats", stat, stat_st, ElemType::f32, Binding::stats, kStats);
    b.pw("stats", PointwiseMode::add, m, log_l, kStats);
    // P is stored at the I/O type: the second matmul's A operand must be.
    const int64_t p = b.pw("div_sum", PointwiseMode::div, e, l, b.virtual_like("p", ss, io));
    b.tensor("o", bhsd, rows, io, Binding::o, kO);
    b.matmul("matmul_p_v", p, kV, kO);
    return g;
  }

  b.tensor("v_t", bhds, rows_t, io, Binding::v, kV);
  b.tensor("o", bhsd, rows, io, Binding::o, kO);
  b.tensor("dout", bhsd, rows, io, Binding::dout, kDout);
  b.tensor("stats", stat, stat_st, ElemType::f32, Binding::stats, kStats);
  b.scalar("one", Binding::one, kOne);
  // D = rowsum(dO * O): FlashAttention-2's delta, virtual here (the tiled kernel stores it).
  const int64_t dO_o =
      b.pw("mul_dout_o", PointwiseMode::mul, kDout, kO, b.virtual_like("do_o", bhsd));
  const int64_t dsum =
      b.reduce("row_sum_dout_o", ReductionMode::add, dO_o, b.virtual_like("d_raw", stat));
  const int64_t delta =
      b.pw("mul_one_d", PointwiseMode::mul, dsum, kOne, b.virtual_like("d", stat));
  const int64_t s = scores(b, k, ss);
  const int64_t centred =
      b.pw("sub_stats", PointwiseMode::sub, s, kStats, b.virtual_like("s_lse", ss));
  const int64_t p = b.pw("exp", PointwiseMode::exp, centred, 0, b.virtual_like("p", ss));
  // P^T as a reshape (transposed strides), at the I/O type for the matmul.
  const Dims t_strides{H * S * S, S * S, 1, S};
  const int64_t pt = b.reshape("transpose_p", p, b.tensor("p_t", ss, t_strides, io, Binding::none));
  b.tensor("dv", bhsd, rows, io, Binding::dv, kDv);
  b.matmul("matmul_pt_dout", pt, kDout, kDv);
  const int64_t dp = b.matmul("matmul_dout_vt", kDout, kV, b.virtual_like("dp", ss));
  const int64_t dp1 = b.pw("mul_one_dp", PointwiseMode::mul, dp, kOne, b.virtual_like("dp1", ss));
  const int64_t dpd = b.pw("sub_d", PointwiseMode::sub, dp1, delta, b.virtual_like("dp_d", ss));
  const int64_t ds0 = b.pw("mul_p", PointwiseMode::mul, dpd, p, b.virtual_like("ds_raw", ss));
  const int64_t ds =
      b.pw("mul_scale_ds", PointwiseMode::mul, ds0, kScale, b.virtual_like("ds", ss));
  const int64_t dst =
      b.reshape("transpose_ds", ds, b.tensor("ds_t", ss, t_strides, io, Binding::none));
  b.tensor("dk", bhsd, rows, io, Binding::dk, kDk);
  b.matmul("matmul_dst_q", dst, kQ, kDk);
  // K back from its transposed view for dQ = dS K.
  const int64_t kk = b.reshape("transpose_k", kK, b.tensor("k", bhsd, rows, io, Binding::none));
  b.tensor("dq_accum", bhsd, Builder::packed(bhsd), ElemType::f32, Binding::dq_accum, kDqAccum);
  g.tensors.back().reorder_f16x16 = true;
  b.matmul("matmul_ds_k", ds, kk, kDqAccum);
  b.tensor("dq", bhsd, rows, io, Binding::dq, kDq);
  b.pw("identity_dq", PointwiseMode::identity, kDqAccum, 0, kDq);
  g.dq_accum_bytes = static_cast<std::uint64_t>(elements(bhsd)) * 4;
  return g;
}

Status check_sdpa_graph(const SdpaGraph& g) {
  std::set<int64_t> uids;
  for (const GraphTensor& t : g.tensors) {
    if (!uids.insert(t.uid).second)
      return make_error("tensor uid " + std::to_string(t.uid) + " used twice");
    if (!t.is_virtual && t.binding == Binding::none)
      return make_error(std::string("non-virtual tensor ") + t.name + " has no binding");
    if (t.strides[0] <= 0 && !t.by_value)
      return make_error(std::string("tensor ") + t.name + " has no strides");
  }
  std::set<int64_t> produced;
  for (const GraphTensor& t : g.tensors)
    if (!t.is_virtual && t.binding != Binding::dq_accum && t.binding != Binding::o &&
        t.binding != Binding::stats && t.binding != Binding::dq && t.binding != Binding::dk &&
        t.binding != Binding::dv)
      produced.insert(t.uid);  // inputs
  if (g.key.direction == SdpaDirection::backward)
    for (const GraphTensor& t : g.tensors)
      if (t.binding == Binding::o || t.binding == Binding::stats) produced.insert(t.uid);
  for (const GraphOp& op : g.ops) {
    const std::string where = std::string("operation ") + op.name + ": ";
    const GraphTensor* out = g.tensor(op.out);
    if (!out) return make_error(where + "output tensor missing");
    if (produced.count(op.out)) return make_error(where + "output " + out->name + " written twice");
    std::array<const GraphTensor*, 3> in{};
    for (std::size_t i = 0; i < 3; ++i) {
      if (op.in[i] == 0) continue;
      in[i] = g.tensor(op.in[i]);
      if (!in[i]) return make_error(where + "input tensor missing");
      if (!produced.count(op.in[i]))
        return make_error(where + "input " + in[i]->name + " used before it is produced");
    }
    if (!in[0]) return make_error(where + "no input");
    switch (op.kind) {
      case OpKind::matmul: {
        if (!in[1]) return make_error(where + "matmul needs two inputs");
        const Dims &a = in[0]->dims, &b = in[1]->dims, &c = out->dims;
        const bool batch = a[0] == c[0] && a[1] == c[1] && b[0] == c[0] && b[1] == c[1];
        if (!batch || a[3] != b[2] || a[2] != c[2] || b[3] != c[3])
          return make_error(where + dims_text(a) + " x " + dims_text(b) + " -> " + dims_text(c) +
                            " is not a batched [M,K] x [K,N] -> [M,N]");
        break;
      }
      case OpKind::pointwise:
        for (std::size_t i = 0; i < 3; ++i)
          if (in[i] && !broadcastable(in[i]->dims, out->dims))
            return make_error(where + "input " + in[i]->name + " " + dims_text(in[i]->dims) +
                              " does not broadcast to " + dims_text(out->dims));
        if (op.pointwise == PointwiseMode::binary_select && !in[2])
          return make_error(where + "binary_select needs a mask");
        if (op.pointwise == PointwiseMode::gen_index && (op.axis < 0 || op.axis > 3))
          return make_error(where + "gen_index needs an axis");
        break;
      case OpKind::reduction:
        if (!broadcastable(out->dims, in[0]->dims))
          return make_error(where + "cannot reduce " + dims_text(in[0]->dims) + " to " +
                            dims_text(out->dims));
        break;
      case OpKind::reshape:
        if (elements(in[0]->dims) != elements(out->dims))
          return make_error(where + "reshape changes the element count");
        break;
    }
    produced.insert(op.out);
  }
  for (const GraphTensor& t : g.tensors)
    if (!t.is_virtual && !produced.count(t.uid))
      return make_error(std::string("output tensor ") + t.name + " is never written");
  return Status::success();
}

std::uint64_t sdpa_workspace_bytes(const SdpaGraph& g, std::uint64_t plan_workspace_bytes) {
  return (g.dq_accum_bytes + 255) / 256 * 256 + plan_workspace_bytes;
}

}  // namespace tawpipe::exec::device
