// Issue 15 acceptance 3 in-process: one method-configuration at 1024 and at 16,384 GPUs, as tawsim
// runs it (sim::simulate_workload: replica-compact generation, folding, replica symmetry,
// report), workload resolved outside the timed loop.
//  - scale/<method>/1024:  128x8-h100-ndr, llama3-70b, seq 8192, 8 micro-batches, dp 64
//                          (target: <= 1 s and <= 1 GiB per method, whole process);
//  - scale/<method>/16384: 2048x8-h100-ndr, same workload, dp 1024 (16 ranks per replica, as at
//                          1024 GPUs; target <= 30 s and <= 4 GiB).
// The whole-process figures (wall, peak RSS) come from scripts/bench-scale (--large for 16,384).
// Counters: `replicas_collapsed` (1 means the exact but slow full simulation ran: see the
// symmetry note, sim/symmetry/symmetry.h), `uneven_links`, `sim_iteration_s`, and
// `peak_rss_MiB` (getrusage, the process so far: run one benchmark per process for a figure).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include "schedules/workload.h"
#include "sim/fold/fold.h"

namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

void scale(benchmark::State& state, const char* method, const char* topology, int dp) {
  tawpipe::schedules::WorkloadSpec spec;
  spec.topology = topology;
  spec.model = "llama3-70b";
  spec.sets = {"train.seq_len=8192", "train.micro_batches=8", "train.global_batch=0",
               "dp=" + std::to_string(dp)};
  auto w = tawpipe::schedules::resolve_workload(spec);
  if (!w.ok()) {
    state.SkipWithError(w.error().to_string().c_str());
    return;
  }
  tawpipe::sim::SimOptions options;
  options.model = w->model;
  double iteration_s = 0.0, collapsed = 0.0, uneven = 0.0;
  for (auto _ : state) {
    auto out = tawpipe::sim::simulate_workload(*w, {method, {}, method}, options, true);
    if (!out.ok()) {
      state.SkipWithError(out.error().to_string().c_str());
      return;
    }
    iteration_s = out->output.report.iteration_time.seconds();
    collapsed = out->fold.replicas_collapsed;
    uneven = out->output.uneven_links;
    benchmark::DoNotOptimize(out);
  }
  state.counters["sim_iteration_s"] = iteration_s;
  state.counters["replicas_collapsed"] = collapsed;
  state.counters["uneven_links"] = uneven;
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void register_all() {
  for (const char* method : {"tawpipe", "weipipe", "fsdp", "1f1b"}) {
    benchmark::RegisterBenchmark((std::string("scale/") + method + "/1024").c_str(), scale, method,
                                 "128x8-h100-ndr", 64)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark((std::string("scale/") + method + "/16384").c_str(), scale, method,
                                 "2048x8-h100-ndr", 1024)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
