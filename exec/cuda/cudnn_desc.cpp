// The backend-descriptor owner of cudnn_desc.h.
#include "exec/cuda/cudnn_desc.h"

#include "exec/cuda/check.h"

namespace tawpipe::exec::cuda {

Error cudnn_error(cudnnStatus_t status, const std::string& call, const char* file, int line) {
  char last[512] = {};
  cudnnGetLastErrorString(last, sizeof last);
  std::string what = cudnnGetErrorString(status);
  if (last[0] != '\0') what += " (" + std::string(last) + ")";
  return call_error(call.c_str(), what, file, line);
}

Expected<BackendDesc> BackendDesc::make(cudnnBackendDescriptorType_t type, std::string what) {
  BackendDesc d;
  d.what_ = std::move(what);
  TAWPIPE_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d.d_),
                      "cudnnBackendCreateDescriptor(" + d.what_ + ")");
  return d;
}

Status BackendDesc::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                        std::int64_t count, const void* values) {
  TAWPIPE_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values),
                      "cudnnBackendSetAttribute(" + what_ + ", attribute " +
                          std::to_string(static_cast<int>(name)) + ")");
  return Status::success();
}

Status BackendDesc::finalize() {
  TAWPIPE_CUDNN_CHECK(cudnnBackendFinalize(d_), "cudnnBackendFinalize(" + what_ + ")");
  return Status::success();
}

}  // namespace tawpipe::exec::cuda
