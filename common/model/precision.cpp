#include "common/model/precision.h"

#include "common/model/named_enum.h"

namespace tawpipe::model {
namespace {

constexpr detail::NameTable<DType, 3> kDTypes{{
    {"bf16", DType::kBf16},
    {"fp16", DType::kFp16},
    {"fp32", DType::kFp32},
}};

constexpr detail::NameTable<RecomputePolicy, 4> kRecompute{{
    {"none", RecomputePolicy::kNone},
    {"selective", RecomputePolicy::kSelective},
    {"full", RecomputePolicy::kFull},
    {"selective-op", RecomputePolicy::kSelectiveOp},
}};

constexpr detail::NameTable<LossKernel, 2> kLossKernels{{
    {"fused-fp32", LossKernel::kFusedFp32},
    {"in-place", LossKernel::kInPlace},
}};

}  // namespace

std::string_view to_string(LossKernel kernel) {
  return detail::name_of(kernel, kLossKernels);
}

Expected<LossKernel> parse_loss_kernel(std::string_view text) {
  return detail::parse_named(text, "loss kernel", kLossKernels);
}

std::int64_t dtype_bytes(DType dtype) {
  return dtype == DType::kFp32 ? 4 : 2;
}

std::string_view to_string(DType dtype) {
  return detail::name_of(dtype, kDTypes);
}

Expected<DType> parse_dtype(std::string_view text) {
  return detail::parse_named(text, "dtype", kDTypes);
}

std::string_view to_string(RecomputePolicy policy) {
  return detail::name_of(policy, kRecompute);
}

Expected<RecomputePolicy> parse_recompute(std::string_view text) {
  return detail::parse_named(text, "recompute policy", kRecompute);
}

}  // namespace tawpipe::model
