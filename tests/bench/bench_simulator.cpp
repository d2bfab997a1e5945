// Simulating one iteration of each schedule (issue 4, acceptance 5). Generation is done once,
// outside the timed loop; the timed part is sim::simulate (executor tables, event loop, report).
//  - paper: 3x8-a100, llama-h4096-l48, seq 16384, micro-batch 1, global batch 1536 (the TawPipe
//    paper's headline configuration). Target <= 200 ms per method.
//  - cluster: 128x8-h100-ndr, llama3-70b, seq 8192, 8 micro-batches per worker, bf16; tawpipe /
//    weipipe / 1f1b in pipelines of 16 GPUs (dp = 64), fsdp fully sharded over all 1024 ranks
//    (the configuration of bench_schedules). Target <= 5 s and <= 4 GiB RSS per method.
//  - cpu_default: tawsim's default command on each CPU topology (`tawsim --topology T`: every
//    method, folded where tawsim folds, the topology's default workload, sim/cli/host_defaults.h).
//    The guard for session 13's regression (the paper's workload on localhost-cpu ran > 13 min).
//    Target: seconds for all methods. CTest runs it once (bench_simulator_cpu_smoke).
//  - cpu_long: an op far longer than the compute slice on a CPU topology (llama-h4096-l48, seq
//    4096, one micro-batch per rank: ~9 simulated hours of compute per rank); `events` shows what
//    the core sharing costs per simulated second (sim/run/core_sharing.h: one event per 20 ms
//    request).
// `peak_rss_MiB` is the process's peak resident set (getrusage) after the run, program included;
// run one method per process for a per-method figure: --benchmark_filter=cluster/fsdp.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <map>
#include <memory>
#include <string>

#include "common/model/presets.h"
#include "common/topology/loader.h"
#include "schedules/schedule.h"
#include "schedules/workload.h"
#include "sim/cli/host_defaults.h"
#include "sim/fold/fold.h"
#include "sim/simulator.h"

namespace {

using tawpipe::schedules::ScheduleInput;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

const tawpipe::topo::Topology& topology(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tawpipe::topo::Topology>> cache;
  auto& slot = cache[name];
  if (!slot) {
    auto t = tawpipe::topo::load_topology_file(tawpipe::topo::topology_dir() / (name + ".yaml"));
    slot = std::make_unique<tawpipe::topo::Topology>(std::move(t.value()));
  }
  return *slot;
}

ScheduleInput input_for(const tawpipe::topo::Topology& t) {
  ScheduleInput in;
  for (int g = 0; g < t.num_gpus(); ++g)
    in.node_of_rank.push_back(t.node_of(g));
  in.topology_name = t.name();
  in.topology_hash = t.content_hash();
  return in;
}

void run(benchmark::State& state, const tawpipe::topo::Topology& t, const ScheduleInput& in,
         const char* method) {
  auto program = tawpipe::schedules::generate(method, in);
  if (!program.ok()) {
    state.SkipWithError(program.error().to_string().c_str());
    return;
  }
  tawpipe::sim::SimOptions options;
  options.model = in.model;
  double iteration_s = 0.0, mfu = 0.0, events = 0.0;
  for (auto _ : state) {
    auto out = tawpipe::sim::run_simulation(*program, t, options);
    if (!out.ok()) {
      state.SkipWithError(out.error().to_string().c_str());
      return;
    }
    iteration_s = out->report.iteration_time.seconds();
    mfu = out->report.mfu;
    events = static_cast<double>(out->events);
    benchmark::DoNotOptimize(out);
  }
  state.counters["sim_iteration_s"] = iteration_s;
  state.counters["mfu"] = mfu;
  state.counters["events"] = events;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void paper(benchmark::State& state, const char* method) {
  const auto& t = topology("3x8-a100");
  ScheduleInput in = input_for(t);
  in.model = tawpipe::model::preset("llama-h4096-l48").value();
  in.train.seq_len = 16384;
  in.train.micro_batch_size = 1;
  in.train.global_batch = 1536;
  run(state, t, in, method);
}

void cluster(benchmark::State& state, const char* method, std::int32_t dp) {
  const auto& t = topology("128x8-h100-ndr");
  ScheduleInput in = input_for(t);
  in.model = tawpipe::model::preset("llama3-70b").value();
  in.train.seq_len = 8192;
  in.train.micro_batch_size = 1;
  in.train.micro_batches = 8;
  in.train.global_batch = 0;
  in.train.compute_dtype = tawpipe::model::DType::kBf16;
  in.dp = dp;
  run(state, t, in, method);
}

// Every method of `spec` as tawsim runs them (generated, verified and folded per method, inside
// the timed loop: what the command costs).
void workload_methods(benchmark::State& state, tawpipe::schedules::WorkloadSpec spec,
                      bool model_given, const char* methods) {
  auto w = tawpipe::cli::resolve_with_host_defaults(spec, model_given, {}, nullptr);
  auto variants = tawpipe::schedules::parse_schedule_list(methods);
  if (!w.ok() || !variants.ok()) {
    state.SkipWithError(w.ok() ? variants.error().to_string().c_str()
                               : w.error().to_string().c_str());
    return;
  }
  tawpipe::sim::SimOptions options;
  options.verify = true;
  options.model = w->model;
  double iteration_s = 0.0, events = 0.0;
  for (auto _ : state) {
    iteration_s = 0.0;
    events = 0.0;
    std::string error;
    for (const auto& v : *variants) {
      auto out = tawpipe::sim::simulate_workload(*w, v, options, true);
      if (!out.ok()) {  // a method the workload does not fit (tawsim prints n/a)
        error = out.error().to_string();
        continue;
      }
      iteration_s += out->output.report.iteration_time.seconds();
      events += static_cast<double>(out->output.events);
    }
    if (events == 0.0) {
      state.SkipWithError(("no method simulated: " + error).c_str());
      return;
    }
  }
  state.counters["sim_iteration_s"] = iteration_s;  // summed over the methods
  state.counters["events"] = events;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void cpu_default(benchmark::State& state, const char* topology) {
  workload_methods(state, {topology, "llama-h4096-l48", {}}, false, "all");
}

void cpu_long(benchmark::State& state, const char* topology) {
  workload_methods(state,
                   {topology,
                    "llama-h4096-l48",
                    {"train.seq_len=4096", "train.micro_batches=1", "train.global_batch=0"}},
                   true, "fsdp");
}

}  // namespace

BENCHMARK_CAPTURE(cpu_default, localhost_cpu, "localhost-cpu")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cpu_default, x2x2_cpu, "2x2-cpu")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cpu_default, x3x2_cpu, "3x2-cpu")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cpu_long, localhost_cpu, "localhost-cpu")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cpu_long, x2x2_cpu, "2x2-cpu")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(paper, tawpipe, "tawpipe")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(paper, weipipe, "weipipe")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(paper, fsdp, "fsdp")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(paper, onefoneb, "1f1b")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(cluster, tawpipe, "tawpipe", 64)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(cluster, weipipe, "weipipe", 64)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(cluster, fsdp, "fsdp", 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(cluster, onefoneb, "1f1b", 64)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
