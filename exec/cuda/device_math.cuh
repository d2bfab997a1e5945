// Loads, stores and reductions shared by the kernels of exec/cuda (kernels.cu, attention.cu):
// storage in fp32 or bf16 (and f16 for attention), arithmetic in fp32. Private to exec/cuda/.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "exec/device/device_api.h"

namespace tawpipe::exec::cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;

__device__ __forceinline__ float ld(const float* p) {
  return *p;
}
__device__ __forceinline__ float ld(const bf16* p) {
  return __bfloat162float(*p);
}
__device__ __forceinline__ float ld(const f16* p) {
  return __half2float(*p);
}
__device__ __forceinline__ void st(f16* p, float v) {
  *p = __float2half(v);
}
__device__ __forceinline__ void st(float* p, float v) {
  *p = v;
}
__device__ __forceinline__ void st(bf16* p, float v) {
  *p = __float2bfloat16(v);
}

/// Sum over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Pointer slot `i` of a launch as a typed device pointer.
template <class T>
__host__ __forceinline__ T* slot(const device::KernelLaunch& k, int i) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(k.p[static_cast<std::size_t>(i)]));
}

}  // namespace tawpipe::exec::cuda
