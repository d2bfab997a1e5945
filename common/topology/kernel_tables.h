/// \file
/// Internal to common/topology: the `kernels:` block of a device kind (per-kernel rate tables,
/// topology.h KernelTables) in YAML, read and written.
///
///     sm_count: 132
///     kernels:
///       gemm: {best: 794.5TFLOP/s, k_overhead: 128, overhead: 1us}
///       attention:                  # rates at increasing sequence lengths
///         - {pass: fwd, head_dim: 128, causal: true, seq: [512, 1024], rate: [315TFLOP/s,
///         410TFLOP/s]}
///       bandwidth:                  # memory-bound classes: fraction of memory_bandwidth
///         norm: [{width: 1024, fraction: 0.41}, {width: 16384, fraction: 0.84}]
///         residual: 0.88            # a plain number: any width
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>

#include "common/topology/topology.h"
#include "common/yaml_read.h"

namespace tawpipe::topo::detail {

/// Parses a `kernels:` mapping; errors (via yaml::fail) carry file:line:col and the key path.
KernelTables parse_kernel_tables(const yaml::Ctx& c);
/// True for the keys of the block (for did-you-mean on --set paths).
bool is_kernel_table_key(std::string_view key);
/// Writes the block in canonical form (parses back to the same tables).
void emit_kernel_tables(YAML::Emitter& out, const KernelTables& t);

/// Emits `k` as the next map key of `out`, ready for its value.
void key(YAML::Emitter& out, const char* k);

}  // namespace tawpipe::topo::detail
