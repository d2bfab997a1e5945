/// \file
/// Text views of a Topology: the `--print-topology` summary, Graphviz output and the canonical
/// YAML dump (which loads back into an equal topology).
#pragma once

#include <ostream>
#include <string>

#include "common/topology/topology.h"

namespace tawpipe::topo {

/// A multi-line human summary: name and hash, nodes and GPUs per group and device kind, link
/// classes with their per-GPU bandwidths, the NIC of every GPU, and the bisection bandwidth.
///
/// Bisection bandwidth: the maximum flow (= minimum cut, per direction, nominal capacities)
/// from the GPUs of the first half of the nodes to the GPUs of the second half (a single node
/// is split by local GPU index), computed with Boost's push-relabel max-flow. This is the
/// node-aligned bisection that data-parallel collectives cross; it is an upper bound on the
/// minimum over all possible bisections.
std::string describe(const Topology& topology);

/// Bisection bandwidth as defined for `describe`. Zero for a single GPU.
Bandwidth bisection_bandwidth(const Topology& topology);

/// Writes the graph in Graphviz DOT: one cluster per node, one edge per physical link pair
/// labelled with its class and capacity.
void write_dot(const Topology& topology, std::ostream& out);

/// The canonical YAML of the topology (normalised schema form: every default made explicit,
/// units formatted to round-trip exactly). Loading it gives an equal topology with the same
/// content hash.
std::string to_yaml(const Topology& topology);

}  // namespace tawpipe::topo
