/// \file
/// Host-side entry to the kernels of kernels.cu (compiled by nvcc), so the rest of exec/cuda/
/// is plain C++. Private to exec/cuda/.
#pragma once

#include <cuda_runtime.h>

#include "exec/device/device_api.h"

namespace tawpipe::exec::cuda {

/// Launches `k` (device_api.h lists each kernel's pointer and shape slots) on `stream`;
/// returns the launch status (cudaGetLastError after the launch).
cudaError_t launch_kernel(const device::KernelLaunch& k, cudaStream_t stream);

/// The tiled attention kernels of attention.cu (attention_forward / attention_backward slots in
/// device_api.h); cudaErrorInvalidValue for a head dimension outside 1..256.
cudaError_t launch_attention(const device::KernelLaunch& k, cudaStream_t stream);

}  // namespace tawpipe::exec::cuda
