/// \file
/// RAII owners for CUDA, NCCL and cuBLAS objects (streams, events, communicators, cuBLAS
/// handles, device allocations): move-only, released in the destructor. Destructors cannot
/// report errors; teardown failures after a fault are ignored on purpose (the fault itself was
/// already reported). Private to exec/cuda/.
#pragma once

#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

namespace tawpipe::exec::cuda {

/// Owns one handle of type T, released by `Release` unless null or released early.
template <class T, void (*Release)(T)>
class Owner {
 public:
  Owner() = default;
  explicit Owner(T handle) : h_(handle) {}
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  Owner(Owner&& o) noexcept : h_(std::exchange(o.h_, T{})) {}
  Owner& operator=(Owner&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, T{});
    }
    return *this;
  }
  ~Owner() { reset(); }
  T get() const { return h_; }
  /// Gives up ownership (e.g. a communicator already aborted).
  T release() { return std::exchange(h_, T{}); }
  void reset() {
    if (h_) Release(std::exchange(h_, T{}));
  }

 private:
  T h_{};
};

inline void destroy_stream(cudaStream_t s) {
  static_cast<void>(cudaStreamDestroy(s));
}
inline void destroy_event(cudaEvent_t e) {
  static_cast<void>(cudaEventDestroy(e));
}
inline void destroy_comm(ncclComm_t c) {
  static_cast<void>(ncclCommDestroy(c));
}
inline void destroy_cublas(cublasHandle_t h) {
  static_cast<void>(cublasDestroy(h));
}
inline void free_device(void* p) {
  static_cast<void>(cudaFree(p));
}

using StreamOwner = Owner<cudaStream_t, destroy_stream>;
using EventOwner = Owner<cudaEvent_t, destroy_event>;
using CommOwner = Owner<ncclComm_t, destroy_comm>;
using CublasOwner = Owner<cublasHandle_t, destroy_cublas>;
using DeviceBuffer = Owner<void*, free_device>;

}  // namespace tawpipe::exec::cuda
