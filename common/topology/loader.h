/// \file
/// Loading cluster topologies from YAML (schema: topologies/README.md), `--set` overrides, and
/// resolution of the names of shipped topologies.
///
/// Every error is a user error returned as a value; it carries the file, the 1-based line and
/// column of the offending YAML node and its key path, e.g.
/// `topologies/x.yaml:12:18: node_templates.dgx.nics[2].bandwidth: missing unit in bandwidth '25'`.
/// The loader never throws, never aborts and never recurses without bound, whatever the input.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/topology/topology.h"

namespace tawpipe::topo {

/// One `--set key.path=value` override, applied to the YAML tree before validation.
/// `key_path` uses dots for mapping keys and `[i]` for sequence items:
/// `inter_node.nic.bandwidth`, `node_templates.dgx.nics[2].bandwidth`. The path must name an
/// existing key, except that its last component may add a key the schema knows (for example
/// an optional field left out of the file). `value` is a YAML scalar, e.g. `12.5GB/s`.
struct Override {
  std::string key_path;
  std::string value;
};

/// Parses `key.path=value` (the text after `--set`). Errors: no '=' or an empty key.
Expected<Override> parse_override(std::string_view text);

/// Reads, applies `overrides`, validates and builds the topology in `path`.
Expected<Topology> load_topology_file(const std::filesystem::path& path,
                                      const std::vector<Override>& overrides = {});

/// Same from text; `display_name` stands in for the file name in errors and `source()`.
Expected<Topology> load_topology_string(std::string_view yaml_text, std::string_view display_name,
                                        const std::vector<Override>& overrides = {});

/// The directory of the shipped topologies: `$TAWPIPE_TOPOLOGY_DIR` if set and non-empty, else
/// `<source dir>/topologies`.
std::filesystem::path topology_dir();

/// A bare name (no '/' and no extension, e.g. `3x8-a100`) resolves to `topology_dir()/NAME.yaml`;
/// anything else is taken as a path; a file name without a folder that does not exist in the
/// current directory is looked up in `topology_dir()` too (`--topology 3x8-a100.yaml`). Errors: the
/// file does not exist (with the closest shipped name as a suggestion for bare names).
Expected<std::filesystem::path> resolve_topology(std::string_view name_or_path);

/// A shipped topology for `--list-topologies`.
struct TopologyListing {
  std::string name;         ///< file stem, usable with `--topology NAME`
  std::string description;  ///< the file's `description:` (or an error note if it fails to load)
};

/// All `*.yaml` files in `topology_dir()`, sorted by name. Reads only each file's `description`.
std::vector<TopologyListing> list_shipped_topologies();

}  // namespace tawpipe::topo
