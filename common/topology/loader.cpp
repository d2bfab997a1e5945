// Loader entry points: file reading, name resolution and the list of shipped topologies.
#include "common/topology/loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/strings.h"
#include "common/topology/spec.h"

namespace tawpipe::topo {

namespace {
// Files larger than this are not topologies (guards against reading /dev/zero and the like).
constexpr std::uintmax_t kMaxFileBytes = 16u << 20;
}  // namespace

Expected<Topology> load_topology_string(std::string_view yaml_text, std::string_view display_name,
                                        const std::vector<Override>& overrides) {
  const std::string file(display_name);
  auto spec = detail::parse_spec(yaml_text, file, overrides);
  if (!spec.ok()) return std::move(spec).error();
  return detail::build_topology(std::move(spec).value(), file);
}

Expected<Topology> load_topology_file(const std::filesystem::path& path,
                                      const std::vector<Override>& overrides) {
  const std::string file = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Error{"no such topology file", file, 1, 1, ""};
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxFileBytes) {
    return Error{"cannot read topology file (unreadable or larger than 16 MiB)", file, 1, 1, ""};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot open topology file", file, 1, 1, ""};
  std::ostringstream text;
  text << in.rdbuf();
  return load_topology_string(text.str(), file, overrides);
}

std::filesystem::path topology_dir() {
  if (const char* env = std::getenv("TAWPIPE_TOPOLOGY_DIR"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env);
  }
  return std::filesystem::path(TAWPIPE_SOURCE_DIR) / "topologies";
}

Expected<std::filesystem::path> resolve_topology(std::string_view name_or_path) {
  if (name_or_path.empty()) return make_error("empty topology name");
  const std::filesystem::path given{std::string(name_or_path)};
  const bool bare = name_or_path.find('/') == std::string_view::npos && !given.has_extension();
  std::error_code ec;
  if (!bare) {
    if (std::filesystem::is_regular_file(given, ec)) return given;
    // `--topology 3x8-a100.yaml` from any directory: a file name alone also names a shipped file.
    const std::filesystem::path shipped = topology_dir() / given;
    if (name_or_path.find('/') == std::string_view::npos &&
        std::filesystem::is_regular_file(shipped, ec)) {
      return shipped;
    }
    return Error{"no such topology file", given.string(), 0, 0, ""};
  }
  const std::filesystem::path candidate = topology_dir() / (std::string(name_or_path) + ".yaml");
  if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  std::vector<std::string> names;
  for (const auto& t : list_shipped_topologies())
    names.push_back(t.name);
  return make_error("unknown topology '" + std::string(name_or_path) + "'" +
                    did_you_mean(name_or_path, names) + " (looked for " + candidate.string() +
                    "; known: " + join(names, ", ") + ")");
}

std::vector<TopologyListing> list_shipped_topologies() {
  std::vector<TopologyListing> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(topology_dir(), ec);
  if (ec) return out;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto& p = it->path();
    if (p.extension() != ".yaml") continue;
    TopologyListing t{p.stem().string(), ""};
    try {
      const YAML::Node root = YAML::LoadFile(p.string());
      const YAML::Node desc = root.IsMap() ? root["description"] : YAML::Node();
      t.description = desc.IsScalar() ? desc.Scalar() : "(no description)";
    } catch (const YAML::Exception& e) {
      t.description = "(unreadable: " + e.msg + ")";
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const TopologyListing& a, const TopologyListing& b) { return a.name < b.name; });
  return out;
}

}  // namespace tawpipe::topo
