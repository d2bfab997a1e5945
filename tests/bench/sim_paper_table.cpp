// The TawPipe paper's model family on its cluster (issue 4, acceptance 4): 3x8-a100, 48 layers,
// hidden 1024/2048/4096, sequence 4096/8192/16384, micro-batch 1, global batch 1536 sequences;
// every method with a generator, plus TawPipe with overlap=off and grouping=off. Prints one
// markdown table row per (model, sequence, method): predicted tokens/s per GPU, MFU, exposed
// communication (mean over ranks, % of the iteration), peak memory (max over ranks) and OOM.
// Not a benchmark: a tool for the closing note.
// Usage: sim_paper_table [topology [KEY=VALUE (a topology --set override)]]
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/model/presets.h"
#include "common/topology/loader.h"
#include "schedules/schedule.h"
#include "sim/simulator.h"

int main(int argc, char** argv) {
  using namespace tawpipe;
  const std::string topo_name = argc > 1 ? argv[1] : "3x8-a100";
  std::vector<topo::Override> overrides;
  if (argc > 2) {
    auto o = topo::parse_override(argv[2]);
    if (!o.ok()) {
      std::fprintf(stderr, "%s\n", o.error().to_string().c_str());
      return 2;
    }
    overrides.push_back(*o);
  }
  auto t = topo::load_topology_file(topo::topology_dir() / (topo_name + ".yaml"), overrides);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.error().to_string().c_str());
    return 2;
  }
  struct Variant {
    const char* label;
    const char* method;
    std::map<std::string, std::string> options;
  };
  const std::vector<Variant> variants = {{"tawpipe", "tawpipe", {}},
                                         {"tawpipe overlap=off", "tawpipe", {{"overlap", "off"}}},
                                         {"tawpipe grouping=off", "tawpipe", {{"grouping", "off"}}},
                                         {"weipipe", "weipipe", {}},
                                         {"fsdp", "fsdp", {}},
                                         {"1f1b", "1f1b", {}}};
  std::printf(
      "| model | seq | method | iteration s | tokens/s/GPU | MFU %% | exposed comm %% | "
      "peak mem GiB |\n|---|---|---|---|---|---|---|---|\n");
  for (const int hidden : {1024, 2048, 4096}) {
    for (const int seq : {4096, 8192, 16384}) {
      for (const Variant& v : variants) {
        schedules::ScheduleInput in;
        for (int g = 0; g < t->num_gpus(); ++g)
          in.node_of_rank.push_back(t->node_of(g));
        in.model = model::preset("llama-h" + std::to_string(hidden) + "-l48").value();
        in.train.seq_len = seq;
        in.train.micro_batch_size = 1;
        in.train.global_batch = 1536;
        in.options = v.options;
        in.topology_name = t->name();
        in.topology_hash = t->content_hash();
        auto p = schedules::generate(v.method, in);
        if (!p.ok()) {
          std::printf("| h%d | %d | %s | generator error: %s |\n", hidden, seq, v.label,
                      p.error().to_string().c_str());
          continue;
        }
        sim::SimOptions o;
        o.model = in.model;
        auto r = sim::simulate(*p, *t, o);
        if (!r.ok()) {
          std::printf("| h%d | %d | %s | sim error: %s |\n", hidden, seq, v.label,
                      r.error().to_string().c_str());
          continue;
        }
        double exposed = 0.0, peak = 0.0;
        bool oom = false;
        for (const auto& s : r->rank_stats) {
          exposed += s.exposed_comm.seconds();
          peak = std::max(peak, static_cast<double>(s.peak_memory_bytes));
          oom = oom || s.oom;
        }
        const double it = r->iteration_time.seconds();
        exposed /= static_cast<double>(r->rank_stats.size());
        std::printf("| h%d | %d | %s | %.1f | %.0f | %.1f | %.1f | %.1f%s |\n", hidden, seq,
                    v.label, it, r->tokens_per_second / r->ranks, 100.0 * r->mfu,
                    100.0 * exposed / it, peak / (1u << 30), oom ? " OOM" : "");
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
