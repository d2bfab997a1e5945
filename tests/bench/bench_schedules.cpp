// Generating and verifying each schedule at cluster scale (issue 3, acceptance 5): 128 nodes x 8
// GPUs = 1024 ranks, llama3-70b, sequence 8192, 8 micro-batches per worker; the pipelines of
// tawpipe / weipipe / 1f1b are 16 GPUs long (dp = 64), fsdp is fully sharded over all 1024.
// Targets: <= 2 s and <= 2 GiB per method. Time is wall-clock (UseRealTime: generation and the
// verifier's per-rank stages use all hardware threads, ScheduleInput::threads and
// VerifyOptions::threads); `peak_rss_MiB` is the process's peak resident set after the run
// (getrusage), so run one method per process for a per-method figure, e.g.
// bench_schedules --benchmark_filter=generate_and_verify/fsdp --benchmark_repetitions=3.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include "common/ir/verifier.h"
#include "common/model/presets.h"
#include "schedules/schedule.h"

namespace {

using tawpipe::schedules::ScheduleInput;

ScheduleInput cluster_input(std::int32_t dp) {
  ScheduleInput in;
  in.node_of_rank = tawpipe::schedules::uniform_nodes(128, 8);
  in.model = tawpipe::model::preset("llama3-70b").value();
  in.train.seq_len = 8192;
  in.train.micro_batch_size = 1;
  in.train.micro_batches = 8;
  in.train.global_batch = 0;
  in.train.compute_dtype = tawpipe::model::DType::kBf16;
  in.dp = dp;
  in.topology_name = "128x8-h100-ndr";
  return in;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void generate_and_verify(benchmark::State& state, const char* method, std::int32_t dp) {
  const ScheduleInput in = cluster_input(dp);
  std::uint64_t ops = 0;
  for (auto _ : state) {
    auto p = tawpipe::schedules::generate(method, in);
    if (!p.ok()) {
      state.SkipWithError(p.error().message.c_str());
      return;
    }
    const tawpipe::ir::VerifyResult v = tawpipe::ir::verify(*p);
    if (!v.ok) {
      state.SkipWithError(v.message.c_str());
      return;
    }
    ops = v.stats.total_ops;
    benchmark::DoNotOptimize(ops);
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void generate_only(benchmark::State& state, const char* method, std::int32_t dp) {
  const ScheduleInput in = cluster_input(dp);
  for (auto _ : state) {
    auto p = tawpipe::schedules::generate(method, in);
    benchmark::DoNotOptimize(p);
  }
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

BENCHMARK_CAPTURE(generate_and_verify, tawpipe, "tawpipe", 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(generate_and_verify, weipipe, "weipipe", 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(generate_and_verify, onefoneb, "1f1b", 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(generate_and_verify, fsdp, "fsdp", 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(generate_only, tawpipe, "tawpipe", 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(generate_only, weipipe, "weipipe", 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(generate_only, onefoneb, "1f1b", 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(generate_only, fsdp, "fsdp", 1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
