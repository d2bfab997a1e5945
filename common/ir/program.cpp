#include "common/ir/program.h"

#include <cstddef>

namespace tawpipe::ir {

namespace {

// One name per enumerator, indexed by the enumerator's value. The names are the enumerators'
// own spellings so that the text forms read like the code.
constexpr const char* kOpKindNames[] = {"compute", "send",  "recv", "collective",
                                        "copy",    "alloc", "free"};
constexpr const char* kComputeKindNames[] = {
    "embedding_forward", "forward",   "backward",       "head",           "embedding_backward",
    "accumulate",        "optimizer", "backward_input", "backward_weight"};
constexpr const char* kCollectiveKindNames[] = {"broadcast", "reduce", "all_reduce", "all_gather",
                                                "reduce_scatter"};
constexpr const char* kBufferRoleNames[] = {
    "weights",          "weight_staging", "master_weights",  "optimizer_state", "gradient",
    "gradient_staging", "activation",     "activation_grad", "workspace"};
constexpr const char* kTensorKindNames[] = {"none", "weights", "gradient", "activation",
                                            "activation_grad"};

template <class Enum, std::size_t N>
const char* lookup(const char* const (&names)[N], Enum value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "?";
}

template <class Enum, std::size_t N>
bool reverse_lookup(const char* const (&names)[N], std::string_view text, Enum* out) {
  for (std::size_t i = 0; i < N; ++i) {
    if (text == names[i]) {
      *out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* name(OpKind v) {
  return lookup(kOpKindNames, v);
}
const char* name(ComputeKind v) {
  return lookup(kComputeKindNames, v);
}
const char* name(CollectiveKind v) {
  return lookup(kCollectiveKindNames, v);
}
const char* name(BufferRole v) {
  return lookup(kBufferRoleNames, v);
}
const char* name(TensorKind v) {
  return lookup(kTensorKindNames, v);
}

bool from_name(std::string_view text, OpKind* out) {
  return reverse_lookup(kOpKindNames, text, out);
}
bool from_name(std::string_view text, ComputeKind* out) {
  return reverse_lookup(kComputeKindNames, text, out);
}
bool from_name(std::string_view text, CollectiveKind* out) {
  return reverse_lookup(kCollectiveKindNames, text, out);
}
bool from_name(std::string_view text, BufferRole* out) {
  return reverse_lookup(kBufferRoleNames, text, out);
}
bool from_name(std::string_view text, TensorKind* out) {
  return reverse_lookup(kTensorKindNames, text, out);
}

}  // namespace tawpipe::ir
