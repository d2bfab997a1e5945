/// \file
/// The canonical text dump of a Program: deterministic, line-oriented, readable by eye and
/// diff-friendly. Golden tests compare it byte for byte, so any change to the format is a
/// re-bless of every golden file.
///
/// Layout (one item per line, fields separated by single spaces, `key=value` where named):
///   tawpipe-ir <format_version>
///   schedule <name> [<option>=<value> ...]
///   model <name> layers=<n> params=<n>
///   train seq_len=<n> micro_batch_size=<n> micro_batches=<n> global_batch=<n> dtype=<d>
///         recompute=<r>                                          (one line)
///   topology <name> hash=<h> placement=[<gpu> ...]
///   ranks <P> streams <S> communicators <C> costs <K>
///   stream <id> <name>
///   comm <id> <name> members=[<rank> ...]
///   cost <id> gemm=<flops>/<bytes> attention=<flops>/<bytes> elementwise=<flops>/<bytes>
///        recompute=<flops> workspace=<bytes>                      (one line)
///   rank <r> buffers <n> ops <m>
///   r<r> buf <id> <name> <role> persistent|transient <bytes> [init=<tensor>]
///   r<r> #<op> <stream> <kind> <details...> deps=[...]
/// Byte counts print as `<pretty>(<exact>)`, e.g. `806.4MB(806400000)`; numbers below 1000 print
/// exactly. Doubles print with `%.17g` (exact). Tensors print as `weights[0,4)`,
/// `weights[0,4)p1/4`, `gradient[-1,0)`, `act(s3@2)`, `actgrad(s3@4)`, `none`.
#pragma once

#include <string>

#include "common/ir/program.h"

namespace tawpipe::ir {

/// The whole program as canonical text (see the file comment). Never fails: ids out of range
/// print as `?<id>`, so it can also show a broken program.
std::string dump_text(const Program& program);

/// One op on one line, as in the dump (`r0 #12 comm broadcast ...`), with or without its
/// `deps=[...]` suffix. Robust against out-of-range ids like dump_text.
std::string describe_op(const Program& program, Rank rank, OpIndex op, bool with_deps = true);

/// A tensor reference in the dump's notation (`weights[0,4)p1/4`, `act(s3@2)`, ...).
std::string describe_tensor(const TensorRef& tensor);

/// A byte count in the dump's notation: exact below 1000, else `806.4MB(806400000)`.
std::string describe_bytes(std::uint64_t bytes);

}  // namespace tawpipe::ir
