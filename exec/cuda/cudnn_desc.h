/// \file
/// A small RAII owner for cuDNN backend descriptors (cudnnBackendCreateDescriptor /
/// cudnnBackendDestroyDescriptor) whose calls return errors as values: each failing call
/// becomes an Error naming the call, the descriptor, cudnnGetErrorString's message, the text of
/// cudnnGetLastErrorString when cuDNN left one, and file:line. Only built with cuDNN
/// (TAWPIPE_HAVE_CUDNN). Private to exec/cuda/.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace tawpipe::exec::cuda {

/// "cudnnBackendFinalize(tensor q) failed: CUDNN_STATUS_BAD_PARAM (<last error>) (f.cpp:12)".
Error cudnn_error(cudnnStatus_t status, const std::string& call, const char* file, int line);

#define TAWPIPE_CUDNN_CHECK(call, what)                                                       \
  do {                                                                                        \
    const cudnnStatus_t tawpipe_cudnn_rc_ = (call);                                           \
    if (tawpipe_cudnn_rc_ != CUDNN_STATUS_SUCCESS)                                            \
      return ::tawpipe::exec::cuda::cudnn_error(tawpipe_cudnn_rc_, what, __FILE__, __LINE__); \
  } while (0)

/// Owns one backend descriptor. Move-only; destroyed with the owner.
class BackendDesc {
 public:
  BackendDesc() = default;
  /// Creates a descriptor of `type`; `what` names it in errors ("tensor q", "plan").
  static Expected<BackendDesc> make(cudnnBackendDescriptorType_t type, std::string what);
  BackendDesc(BackendDesc&& o) noexcept
      : d_(std::exchange(o.d_, nullptr)), what_(std::move(o.what_)) {}
  BackendDesc& operator=(BackendDesc&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = std::exchange(o.d_, nullptr);
      what_ = std::move(o.what_);
    }
    return *this;
  }
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;
  ~BackendDesc() { reset(); }

  cudnnBackendDescriptor_t get() const { return d_; }
  const std::string& what() const { return what_; }

  /// cudnnBackendSetAttribute(name, type, count, values).
  Status set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
             const void* values);
  Status set_i64(cudnnBackendAttributeName_t name, std::vector<std::int64_t> values) {
    return set(name, CUDNN_TYPE_INT64, static_cast<std::int64_t>(values.size()), values.data());
  }
  Status set_desc(cudnnBackendAttributeName_t name, const BackendDesc& d) {
    cudnnBackendDescriptor_t raw = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  /// cudnnBackendFinalize.
  Status finalize();

 private:
  void reset() {
    if (d_) static_cast<void>(cudnnBackendDestroyDescriptor(std::exchange(d_, nullptr)));
  }
  cudnnBackendDescriptor_t d_ = nullptr;
  std::string what_;
};

}  // namespace tawpipe::exec::cuda
