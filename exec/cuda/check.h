/// \file
/// Checking macros for every CUDA runtime, NCCL and cuBLAS call (NCCL's habit): a failing status
/// becomes an Error naming the call, the library's message, and file:line, returned from the
/// enclosing function (which returns Status or Expected<T>). Private to exec/cuda/.
#pragma once

#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "common/error.h"

namespace tawpipe::exec::cuda {

/// "cudaMalloc(...) failed: out of memory (cuda_api.cpp:42)".
inline Error call_error(const char* call, const std::string& what, const char* file, int line) {
  std::string f = file;
  const auto slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return make_error(std::string(call) + " failed: " + what + " (" + f + ":" + std::to_string(line) +
                    ")");
}

/// cuBLAS has no cublasGetStatusString before 11.4; it exists in every toolkit we accept.
inline std::string cublas_message(cublasStatus_t s) {
  return cublasGetStatusString(s);
}

}  // namespace tawpipe::exec::cuda

#define TAWPIPE_CUDA_CHECK(call)                                                            \
  do {                                                                                      \
    const cudaError_t tawpipe_cuda_rc_ = (call);                                            \
    if (tawpipe_cuda_rc_ != cudaSuccess)                                                    \
      return ::tawpipe::exec::cuda::call_error(#call, cudaGetErrorString(tawpipe_cuda_rc_), \
                                               __FILE__, __LINE__);                         \
  } while (0)

#define TAWPIPE_NCCL_CHECK(call)                                                            \
  do {                                                                                      \
    const ncclResult_t tawpipe_nccl_rc_ = (call);                                           \
    if (tawpipe_nccl_rc_ != ncclSuccess && tawpipe_nccl_rc_ != ncclInProgress)              \
      return ::tawpipe::exec::cuda::call_error(#call, ncclGetErrorString(tawpipe_nccl_rc_), \
                                               __FILE__, __LINE__);                         \
  } while (0)

#define TAWPIPE_CUBLAS_CHECK(call)                                                               \
  do {                                                                                           \
    const cublasStatus_t tawpipe_cublas_rc_ = (call);                                            \
    if (tawpipe_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                             \
      return ::tawpipe::exec::cuda::call_error(                                                  \
          #call, ::tawpipe::exec::cuda::cublas_message(tawpipe_cublas_rc_), __FILE__, __LINE__); \
  } while (0)
