/// \file
/// Runs the attention launches of the CUDA backend (Kernel::attention_forward / _backward,
/// device_api.h): cuDNN's fused scaled-dot-product attention through the cuDNN backend (graph)
/// API when it is built in and takes the shape within the workspace the launch lends, else the
/// tiled online-softmax kernel of attention.cu. The choice is made per graph key by
/// exec/device/attention_path.h, which also states the memory contract with the IR; a fallback
/// is said once per reason on the sink (stderr in tawexec). Private to exec/cuda/.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "common/error.h"
#include "exec/device/attention_path.h"
#include "exec/device/device_api.h"

namespace tawpipe::exec::cuda {

/// One per CudaApi (one device, one cuDNN handle created on first use). Execution plans are
/// built once per (shape, dtype, mask, direction) and kept, failures included.
class AttentionRunner {
 public:
  /// `use_cudnn` false: the tiled kernel always (the fallback's own tests).
  AttentionRunner(device::AttentionLog::Sink sink, bool use_cudnn);
  ~AttentionRunner();
  AttentionRunner(const AttentionRunner&) = delete;
  AttentionRunner& operator=(const AttentionRunner&) = delete;

  /// Runs `k` on `stream` (asynchronous, never synchronises the host).
  Status run(const device::KernelLaunch& k, cudaStream_t stream);
  /// Which path each direction took so far (AttentionLog::summary, with or without the
  /// fallback reasons), prefixed with the cuDNN version linked ("cuDNN 9.19.0" or "built without
  /// cuDNN").
  std::string summary(bool reasons = true) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Creates and finalises cuDNN's backend descriptor of every tensor and operation of `g` (these
/// need neither a handle nor a device; the operation graph, heuristics and plan do), returning
/// how many. Error: the first descriptor cuDNN refuses, with cuDNN's message; "built without
/// cuDNN" without it.
Expected<std::size_t> finalize_graph_descriptors(const device::SdpaGraph& g);

/// The graph key of an attention launch (shape s[0..3], s[4] = 1 for a full mask, dtype).
device::SdpaKey sdpa_key(const device::KernelLaunch& k);

}  // namespace tawpipe::exec::cuda
