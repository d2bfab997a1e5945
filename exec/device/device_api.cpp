#include "exec/device/device_api.h"

namespace tawpipe::exec::device {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::bf16:
    case DType::f16:
      return 2;
    case DType::u8:
      return 1;
  }
  return 1;
}

const char* name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::u8:
      return "u8";
    case DType::f16:
      return "f16";
  }
  return "?";
}

const char* name(Collective c) {
  switch (c) {
    case Collective::broadcast:
      return "broadcast";
    case Collective::reduce:
      return "reduce";
    case Collective::all_reduce:
      return "all_reduce";
    case Collective::all_gather:
      return "all_gather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
  }
  return "?";
}

const char* name(Kernel k) {
  switch (k) {
    case Kernel::rmsnorm_forward:
      return "rmsnorm_forward";
    case Kernel::rmsnorm_backward:
      return "rmsnorm_backward";
    case Kernel::rope:
      return "rope";
    case Kernel::attention_forward:
      return "attention_forward";
    case Kernel::attention_backward:
      return "attention_backward";
    case Kernel::swiglu_forward:
      return "swiglu_forward";
    case Kernel::swiglu_backward:
      return "swiglu_backward";
    case Kernel::add:
      return "add";
    case Kernel::embedding_forward:
      return "embedding_forward";
    case Kernel::embedding_backward:
      return "embedding_backward";
    case Kernel::cross_entropy:
      return "cross_entropy";
    case Kernel::adamw:
      return "adamw";
    case Kernel::cast:
      return "cast";
  }
  return "?";
}

}  // namespace tawpipe::exec::device
