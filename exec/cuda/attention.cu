// Causal attention with O(S) memory: the tiled, online-softmax kernels of FlashAttention
// (Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness",
// NeurIPS 2022, Algorithm 1; the backward recomputes the probabilities from the saved
// log-sum-exp as in FlashAttention-2, Dao 2023, Algorithm 2). The device twin of
// exec/math/attention.cpp, which keeps the S x S probabilities instead.
//
// Layout: q, k, v, out are [batch * seq x heads * head_dim] rows (head h = columns
// [h*d, (h+1)*d)), of fp32 or bf16; lse and delta are fp32 [batch x heads x seq]. Nothing of
// size S^2 is ever stored.
//
// Forward: a block of kRows warps owns kRows consecutive query rows (one warp per row, each lane
// holding head_dim / 32 columns of q and of the output accumulator); the block walks the keys
// j <= its last row in tiles of kTile keys, staged (K and V) in shared memory, and each warp
// updates its running max m, denominator l and accumulator per key (online softmax). The row's
// output is acc / l and lse = m + log l.
// Backward: delta_i = dO_i . O_i; then one pass over query rows for dQ (keys j <= i in tiles)
// and one over key rows for dK, dV (queries i >= j in tiles), each recomputing
// P_ij = exp(s_ij - lse_i) and dS_ij = P_ij (dO_i . V_j - delta_i); no atomics.
// Head dims up to 256 (8 columns per lane); larger ones are refused (cudaErrorInvalidValue).
// Causal by default; s[4] = 1 lifts the mask (every query sees every key). Storage fp32, bf16
// or f16. This is the fallback of cuDNN's fused attention (cudnn_sdpa.cpp) and computes the
// same log-sum-exp, so either path's forward feeds either path's backward.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "exec/cuda/device_math.cuh"
#include "exec/cuda/kernels.h"

namespace tawpipe::exec::cuda {
namespace {

constexpr int kRows = 4;     // query (or key) rows per block: one warp each
constexpr int kTile = 16;    // keys (or queries) staged in shared memory per step
constexpr int kPerLane = 8;  // head_dim / 32 at most: head_dim <= 256
constexpr int kMaxHeadDim = 32 * kPerLane;

struct Shape {
  int64_t heads, hd, seq;
  bool causal;
  __device__ int64_t width() const { return heads * hd; }
  /// The last key query row `i` sees.
  __device__ int64_t last_key(int64_t i) const { return causal ? i : seq - 1; }
};

/// Stages rows [r0, r0 + kTile) (clamped to seq) of up to three tensors into shared memory as
/// fp32; rows past the end become zero.
template <class T>
__device__ void stage(float* dst, const T* src, int64_t base, int64_t r0, const Shape& s) {
  for (int64_t idx = threadIdx.x; idx < kTile * s.hd; idx += blockDim.x) {
    const int64_t r = r0 + idx / s.hd, d = idx % s.hd;
    dst[idx] = r < s.seq ? ld(src + base + r * s.width() + d) : 0.0f;
  }
}

/// Dot product of the lane's columns `a` (registers) with row `row` of a staged tile.
__device__ __forceinline__ float dot_row(const float* a, const float* tile, int64_t row,
                                         int64_t hd) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int64_t d = lane + 32 * c;
    if (d < hd) s += a[c] * tile[row * hd + d];
  }
  return warp_sum(s);
}

/// Loads the lane's columns of row `row` (fp32), zero past the row's end or past `seq`.
template <class T>
__device__ void load_row(float* a, const T* src, int64_t base, int64_t row, const Shape& s,
                         float scale = 1.0f) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int64_t d = lane + 32 * c;
    a[c] = d < s.hd && row < s.seq ? ld(src + base + row * s.width() + d) * scale : 0.0f;
  }
}

template <class T>
__device__ void store_row(T* dst, const float* a, int64_t base, int64_t row, const Shape& s,
                          float scale) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int64_t d = lane + 32 * c;
    if (d < s.hd) st(dst + base + row * s.width() + d, a[c] * scale);
  }
}

/// grid (ceil(seq / kRows), heads, batch), kRows warps; dynamic shared: 2 kTile head_dim floats.
template <class T>
__global__ void flash_forward(const T* q, const T* k, const T* v, float* lse, T* out, Shape s) {
  extern __shared__ float tile[];
  float* kt = tile;
  float* vt = tile + kTile * s.hd;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t base = b * s.seq * s.width() + h * s.hd;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRows, i = first + warp;
  // The last key any of the block's rows sees.
  const int64_t last = s.last_key(min(s.seq - 1, first + kRows - 1));
  float qr[kPerLane], acc[kPerLane];
  load_row(qr, q, base, i, s, rsqrtf(static_cast<float>(s.hd)));
#pragma unroll
  for (int c = 0; c < kPerLane; ++c)
    acc[c] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  for (int64_t j0 = 0; j0 <= last; j0 += kTile) {
    __syncthreads();
    stage(kt, k, base, j0, s);
    stage(vt, v, base, j0, s);
    __syncthreads();
    if (i >= s.seq) continue;
    for (int64_t jj = 0; jj < kTile && j0 + jj <= s.last_key(i); ++jj) {
      const float score = dot_row(qr, kt, jj, s.hd);
      const float m_new = fmaxf(m, score);
      const float corr = __expf(m - m_new), p = __expf(score - m_new);
      l = l * corr + p;
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t d = lane + 32 * c;
        acc[c] = acc[c] * corr + (d < s.hd ? p * vt[jj * s.hd + d] : 0.0f);
      }
      m = m_new;
    }
  }
  if (i >= s.seq) return;
  store_row(out, acc, base, i, s, 1.0f / l);
  if (lane == 0) lse[(b * s.heads + h) * s.seq + i] = m + logf(l);
}

/// delta_i = dO_i . O_i, one warp per row; grid (ceil(seq / kRows), heads, batch).
template <class T>
__global__ void flash_delta(const T* out, const T* dout, float* delta, Shape s) {
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t base = b * s.seq * s.width() + h * s.hd;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kRows + warp;
  if (i >= s.seq) return;
  float o[kPerLane], g[kPerLane];
  load_row(o, out, base, i, s);
  load_row(g, dout, base, i, s);
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kPerLane; ++c)
    sum += o[c] * g[c];
  sum = warp_sum(sum);
  if ((threadIdx.x & 31) == 0) delta[(b * s.heads + h) * s.seq + i] = sum;
}

/// dQ_i = scale sum_{j<=i} dS_ij K_j; one warp per query row, K and V tiles staged.
template <class T>
__global__ void flash_backward_dq(const T* q, const T* k, const T* v, const float* lse,
                                  const float* delta, const T* dout, T* dq, Shape s) {
  extern __shared__ float tile[];
  float* kt = tile;
  float* vt = tile + kTile * s.hd;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t base = b * s.seq * s.width() + h * s.hd;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRows, i = first + warp;
  const int64_t last = s.last_key(min(s.seq - 1, first + kRows - 1));
  const float scale = rsqrtf(static_cast<float>(s.hd));
  float qr[kPerLane], g[kPerLane], acc[kPerLane];
  load_row(qr, q, base, i, s, scale);
  load_row(g, dout, base, i, s);
#pragma unroll
  for (int c = 0; c < kPerLane; ++c)
    acc[c] = 0.0f;
  const int64_t row = (b * s.heads + h) * s.seq + i;
  const float lse_i = i < s.seq ? lse[row] : 0.0f, delta_i = i < s.seq ? delta[row] : 0.0f;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  for (int64_t j0 = 0; j0 <= last; j0 += kTile) {
    __syncthreads();
    stage(kt, k, base, j0, s);
    stage(vt, v, base, j0, s);
    __syncthreads();
    if (i >= s.seq) continue;
    for (int64_t jj = 0; jj < kTile && j0 + jj <= s.last_key(i); ++jj) {
      const float p = __expf(dot_row(qr, kt, jj, s.hd) - lse_i);
      const float ds = p * (dot_row(g, vt, jj, s.hd) - delta_i);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t d = lane + 32 * c;
        if (d < s.hd) acc[c] += ds * kt[jj * s.hd + d];
      }
    }
  }
  if (i < s.seq) store_row(dq, acc, base, i, s, scale);
}

/// dV_j = sum_{i>=j} P_ij dO_i, dK_j = scale sum_{i>=j} dS_ij Q_i; one warp per key row, Q and
/// dO tiles staged (with their rows' lse and delta).
template <class T>
__global__ void flash_backward_dkv(const T* q, const T* k, const T* v, const float* lse,
                                   const float* delta, const T* dout, T* dk, T* dv, Shape s) {
  extern __shared__ float tile[];
  float* qt = tile;
  float* gt = tile + kTile * s.hd;
  float* lt = tile + 2 * kTile * s.hd;  // lse of the staged rows, then delta
  float* dt = lt + kTile;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int64_t base = b * s.seq * s.width() + h * s.hd;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRows, j = first + warp;
  const float scale = rsqrtf(static_cast<float>(s.hd));
  float kr[kPerLane], vr[kPerLane], ak[kPerLane], av[kPerLane];
  load_row(kr, k, base, j, s, scale);
  load_row(vr, v, base, j, s);
#pragma unroll
  for (int c = 0; c < kPerLane; ++c)
    ak[c] = av[c] = 0.0f;
  const int64_t plane = (b * s.heads + h) * s.seq;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  // Causal: queries i >= first (the block's first key row) reach some of the block's keys.
  for (int64_t i0 = s.causal ? first - first % kTile : 0; i0 < s.seq; i0 += kTile) {
    __syncthreads();
    stage(qt, q, base, i0, s);
    stage(gt, dout, base, i0, s);
    for (int64_t r = threadIdx.x; r < kTile; r += blockDim.x) {
      lt[r] = i0 + r < s.seq ? lse[plane + i0 + r] : 0.0f;
      dt[r] = i0 + r < s.seq ? delta[plane + i0 + r] : 0.0f;
    }
    __syncthreads();
    if (j >= s.seq) continue;
    for (int64_t ii = 0; ii < kTile && i0 + ii < s.seq; ++ii) {
      if (s.causal && i0 + ii < j) continue;
      const float p = __expf(dot_row(kr, qt, ii, s.hd) - lt[ii]);
      const float ds = p * (dot_row(vr, gt, ii, s.hd) - dt[ii]);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t d = lane + 32 * c;
        if (d < s.hd) {
          av[c] += p * gt[ii * s.hd + d];
          ak[c] += ds * qt[ii * s.hd + d];
        }
      }
    }
  }
  if (j >= s.seq) return;
  store_row(dk, ak, base, j, s, scale);
  store_row(dv, av, base, j, s, 1.0f);
}

template <class T>
cudaError_t launch_typed(const device::KernelLaunch& k, cudaStream_t st) {
  const Shape s{k.s[1], k.s[2], k.s[3], k.s[4] == 0};
  const dim3 grid(static_cast<unsigned>((s.seq + kRows - 1) / kRows),
                  static_cast<unsigned>(s.heads), static_cast<unsigned>(k.s[0]));
  const unsigned threads = 32 * kRows;
  const size_t tiles = 2 * kTile * static_cast<size_t>(s.hd) * sizeof(float);
  if (k.kernel == device::Kernel::attention_forward) {
    flash_forward<T><<<grid, threads, tiles, st>>>(slot<T>(k, 0), slot<T>(k, 1), slot<T>(k, 2),
                                                   slot<float>(k, 3), slot<T>(k, 4), s);
    return cudaGetLastError();
  }
  // Backward slots: q, k, v, out, lse, dout, dq, dk, dv, delta.
  flash_delta<T><<<grid, threads, 0, st>>>(slot<T>(k, 3), slot<T>(k, 5), slot<float>(k, 9), s);
  flash_backward_dq<T><<<grid, threads, tiles, st>>>(slot<T>(k, 0), slot<T>(k, 1), slot<T>(k, 2),
                                                     slot<float>(k, 4), slot<float>(k, 9),
                                                     slot<T>(k, 5), slot<T>(k, 6), s);
  flash_backward_dkv<T><<<grid, threads, tiles + 2 * kTile * sizeof(float), st>>>(
      slot<T>(k, 0), slot<T>(k, 1), slot<T>(k, 2), slot<float>(k, 4), slot<float>(k, 9),
      slot<T>(k, 5), slot<T>(k, 7), slot<T>(k, 8), s);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_attention(const device::KernelLaunch& k, cudaStream_t stream) {
  if (k.s[2] <= 0 || k.s[2] > kMaxHeadDim) return cudaErrorInvalidValue;
  if (k.s[0] <= 0 || k.s[1] <= 0 || k.s[3] <= 0) return cudaSuccess;
  switch (k.dtype) {
    case device::DType::f32:
      return launch_typed<float>(k, stream);
    case device::DType::bf16:
      return launch_typed<bf16>(k, stream);
    case device::DType::f16:
      return launch_typed<f16>(k, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace tawpipe::exec::cuda
