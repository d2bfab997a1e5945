/// \file
/// Private to common/topology: `--set` overrides applied to the YAML document before the
/// schema reads it (loader.h `Override`), and the schema's key names they may add.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/topology/loader.h"

namespace tawpipe::topo::detail {

/// Applies `--set` overrides to the document before validation (see loader.h `Override`).
/// Errors point at the nearest existing node of the path and list the keys found there.
Status apply_overrides(YAML::Node& root, const std::vector<Override>& overrides,
                       const std::string& file);

/// True for any key name the topology schema defines (a `--set` may add such a key).
bool is_schema_key(std::string_view key);

}  // namespace tawpipe::topo::detail
