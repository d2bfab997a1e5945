// tawsim: the simulator's command line. Parses options, resolves the topology and the model, and
// dispatches to the requested action. All user errors end here as one line on stderr and exit
// status 2 (design.md); nothing is written unless the whole output could be produced.
#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/io.h"
#include "common/model/presets.h"
#include "common/topology/describe.h"
#include "common/topology/loader.h"
#include "common/units.h"

namespace po = boost::program_options;

namespace tawpipe {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

constexpr const char* kDefaultTopology = "3x8-a100";
constexpr const char* kDefaultModel = "llama-h4096-l48";

constexpr const char* kExamples = R"(Examples:
  tawsim --list-topologies
  tawsim --topology 3x8-a100 --print-topology
  tawsim --topology 3x8-a100 --set inter_node.nic.bandwidth=100Gb/s --print-topology
  tawsim --topology topologies/dgx-h100.yaml --dot dgx.dot
  tawsim --model llama3-70b --print-model
)";

struct Options {
  std::string topology = kDefaultTopology;
  std::string model = kDefaultModel;
  std::vector<std::string> sets;
  std::string dot_file;
  bool print_topology = false;
  bool print_model = false;
  bool list_topologies = false;
  bool list_models = false;
};

int fail(const Error& e) {
  std::fprintf(stderr, "tawsim: %s\n", e.to_string().c_str());
  return kExitUsage;
}

void print_model(const model::ModelConfig& m) {
  const model::ParamCounts p = model::param_counts(m);
  std::cout << fmt::format(
      "model {}: {} layers, hidden {}, FFN {}, heads {} (kv {}), vocab {}{}\n"
      "  parameters: {:.3f} B total, {:.3f} B decoder, {} per layer, {:.1f} M embedding\n"
      "  one layer in 16-bit: {}\n",
      m.name, m.layers, m.hidden, m.effective_ffn(), m.heads, m.effective_kv_heads(), m.vocab,
      m.tied_embeddings ? ", tied embeddings" : "", static_cast<double>(p.total) / 1e9,
      static_cast<double>(p.decoder) / 1e9, p.per_layer, static_cast<double>(p.embedding) / 1e6,
      pretty(Bytes(static_cast<std::uint64_t>(p.per_layer) * 2)));
  if (!m.reference.empty()) std::cout << "  source: " << m.reference << "\n";
}

int run(int argc, char** argv) {
  Options o;
  po::options_description visible("Options");
  // clang-format off
  visible.add_options()
    ("help,h", "print this help with examples")
    ("version", "print the version")
    ("topology,t", po::value(&o.topology), "topology name (see --list-topologies) or YAML path "
                                           "[default: 3x8-a100]")
    ("model,m", po::value(&o.model), "model preset (see --list-models) or YAML path "
                                     "[default: llama-h4096-l48]")
    ("set", po::value(&o.sets)->composing(), "KEY=VALUE: override a topology field by its YAML "
                                              "key path, with units (repeatable)")
    ("print-topology", po::bool_switch(&o.print_topology), "print a summary of the topology")
    ("dot", po::value(&o.dot_file), "write the topology graph in Graphviz DOT to FILE")
    ("print-model", po::bool_switch(&o.print_model), "print the model's dimensions and sizes")
    ("list-topologies", po::bool_switch(&o.list_topologies), "list the shipped topologies")
    ("list-models", po::bool_switch(&o.list_models), "list the model presets");
  // clang-format on

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(visible).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(make_error(std::string(e.what()) + " (see tawsim --help)"));
  }
  if (vm.count("help")) {
    std::cout << "Usage: tawsim [options]\n\n" << visible << "\n" << kExamples;
    return kExitOk;
  }
  if (vm.count("version")) {
    std::cout << "tawsim " TAWPIPE_VERSION "\n";
    return kExitOk;
  }
  if (o.list_topologies) {
    for (const auto& t : topo::list_shipped_topologies()) {
      std::cout << fmt::format("{:<22} {}\n", t.name, t.description);
    }
    return kExitOk;
  }
  if (o.list_models) {
    std::cout << model::list_models();
    return kExitOk;
  }

  const bool wants_topology = o.print_topology || !o.dot_file.empty() || !o.print_model;
  if (wants_topology) {
    std::vector<topo::Override> overrides;
    for (const auto& s : o.sets) {
      auto ov = topo::parse_override(s);
      if (!ov.ok()) return fail(ov.error().at("--set", 0, 0, ""));
      overrides.push_back(std::move(*ov));
    }
    auto path = topo::resolve_topology(o.topology);
    if (!path.ok()) return fail(path.error());
    auto topology = topo::load_topology_file(*path, overrides);
    if (!topology.ok()) return fail(topology.error());
    if (!o.dot_file.empty()) {
      Status s = write_file_with(o.dot_file, [&](std::ostream& out) {
        topo::write_dot(*topology, out);
        return Status::success();
      });
      if (!s.ok()) return fail(s.error());
    }
    if (o.print_topology || (o.dot_file.empty() && !o.print_model)) {
      std::cout << topo::describe(*topology);
    }
  }
  if (o.print_model) {
    auto m = model::resolve_model(o.model);
    if (!m.ok()) return fail(m.error());
    print_model(*m);
  }
  return kExitOk;
}

}  // namespace
}  // namespace tawpipe

int main(int argc, char** argv) {
  try {
    return tawpipe::run(argc, argv);
  } catch (const std::exception& e) {
    // Library code reports user errors as values; reaching this is a tawpipe bug.
    std::fprintf(stderr, "tawsim: internal error: %s\n", e.what());
    return 70;
  }
}
