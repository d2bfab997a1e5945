#include "common/model/kernel_class.h"

#include "common/model/named_enum.h"

namespace tawpipe::model {
namespace {

constexpr detail::NameTable<KernelClass, kNumKernelClasses> kNames = {{
    {"gemm", KernelClass::gemm},
    {"attention_fwd", KernelClass::attention_fwd},
    {"attention_bwd", KernelClass::attention_bwd},
    {"norm", KernelClass::norm},
    {"rope", KernelClass::rope},
    {"activation", KernelClass::activation},
    {"residual", KernelClass::residual},
    {"softmax_xent", KernelClass::softmax_xent},
    {"embedding", KernelClass::embedding},
    {"optimizer", KernelClass::optimizer},
    {"copy", KernelClass::copy},
}};

}  // namespace

std::string_view to_string(KernelClass c) {
  return detail::name_of(c, kNames);
}

Expected<KernelClass> parse_kernel_class(std::string_view name) {
  return detail::parse_named(name, "kernel class", kNames);
}

}  // namespace tawpipe::model
