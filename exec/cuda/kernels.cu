// The element-wise kernels of the block: device twins of exec/math (norm.cpp, mlp.cpp, loss.cpp,
// adamw.cpp, block.cpp's embedding, attention.cpp's RoPE), storage in fp32 or bf16, arithmetic
// in fp32 (reductions in fp32 per thread, then a block reduction). Attention itself is in
// attention.cu (tiled, O(S) memory).
#include <cuda_bf16.h>

#include <cstdint>

#include "exec/cuda/device_math.cuh"
#include "exec/cuda/kernels.h"

namespace tawpipe::exec::cuda {
namespace {

using device::DType;
using device::Kernel;
using device::KernelLaunch;

constexpr int kThreads = 256;

__device__ __forceinline__ void atomic_add(float* p, float v) {
  atomicAdd(p, v);
}
/// bf16 atomics exist from sm_80 on (the architectures we build for).
__device__ __forceinline__ void atomic_add(bf16* p, float v) {
  atomicAdd(p, __float2bfloat16(v));
}

/// Sum (or max) over the block; every thread gets the result. `scratch` holds 32 floats.
template <bool Max>
__device__ float block_reduce(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmaxf(v, w) : v + w;
  }
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = (static_cast<int>(blockDim.x) + 31) >> 5;
  v = lane < warps ? scratch[lane] : (Max ? -INFINITY : 0.0f);
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmaxf(v, w) : v + w;
  }
  return v;
}

template <class T>
__global__ void rmsnorm_forward(const T* x, const T* g, T* y, float* r, int64_t width, float eps) {
  __shared__ float red[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * width;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x)
    ss += ld(xr + i) * ld(xr + i);
  ss = block_reduce<false>(ss, red);
  const float inv = rsqrtf(ss / static_cast<float>(width) + eps);
  if (threadIdx.x == 0) r[row] = inv;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x)
    st(y + row * width + i, ld(xr + i) * inv * ld(g + i));
}

template <class T>
__global__ void rmsnorm_backward(const T* x, const T* g, const float* r, const T* dy, T* dx, T* dg,
                                 int64_t width) {
  __shared__ float red[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * width;
  const T* dyr = dy + row * width;
  const float inv = r[row];
  float dot = 0.0f;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    const float xhat = ld(xr + i) * inv;
    dot += ld(dyr + i) * ld(g + i) * xhat;
    atomic_add(dg + i, ld(dyr + i) * xhat);
  }
  const float mean = block_reduce<false>(dot, red) / static_cast<float>(width);
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x)
    st(dx + row * width + i, inv * (ld(dyr + i) * ld(g + i) - ld(xr + i) * inv * mean));
}

template <class T>
__global__ void rope(T* x, int64_t tokens, int64_t heads, int64_t hd, int64_t seq, float base,
                     bool inverse) {
  const int64_t half = hd / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tokens * heads * half) return;
  const int64_t i = idx % half, h = (idx / half) % heads, t = idx / (half * heads);
  const double freq =
      pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(hd));
  const double angle = static_cast<double>(t % seq) * freq;
  const float c = static_cast<float>(cos(angle));
  const float s = static_cast<float>(sin(angle)) * (inverse ? -1.0f : 1.0f);
  T* row = x + t * heads * hd + h * hd;
  const float a = ld(row + 2 * i), b = ld(row + 2 * i + 1);
  st(row + 2 * i, a * c - b * s);
  st(row + 2 * i + 1, a * s + b * c);
}

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + __expf(-x));
}

template <class T>
__global__ void swiglu_forward(const T* gate, const T* up, T* m, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = ld(gate + i);
  st(m + i, g * sigmoid(g) * ld(up + i));
}

template <class T>
__global__ void swiglu_backward(const T* gate, const T* up, const T* dm, T* dgate, T* dup,
                                int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = ld(gate + i), s = sigmoid(g), d = ld(dm + i);
  st(dup + i, d * g * s);
  st(dgate + i, d * ld(up + i) * s * (1.0f + g * (1.0f - s)));
}

template <class D, class S>
__global__ void add(D* dst, const S* src, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) st(dst + i, ld(dst + i) + ld(src + i));
}

template <class D, class S>
__global__ void cast(D* dst, const S* src, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) st(dst + i, ld(src + i));
}

template <class T>
__global__ void embedding_forward(const T* table, const int32_t* tokens, T* x, int64_t n,
                                  int64_t hidden) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * hidden) return;
  const int64_t t = i / hidden, c = i % hidden;
  x[i] = table[static_cast<int64_t>(tokens[t]) * hidden + c];
}

template <class T>
__global__ void embedding_backward(const int32_t* tokens, const T* dx, T* dtable, int64_t n,
                                   int64_t hidden) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * hidden) return;
  const int64_t t = i / hidden, c = i % hidden;
  atomic_add(dtable + static_cast<int64_t>(tokens[t]) * hidden + c, ld(dx + i));
}

/// One block per row: loss += logsumexp - logit[target]; logits := (softmax - onehot) * scale.
template <class T>
__global__ void cross_entropy(T* logits, const int32_t* targets, double* loss, int64_t vocab,
                              float scale) {
  __shared__ float red[32];
  const int64_t row = blockIdx.x;
  T* l = logits + row * vocab;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    mx = fmaxf(mx, ld(l + j));
  mx = block_reduce<true>(mx, red);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    sum += __expf(ld(l + j) - mx);
  sum = block_reduce<false>(sum, red);
  const int64_t target = targets[row];
  if (threadIdx.x == 0) atomicAdd(loss, static_cast<double>(logf(sum) - (ld(l + target) - mx)));
  __syncthreads();
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float p = __expf(ld(l + j) - mx) / sum;
    st(l + j, (p - (j == target ? 1.0f : 0.0f)) * scale);
  }
}

template <class G>
__global__ void adamw(const G* grad, float* w, float* m, float* v, int64_t n, float lr, float b1,
                      float b2, float eps, float wd, float step) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float c1 = 1.0f / (1.0f - powf(b1, step)), c2 = 1.0f / (1.0f - powf(b2, step));
  const float g = ld(grad + i);
  m[i] = b1 * m[i] + (1.0f - b1) * g;
  v[i] = b2 * v[i] + (1.0f - b2) * g * g;
  w[i] -= lr * (wd * w[i] + (m[i] * c1) / (sqrtf(v[i] * c2) + eps));
}

unsigned blocks(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

template <class T>
T* P(const KernelLaunch& k, int i) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(k.p[static_cast<size_t>(i)]));
}

template <class T>
void launch_typed(const KernelLaunch& k, cudaStream_t st) {
  const auto& s = k.s;
  switch (k.kernel) {
    case Kernel::rmsnorm_forward:
      rmsnorm_forward<T><<<static_cast<unsigned>(s[0]), kThreads, 0, st>>>(
          P<T>(k, 0), P<T>(k, 1), P<T>(k, 2), P<float>(k, 3), s[1], k.f[0]);
      break;
    case Kernel::rmsnorm_backward:
      rmsnorm_backward<T><<<static_cast<unsigned>(s[0]), kThreads, 0, st>>>(
          P<T>(k, 0), P<T>(k, 1), P<float>(k, 2), P<T>(k, 3), P<T>(k, 4), P<T>(k, 5), s[1]);
      break;
    case Kernel::rope:
      rope<T><<<blocks(s[0] * s[1] * (s[2] / 2)), kThreads, 0, st>>>(P<T>(k, 0), s[0], s[1], s[2],
                                                                     s[3], k.f[0], k.f[1] != 0.0f);
      break;
    case Kernel::swiglu_forward:
      swiglu_forward<T>
          <<<blocks(s[0]), kThreads, 0, st>>>(P<T>(k, 0), P<T>(k, 1), P<T>(k, 2), s[0]);
      break;
    case Kernel::swiglu_backward:
      swiglu_backward<T><<<blocks(s[0]), kThreads, 0, st>>>(P<T>(k, 0), P<T>(k, 1), P<T>(k, 2),
                                                            P<T>(k, 3), P<T>(k, 4), s[0]);
      break;
    case Kernel::embedding_forward:
      embedding_forward<T><<<blocks(s[0] * s[1]), kThreads, 0, st>>>(P<T>(k, 0), P<int32_t>(k, 1),
                                                                     P<T>(k, 2), s[0], s[1]);
      break;
    case Kernel::embedding_backward:
      embedding_backward<T><<<blocks(s[0] * s[1]), kThreads, 0, st>>>(P<int32_t>(k, 0), P<T>(k, 1),
                                                                      P<T>(k, 2), s[0], s[1]);
      break;
    case Kernel::cross_entropy:
      cross_entropy<T><<<static_cast<unsigned>(s[0]), kThreads, 0, st>>>(
          P<T>(k, 0), P<int32_t>(k, 1), P<double>(k, 2), s[1], k.f[0]);
      break;
    default:
      break;
  }
}

template <class D, class S>
void launch_pair(const KernelLaunch& k, cudaStream_t st) {
  if (k.kernel == Kernel::add)
    add<D, S><<<blocks(k.s[0]), kThreads, 0, st>>>(P<D>(k, 0), P<S>(k, 1), k.s[0]);
  else
    cast<D, S><<<blocks(k.s[0]), kThreads, 0, st>>>(P<D>(k, 0), P<S>(k, 1), k.s[0]);
}

}  // namespace

cudaError_t launch_kernel(const KernelLaunch& k, cudaStream_t stream) {
  const bool attention =
      k.kernel == Kernel::attention_forward || k.kernel == Kernel::attention_backward;
  // f16 storage is for attention only (device_api.h); the other kernels know f32 and bf16.
  if (!attention && (k.dtype == DType::f16 || k.dtype2 == DType::f16)) return cudaErrorInvalidValue;
  if (k.s[0] <= 0 && k.kernel != Kernel::adamw) return cudaSuccess;
  const bool f32 = k.dtype == DType::f32, src_f32 = k.dtype2 == DType::f32;
  switch (k.kernel) {
    case Kernel::add:
    case Kernel::cast:
      if (f32 && src_f32)
        launch_pair<float, float>(k, stream);
      else if (f32)
        launch_pair<float, bf16>(k, stream);
      else if (src_f32)
        launch_pair<bf16, float>(k, stream);
      else
        launch_pair<bf16, bf16>(k, stream);
      break;
    case Kernel::attention_forward:
    case Kernel::attention_backward:
      return launch_attention(k, stream);
    case Kernel::adamw:
      if (src_f32)
        adamw<float><<<blocks(k.s[0]), kThreads, 0, stream>>>(
            P<float>(k, 0), P<float>(k, 1), P<float>(k, 2), P<float>(k, 3), k.s[0], k.f[0], k.f[1],
            k.f[2], k.f[3], k.f[4], k.f[5]);
      else
        adamw<bf16><<<blocks(k.s[0]), kThreads, 0, stream>>>(
            P<bf16>(k, 0), P<float>(k, 1), P<float>(k, 2), P<float>(k, 3), k.s[0], k.f[0], k.f[1],
            k.f[2], k.f[3], k.f[4], k.f[5]);
      break;
    default:
      if (f32)
        launch_typed<float>(k, stream);
      else
        launch_typed<bf16>(k, stream);
      break;
  }
  return cudaGetLastError();
}

}  // namespace tawpipe::exec::cuda
