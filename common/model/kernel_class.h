/// \file
/// Kernel classes: the binding vocabulary shared by the kernel cost model (common/model/kernels.h),
/// the reports (per-kernel-class time shares), host and CUDA calibration, and calibration
/// profiles (common/profile/profile.h). The names are part of the profile and report schemas; do
/// not rename them.
///
///   gemm           dense matrix multiplies (cuBLAS / BLAS): projections, MLP, head, dgrad, wgrad
///   attention_fwd  fused attention forward (FlashAttention / cuDNN SDPA)
///   attention_bwd  fused attention backward
///   norm           RMSNorm / LayerNorm, forward or backward
///   rope           rotary position embedding, forward or backward
///   activation     SwiGLU / GELU, forward or backward
///   residual       residual adds and bias adds
///   softmax_xent   the loss: softmax + cross-entropy (forward and its gradient)
///   embedding      token-embedding gather (forward) / scatter-add (backward)
///   optimizer      the fused AdamW step over a weight shard
///   copy           casts, flatten/unflatten, memcpy of weights or gradients
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "common/error.h"

namespace tawpipe::model {

enum class KernelClass : std::uint8_t {
  gemm,
  attention_fwd,
  attention_bwd,
  norm,
  rope,
  activation,
  residual,
  softmax_xent,
  embedding,
  optimizer,
  copy,
};
inline constexpr int kNumKernelClasses = 11;

/// Every class, in the order above (reports and profile writers list classes in this order).
inline constexpr std::array<KernelClass, kNumKernelClasses> kAllKernelClasses = {
    KernelClass::gemm,      KernelClass::attention_fwd, KernelClass::attention_bwd,
    KernelClass::norm,      KernelClass::rope,          KernelClass::activation,
    KernelClass::residual,  KernelClass::softmax_xent,  KernelClass::embedding,
    KernelClass::optimizer, KernelClass::copy};

/// The schema name ("gemm", "attention_fwd", ...).
std::string_view to_string(KernelClass c);
/// Parses a schema name; unknown names get "did you mean" and the list of known names.
Expected<KernelClass> parse_kernel_class(std::string_view name);

/// True for the classes whose rate is a FLOP rate (gemm, attention_fwd, attention_bwd); the
/// others are memory-bound and are described by an achieved bandwidth.
constexpr bool is_flop_bound(KernelClass c) {
  return c == KernelClass::gemm || c == KernelClass::attention_fwd ||
         c == KernelClass::attention_bwd;
}

}  // namespace tawpipe::model
