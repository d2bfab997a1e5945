/// \file
/// The cuDNN fused scaled-dot-product attention (SDPA) as a plain description: the tensors and
/// operations of the operation graph that cuDNN's runtime-fusion flash-attention engines
/// recognise, in construction order, with every shape and stride stated for OUR activation
/// layout. No cuDNN types: exec/cuda/cudnn_sdpa.cpp translates each entry into one backend
/// descriptor (tensor, pointwise, matmul, reduction, reshape), so the whole shape bookkeeping is
/// tested on CPU (tests/unit/exec_cuda/sdpa_graph_test.cpp).
///
/// The graph (the one NVIDIA's cudnn-frontend builds for its SDPA node, cuDNN 9; the backend
/// wants K^T, and V^T in the backward, as transposed views of K and V):
///   forward   S = Q K^T; S *= scale; [causal: r = index(S, 2), c = index(S, 3), m = r >= c,
///             S = m ? S : lowest]; M = max_row(S); E = exp(S - M); L = sum_row(E);
///             Stats = M + log L (the log-sum-exp, kept for the backward); P = E / L; O = P V.
///   backward  D = sum_row(dO * O) * 1; S as in the forward, P = exp(S - Stats);
///             dV = P^T dO; dP = (dO V^T) * 1; dS = (dP - D) * P * scale; dK = dS^T Q;
///             dQacc = dS K (fp32, non-virtual, zeroed); dQ = identity(dQacc).
/// The multiplications by the constant 1 stand where dropout's mask and scale go; the engines
/// match the graph with them, so they stay.
///
/// Layout: q, k, v, o, dO, dq, dk, dv are [batch * seq x heads * head_dim] rows (head h =
/// columns [h*d, (h+1)*d)), i.e. the 4-d view [b, h, s, d] with strides [s*W, d, W, 1],
/// W = heads * head_dim; the log-sum-exp is fp32 [b, h, s] (strides [h*s, s, 1]), exactly the
/// layout of the tiled kernel (exec/cuda/attention.cu), so either path's forward feeds either
/// path's backward.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "exec/device/device_api.h"

namespace tawpipe::exec::device {

enum class SdpaDirection : std::uint8_t { forward, backward };

/// One graph (and one cached execution plan) per key.
struct SdpaKey {
  std::int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  DType dtype = DType::bf16;  ///< storage of q, k, v, o and their gradients (bf16 or f16)
  bool causal = true;
  SdpaDirection direction = SdpaDirection::forward;
  auto operator<=>(const SdpaKey&) const = default;
};
/// "fwd b1 h32 s16384 d64 bf16 causal".
std::string to_string(const SdpaKey& k);

/// Element type of a graph tensor: `io` is the key's dtype.
enum class ElemType : std::uint8_t { io, f32, i32, boolean };

/// Where a non-virtual tensor's data lives at execution time.
enum class Binding : std::uint8_t {
  none,   ///< virtual: never in memory
  q,      ///< the launch's pointers (device_api.h attention slots)
  k,      ///< K, or its transposed view K^T (same address)
  v,      ///< V, or V^T
  o,      ///< output in the forward, input in the backward
  stats,  ///< the fp32 log-sum-exp
  dout,   ///< dO
  dq,     ///< outputs of the backward
  dk,
  dv,
  dq_accum,  ///< fp32 dQ accumulator at the start of the lent workspace, zeroed before each run
  scale,     ///< by-value fp32 scalars (host memory)
  lowest,
  one,
};

struct GraphTensor {
  std::int64_t uid = 0;
  const char* name = "";
  std::array<std::int64_t, 4> dims{}, strides{};
  ElemType type = ElemType::f32;
  bool is_virtual = true;
  bool by_value = false;
  bool reorder_f16x16 = false;  ///< CUDNN_TENSOR_REORDERING_F16x16 (the dQ accumulator)
  Binding binding = Binding::none;
};

enum class OpKind : std::uint8_t { matmul, pointwise, reduction, reshape };
enum class PointwiseMode : std::uint8_t {
  add,
  sub,
  mul,
  div,
  exp,
  log,
  identity,
  gen_index,
  cmp_ge,
  binary_select
};
enum class ReductionMode : std::uint8_t { max, add };

/// One operation. Inputs by uid: matmul A, B; pointwise x, b (binary), t (binary_select's
/// mask); reduction and reshape x. 0 = unused.
struct GraphOp {
  OpKind kind = OpKind::pointwise;
  const char* name = "";
  PointwiseMode pointwise = PointwiseMode::identity;
  ReductionMode reduction = ReductionMode::add;
  ElemType compute = ElemType::f32;  ///< math precision (matmul and reduction: f32)
  std::int64_t axis = -1;            ///< gen_index only
  std::array<std::int64_t, 3> in{};
  std::int64_t out = 0;
};

struct SdpaGraph {
  SdpaKey key;
  std::vector<GraphTensor> tensors;  ///< in creation order, uids unique
  std::vector<GraphOp> ops;          ///< in construction (topological) order
  float scale = 1.0f;                ///< 1 / sqrt(head_dim)
  std::uint64_t dq_accum_bytes = 0;  ///< backward: fp32 b*h*s*d, else 0

  const GraphTensor* tensor(std::int64_t uid) const;
};

/// Whether cuDNN is even asked for `k` (an error says why not): bf16/f16 storage, head_dim a
/// multiple of 8 in [8, 256], positive sizes. The engines may still refuse a key that passes
/// (e.g. a backward head dimension above 128 on some architectures); that is found when the
/// plan is built.
Status sdpa_supported(const SdpaKey& k);

/// The graph for `k` (error: sdpa_supported's).
Expected<SdpaGraph> build_sdpa_graph(const SdpaKey& k);

/// Checks the shape bookkeeping of a graph: unique uids, every operation's inputs created
/// before it and its output by it only, matmul [.., M, K] x [.., K, N] -> [.., M, N], pointwise
/// inputs broadcastable to the output, reductions to size 1 along reduced axes, reshapes
/// element-preserving, every non-virtual tensor bound. The message names the operation.
Status check_sdpa_graph(const SdpaGraph& g);

/// Bytes of device memory the graph needs besides the tensors it is handed: the dQ accumulator
/// (256-byte aligned) followed by the execution plan's own workspace.
std::uint64_t sdpa_workspace_bytes(const SdpaGraph& g, std::uint64_t plan_workspace_bytes);

}  // namespace tawpipe::exec::device
