// tawexec: runs a schedule's IR for real. `mpirun -np P tawexec --backend host ...` trains the
// model with one MPI process per rank, optionally verifies the result against the single-process
// reference (--verify), and writes the measured report and trace in the simulator's schema.
// `tawexec calibrate` measures the machine for `tawsim --profile`.
//
// Interleaved launch (several --schedule items or --ir files, host backend): every program gets
// its own backend (buffers, communicators, stream threads) and interpreter in the same processes;
// after --warmup rounds, each of --steps rounds runs one step of every program in
// exec::interleave_order (from its round --interleave-start), so that a slow phase of the machine
// hits every program alike and two programs' steps of one round are seconds apart. Each program
// trains independently and is verified against its own reference; each gets its own report
// (--report once per program).
//
// Exit status: 0 success; 1 --verify failed or a run-time failure (watchdog timeout, MPI error:
// then every rank is aborted with MPI_Abort); 2 bad input (one line on stderr, from rank 0).
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <mpi.h>
#include <boost/program_options.hpp>

#include "common/io.h"
#include "common/ir/json.h"
#include "common/report/report.h"
#include "common/report/trace.h"
#include "exec/cli_support.h"
#include "exec/host/calibrate.h"
#include "exec/host/calibrate_comm.h"
#include "exec/host/collect.h"
#include "exec/host/cpu_account.h"
#include "exec/host/doorbell.h"
#include "exec/host/host_backend.h"
#include "exec/host/mpi_ops.h"
#include "exec/host/pin.h"
#include "exec/interpreter.h"
#include "exec/math/gemm.h"
#include "exec/measure.h"
#include "exec/reference.h"
#include "exec/run_setup.h"
#include "schedules/workload.h"
#ifdef TAWPIPE_HAVE_CUDA_BACKEND
#include "exec/cuda/cuda_run.h"
#endif

namespace po = boost::program_options;
using namespace tawpipe;

namespace {

using exec::cli::kExitFailed;
using exec::cli::kExitOk;
using exec::cli::kExitUsage;
using exec::cli::kTawexec;
using exec::cli::world_rank;

struct Options {
  exec::ProgramOptions program;  ///< shared by every program; schedule/ir_file set per program
  std::vector<std::string> schedules, ir_files;
  std::string backend = "host";
  std::int64_t steps = 1;
  std::int64_t warmup = 0;
  std::int64_t interleave_start = 0;
  bool verify = false;
  std::vector<std::string> report_files, trace_files;
  std::string emit_ir, step_times_file;
  double timeout = 0.0;
  std::optional<std::string> seq_len, micro_batch, micro_batches, global_batch, seed;
  std::optional<int> dp;
};

const char* kExamples = R"(Examples:
  mpirun -np 4 tawexec --backend host --topology 2x2-cpu --model tiny --schedule tawpipe --verify
  mpirun -np 6 tawexec --topology 3x2-cpu --schedule weipipe[variant=naive] --steps 3 --verify
  mpirun -np 4 tawexec --topology 2x2-cpu --schedule fsdp --steps 5 --warmup 1 --report m.json
  mpirun -np 4 tawexec --ir run.ir.json --verify --timeout 30
  mpirun -np 4 tawexec --schedule tawpipe,fsdp --steps 6 --warmup 1 --report t.json \
    --report f.json --step-times steps.tsv    (interleaved: one step of each per round)
  mpirun -np 2 tawexec calibrate --backend host --topology localhost-cpu --output profile.yaml
)";

std::optional<double> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v) return std::nullopt;
  return d;
}

void add_flag_sets(const Options& o, std::vector<std::string>& sets) {
  if (o.seq_len) sets.push_back("train.seq_len=" + *o.seq_len);
  if (o.micro_batch) sets.push_back("train.micro_batch_size=" + *o.micro_batch);
  if (o.micro_batches) {
    sets.push_back("train.micro_batches=" + *o.micro_batches);
    if (!o.global_batch) sets.push_back("train.global_batch=0");
  }
  if (o.global_batch) {
    sets.push_back("train.global_batch=" + *o.global_batch);
    if (!o.micro_batches) sets.push_back("train.micro_batches=0");
  }
  if (o.seed) sets.push_back("train.seed=" + *o.seed);
  if (o.dp) sets.push_back("dp=" + std::to_string(*o.dp));
}

/// The programs the options name, in order: every --ir file (they win over --schedule, as with
/// one), else every item of every --schedule (each a method or a comma list; default tawpipe).
Expected<std::vector<exec::ProgramOptions>> program_list(const Options& o) {
  std::vector<exec::ProgramOptions> out;
  for (const std::string& file : o.ir_files) {
    out.push_back(o.program);
    out.back().ir_file = file;
  }
  if (!out.empty()) return out;
  const std::vector<std::string> given =
      o.schedules.empty() ? std::vector<std::string>{"tawpipe"} : o.schedules;
  for (const std::string& text : given) {
    auto variants = schedules::parse_schedule_list(text);
    if (!variants.ok()) return variants.error();
    for (const schedules::ScheduleVariant& v : *variants) {
      out.push_back(o.program);
      out.back().schedule = v.label;
    }
  }
  return out;
}

/// One program of the launch with everything it runs on: its own backend (buffers, MPI
/// communicators, stream threads) and interpreter; the programs of one launch share only the
/// processes, so each trains exactly as it would alone.
struct Job {
  exec::PreparedRun run;
  std::unique_ptr<exec::host::HostBackend> backend;
  std::unique_ptr<exec::Interpreter> interpreter;
  /// Per step of this program, on this rank: loss sum, iteration time (s), begin (s on the
  /// backend's CLOCK_MONOTONIC), summed time of its compute ops (s), the round and the position
  /// in it.
  std::vector<double> loss_sums, times, begins, compute;
  std::vector<std::int64_t> rounds, positions;
  exec::IterationRecord last;
  /// Wake-ups of the communication threads' waits and where the cores' time went
  /// (exec/host/cpu_account.h) over the timed steps, each with the barrier that follows it.
  exec::host::WaitSleeps sleeps;
  exec::host::CpuSnapshot cpu;
};

/// "" with one program (the output of a single run stays as it was), "#k LABEL: " with several.
std::string job_prefix(const std::vector<std::unique_ptr<Job>>& jobs, std::size_t k) {
  if (jobs.size() == 1) return "";
  return fmt::format("#{} {}: ", k + 1, jobs[k]->run.label);
}

/// --verify of one program (collective: every rank calls it for every program, in order):
/// its losses of every step and its final weights against its own single-process reference.
/// Returns the verdict on rank 0 (true elsewhere).
bool verify_job(Job& job, const std::string& prefix, const std::vector<double>& losses,
                std::int64_t total_steps, int rank) {
  const ir::Program& program = job.run.program;
  std::optional<exec::ReferenceTrainer> reference;
  bool verdict = true;
  if (rank == 0) {
    exec::ReferenceConfig rc;
    rc.model = job.run.model;
    rc.seq_len = program.header.seq_len;
    rc.micro_batch_size = program.header.micro_batch_size;
    rc.samples = exec::program_samples(program);
    rc.optimizer = job.run.train.optimizer;
    rc.seed = job.run.train.seed;
    auto t = exec::ReferenceTrainer::create(rc);
    if (!t.ok()) kTawexec.abort_run(t.error().to_string());
    reference.emplace(std::move(*t));
    double worst_loss = 0.0;
    for (std::int64_t step = 0; step < total_steps; ++step) {
      const double want = reference->step();
      const double got = losses[static_cast<std::size_t>(step)];
      const double diff = std::abs(got - want);
      worst_loss = std::max(worst_loss, diff / std::max(1.0, std::abs(want)));
      std::cout << fmt::format("verify: {}step {} loss {:.9f} reference {:.9f} diff {:.2e}\n",
                               prefix, step + 1, got, want, diff);
    }
    verdict = worst_loss <= 1e-5;
    if (!verdict) std::cout << "verify: " << prefix << "FAILED: losses differ by more than 1e-5\n";
  }
  auto check =
      exec::host::check_weights(program, rank, *job.backend, reference ? &*reference : nullptr);
  if (!check.ok()) kTawexec.abort_run(check.error().message);
  if (rank == 0) {
    const bool weights_ok = check->max_relative_diff <= 1e-4;
    std::cout << fmt::format(
        "verify: {}max relative weight difference {:.3e} over {} buffers ({}): {}\n", prefix,
        check->max_relative_diff, check->buffers, check->worst.empty() ? "-" : check->worst,
        weights_ok ? "ok" : "FAILED (limit 1e-4)");
    verdict = verdict && weights_ok;
    if (!prefix.empty()) std::cout << "verify: " << prefix << (verdict ? "PASSED\n" : "FAILED\n");
  }
  return verdict;
}

int run(const Options& o) {
  const int rank = world_rank();
  const int world = exec::cli::world_size();
  auto list = program_list(o);
  if (!list.ok()) return kTawexec.usage_error(list.error().to_string());
  const std::size_t n = list->size();
  if (o.backend == "cuda") {
#ifdef TAWPIPE_HAVE_CUDA_BACKEND
    if (n != 1)
      return kTawexec.usage_error("--backend cuda runs one program per launch, got " +
                                  std::to_string(n));
    return exec::cuda::run_main(
        {list->front(), o.steps, o.warmup, o.report_files.empty() ? "" : o.report_files.front(),
         o.trace_files.empty() ? "" : o.trace_files.front(), o.timeout, o.verify});
#else
    return kTawexec.usage_error(
        "CUDA backend not built (CUDA Toolkit/NCCL not found at configure time)");
#endif
  }
  if (o.backend != "host")
    return kTawexec.usage_error("--backend must be host or cuda, got '" + o.backend + "'");
  if (o.steps < 1 || o.warmup < 0)
    return kTawexec.usage_error("--steps must be >= 1 and --warmup >= 0");
  if (o.interleave_start < 0)
    return kTawexec.usage_error("--interleave-start must be >= 0, got " +
                                std::to_string(o.interleave_start));
  if (o.timeout < 0) return kTawexec.usage_error("--timeout must be >= 0 seconds");
  for (const auto* files : {&o.report_files, &o.trace_files}) {
    if (!files->empty() && files->size() != n) {
      return kTawexec.usage_error(fmt::format("--{}: give one per program ({} programs, {} given)",
                                              files == &o.report_files ? "report" : "trace", n,
                                              files->size()));
    }
  }
  if (n > 1 && !o.emit_ir.empty())
    return kTawexec.usage_error(
        fmt::format("--emit-ir writes one program, got {} (give one --schedule)", n));

  std::vector<std::unique_ptr<Job>> jobs;
  for (const exec::ProgramOptions& po : *list) {
    auto prepared = exec::prepare_run(po);
    if (!prepared.ok()) return kTawexec.usage_error(prepared.error().to_string());
    jobs.push_back(std::make_unique<Job>());
    jobs.back()->run = std::move(*prepared);
  }
  if (!o.emit_ir.empty()) {
    if (rank == 0) {
      Status s = write_file_with(o.emit_ir, [&](std::ostream& out) {
        ir::write_program_json(jobs.front()->run.program, out);
        return Status::success();
      });
      if (!s.ok()) return kTawexec.usage_error(s.error().to_string());
    }
    MPI_Finalize();
    return kExitOk;
  }
  for (const auto& job : jobs) {
    const ir::Program& program = job->run.program;
    if (program.num_ranks() != world) {
      return kTawexec.usage_error(fmt::format(
          "{}the program has {} ranks but {} processes run; start it with mpirun -np {}",
          n == 1 ? "" : job->run.label + ": ", program.num_ranks(), world, program.num_ranks()));
    }
    // One process per rank, pinned once: every program must place its ranks alike.
    if (program.header.placement != jobs.front()->run.program.header.placement) {
      return kTawexec.usage_error(
          fmt::format("{}: the program places its ranks on other devices than {} (programs of "
                      "one launch must share the placement)",
                      job->run.label, jobs.front()->run.label));
    }
  }

  exec::math::use_single_blas_thread();
  const exec::PreparedRun& first = jobs.front()->run;
  if (first.host_cpu && std::getenv("TAWPIPE_NO_PIN") == nullptr) {
    // Before the backends' stream threads exist: they inherit the core.
    const auto gpu = first.program.header.placement[static_cast<std::size_t>(rank)];
    auto core = exec::host::pin_to_core(*first.host_cpu, gpu);
    if (!core.ok()) kTawexec.say("rank " + std::to_string(rank) + ": " + core.error().message);
  }
  exec::InterpreterOptions io;
  io.timeout_seconds = o.timeout;
  if (auto stall = env_number("TAWPIPE_TEST_STALL_RANK");
      stall && static_cast<int>(*stall) == rank) {
    io.stall_op = static_cast<ir::OpIndex>(env_number("TAWPIPE_TEST_STALL_OP").value_or(0));
    io.stall_seconds = env_number("TAWPIPE_TEST_STALL_SECONDS").value_or(3600);
  }
  // Every program gets its own backend (communicators created in program order on every rank).
  for (const auto& job : jobs) {
    exec::host::HostOptions ho;
    ho.model = job->run.model;
    ho.optimizer = job->run.train.optimizer;
    ho.seed = job->run.train.seed;
    job->backend = std::make_unique<exec::host::HostBackend>(ho);
    if (Status s = job->backend->prepare(job->run.program, rank); !s.ok()) {
      return kTawexec.usage_error((n == 1 ? "" : job->run.label + ": ") + s.error().to_string());
    }
    job->interpreter =
        std::make_unique<exec::Interpreter>(job->run.program, rank, *job->backend, io);
  }

  const std::int64_t total_steps = o.warmup + o.steps;
  // Rounds: --warmup rounds in program order, then --steps rounds in interleave_order; each
  // round runs one step of every program (with one program: its steps, as always). Per step,
  // this rank's loss sum and iteration time, reduced over the ranks after the last step: a
  // blocking MPI call between steps polls with sched_yield (mpi_yield_when_idle), and a rank that
  // finished early would take its core from the rank sharing it that has not.
  // The timed step whose wake-ups and CPU time run from the mark to the next change of program
  // (with one program: from the first timed step to the end, one interval).
  Job* credited = nullptr;
  exec::host::WaitSleeps mark;
  exec::host::CpuSnapshot cpu_mark;
  auto credit = [&](Job* next) {
    if (next == credited) return;
    const exec::host::WaitSleeps now = exec::host::wait_sleeps_of_process();
    exec::host::CpuSnapshot cpu_now = exec::host::take_cpu_snapshot();
    if (credited) {
      credited->sleeps.timer += now.timer - mark.timer;
      credited->sleeps.doorbell += now.doorbell - mark.doorbell;
      exec::host::cpu_accumulate(credited->cpu, exec::host::cpu_difference(cpu_mark, cpu_now));
    }
    credited = next;
    mark = now;
    cpu_mark = std::move(cpu_now);
  };
  for (std::int64_t round = 0; round < total_steps; ++round) {
    std::vector<std::size_t> order(n);
    for (std::size_t k = 0; k < n; ++k)
      order[k] = k;
    if (round >= o.warmup) order = exec::interleave_order(round - o.warmup + o.interleave_start, n);
    for (std::size_t pos = 0; pos < n; ++pos) {
      Job& job = *jobs[order[pos]];
      // Sleeping barrier (MPI_Ibarrier + the backend's wait), for the same reason.
      if (Status s = exec::host::quiet_barrier(MPI_COMM_WORLD); !s.ok())
        kTawexec.abort_run(s.error().message);
      if (round >= o.warmup) credit(&job);
      auto rec = job.interpreter->run_iteration(round);
      if (!rec.ok()) kTawexec.abort_run(job_prefix(jobs, order[pos]) + rec.error().message);
      job.loss_sums.push_back(job.backend->take_loss_sum());
      job.times.push_back(static_cast<double>(rec->end - rec->begin) * 1e-9);
      job.begins.push_back(static_cast<double>(rec->begin) * 1e-9);
      const auto& ops = job.run.program.ranks[static_cast<std::size_t>(rank)].ops;
      exec::Nanos compute_ns = 0;
      for (const exec::OpTiming& t : rec->ops) {
        if (ops[static_cast<std::size_t>(t.op)].kind == ir::OpKind::compute)
          compute_ns += t.end - t.start;
      }
      job.compute.push_back(static_cast<double>(compute_ns) * 1e-9);
      job.rounds.push_back(round);
      job.positions.push_back(static_cast<std::int64_t>(pos));
      job.last = std::move(*rec);
    }
  }
  credit(nullptr);

  const auto steps_done = static_cast<int>(total_steps);
  // Ranks on one host read one CLOCK_MONOTONIC (the host backend's clock), so the reports can put
  // them on one time axis (measured_report: each rank's start offset). Rank 0 decides.
  bool shared_clock = false;
  {
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(host, &length);
    auto hosts =
        exec::host::gather_strings(std::string(host, static_cast<std::size_t>(length)), world);
    if (!hosts.ok()) kTawexec.abort_run(hosts.error().message);
    shared_clock =
        rank == 0 && std::all_of(hosts->begin(), hosts->end(),
                                 [&](const std::string& h) { return h == hosts->front(); });
  }
  int exit_code = kExitOk;
  std::vector<std::vector<double>> job_losses(n);
  std::string step_rows;  // --step-times, rank 0
  for (std::size_t k = 0; k < n; ++k) {
    Job& job = *jobs[k];
    const ir::Program& program = job.run.program;
    const std::string prefix = job_prefix(jobs, k);
    const double tokens = static_cast<double>(exec::program_samples(program).size()) *
                          static_cast<double>(program.header.micro_batch_size) *
                          static_cast<double>(program.header.seq_len);
    // Wake-ups of the communication threads' waits per timed step (the barriers' included), per
    // rank: what the simulator charges as host.wakeup_cost (sim/run/host_cpu.cpp).
    double wake[2] = {static_cast<double>(job.sleeps.timer) / static_cast<double>(o.steps),
                      static_cast<double>(job.sleeps.doorbell) / static_cast<double>(o.steps)};
    auto cpu_lines = exec::host::gather_strings(
        exec::host::describe_threads(job.cpu, static_cast<double>(o.steps)), world);
    if (!cpu_lines.ok()) kTawexec.abort_run(cpu_lines.error().message);
    std::vector<double> wakes(rank == 0 ? 2 * static_cast<std::size_t>(world) : 0);
    MPI_Gather(wake, 2, MPI_DOUBLE, wakes.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    std::vector<double> loss_total(job.loss_sums.size()), slowest(job.times.size());
    MPI_Reduce(job.loss_sums.data(), loss_total.data(), steps_done, MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(job.times.data(), slowest.data(), steps_done, MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    std::vector<double>& losses = job_losses[k];  // per step, rank 0
    for (double l : loss_total)
      losses.push_back(l / tokens);
    // The slowest rank's time per measured iteration (rank 0), in step order.
    const std::vector<double> timed(slowest.begin() + o.warmup, slowest.end());
    // --step-times: compute ops' time per step summed over the ranks (the same work every step:
    // how fast the cores computed in that step).
    std::vector<double> compute(job.compute.size());
    if (!o.step_times_file.empty()) {
      MPI_Reduce(job.compute.data(), compute.data(), steps_done, MPI_DOUBLE, MPI_SUM, 0,
                 MPI_COMM_WORLD);
    }

    auto records = exec::host::gather_records(job.last, world);
    auto peaks = exec::host::gather_u64(job.backend->peak_bytes(), world);
    if (!records.ok()) kTawexec.abort_run(records.error().message);
    if (!peaks.ok()) kTawexec.abort_run(peaks.error().message);
    if (rank != 0) continue;
    exec::Measurement m;
    m.ranks = std::move(*records);
    m.peak_bytes = *peaks;
    // The median: robust to other jobs' bursts on a shared machine.
    std::vector<double> sorted = timed;
    std::sort(sorted.begin(), sorted.end());
    m.mean_iteration_seconds = sorted[sorted.size() / 2];
    m.producer = "tawexec " TAWPIPE_VERSION " (host backend)";
    m.shared_clock = shared_clock;
    const report::Report rep = exec::measured_report(program, job.run.model, m);
    std::uint64_t peak = 0;
    for (std::uint64_t p : *peaks)
      peak = std::max(peak, p);
    std::cout << fmt::format(
        "tawexec: {} on {} ranks: iteration {:.3f} ms (median of {}), {:.0f} tokens/s, peak "
        "buffers "
        "{:.2f} MB/rank, loss {:.6f}\n",
        n == 1 ? program.header.schedule : prefix + program.header.schedule, world,
        m.mean_iteration_seconds * 1e3, o.steps, rep.tokens_per_second,
        static_cast<double>(peak) / 1e6, losses.back());
    // The spread of the timed steps, for telling methods within noise of each other apart.
    std::string steps_ms;
    for (double t : timed)
      steps_ms += fmt::format(" {:.1f}", t * 1e3);
    std::cout << fmt::format(
        "tawexec: {}timed steps (ms, slowest rank):{}; min {:.1f} max {:.1f}\n", prefix, steps_ms,
        sorted.front() * 1e3, sorted.back() * 1e3);
    std::string per_rank;
    for (int r = 0; r < world; ++r)
      per_rank += fmt::format(" {:.0f}+{:.0f}", wakes[2 * static_cast<std::size_t>(r)],
                              wakes[2 * static_cast<std::size_t>(r) + 1]);
    std::cout << fmt::format(
        "tawexec: {}wait wake-ups per timed step (timer+doorbell) by rank:{}\n", prefix, per_rank);
    // CPU accounting per timed step: each rank's thread classes (ms of CPU, ms runnable but
    // waiting for a core, voluntary/involuntary context switches), and the machine's idle.
    for (int r = 0; r < world; ++r)
      std::cout << fmt::format("tawexec: {}cpu per timed step (ms) rank {}: {}\n", prefix, r,
                               (*cpu_lines)[static_cast<std::size_t>(r)]);
    std::cout << fmt::format("tawexec: {}machine per timed step (core-ms, rank 0's steps): {}\n",
                             prefix,
                             exec::host::describe_machine(job.cpu, static_cast<double>(o.steps)));
    for (std::size_t s = 0; s < slowest.size(); ++s) {
      const bool is_timed = static_cast<std::int64_t>(s) >= o.warmup;
      step_rows += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{:.6f}\t{:.3f}\t{:.3f}\n", k + 1,
                               job.run.label, s, is_timed ? 1 : 0, job.rounds[s], job.positions[s],
                               job.begins[s], slowest[s] * 1e3, compute[s] * 1e3);
    }
    const std::string report_file = o.report_files.empty() ? "" : o.report_files[k];
    const std::string trace_file = o.trace_files.empty() ? "" : o.trace_files[k];
    if (!report_file.empty()) {
      Status s = write_file_with(report_file, [&](std::ostream& out) {
        report::write_report_json(rep, out);
        return Status::success();
      });
      if (!s.ok()) {
        kTawexec.say(s.error().to_string());
        exit_code = kExitUsage;
      }
    }
    if (!trace_file.empty()) {
      Status s = write_file_with(trace_file, [&](std::ostream& out) {
        report::write_chrome_trace(program, rep, {}, {}, out);
        return Status::success();
      });
      if (!s.ok()) {
        kTawexec.say(s.error().to_string());
        exit_code = kExitUsage;
      }
    }
  }
  if (rank == 0 && !o.step_times_file.empty()) {
    // One row per step of every program, in program order: round and position say when it ran
    // (rounds count the warm-up ones), begin is rank 0's CLOCK_MONOTONIC at the step's start.
    Status s = write_file_with(o.step_times_file, [&](std::ostream& out) {
      out << "program\tlabel\tstep\ttimed\tround\tposition\tbegin_s\tms_slowest_rank\t"
             "compute_ms_all_ranks\n"
          << step_rows;
      return Status::success();
    });
    if (!s.ok()) {
      kTawexec.say(s.error().to_string());
      exit_code = kExitUsage;
    }
  }

  if (o.verify) {
    int verdict = 1;
    std::string failed;
    for (std::size_t k = 0; k < n; ++k) {
      if (!verify_job(*jobs[k], job_prefix(jobs, k), job_losses[k], total_steps, rank)) {
        verdict = 0;
        failed += fmt::format(" #{} {}", k + 1, jobs[k]->run.label);
      }
    }
    if (rank == 0) {
      std::cout << (verdict ? "verify: PASSED\n"
                            : (n == 1 ? std::string("verify: FAILED\n")
                                      : "verify: FAILED (programs" + failed + ")\n"));
    }
    MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!verdict) exit_code = kExitFailed;
  }
  MPI_Finalize();
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  // glibc serves blocks >= M_MMAP_THRESHOLD (128 KiB, adapting up to 32 MiB) with a fresh mmap
  // and returns them with munmap, and trims the heap above M_TRIM_THRESHOLD: every such
  // allocation then page-faults on first touch. Open MPI's collectives allocate their temporary
  // buffers per call (a reduce-scatter's is the whole message), so a run paid page faults per
  // collective that calibration's warmed-up loops never see. Keep them on the heap (the largest
  // threshold glibc accepts, 32 MiB on 64-bit) and never trim below 1 GiB: freed memory is
  // reused, as a caching allocator would. The backend pools its own buffers (host_backend.cpp).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Blocking MPI calls of the host backend's stream threads poll; make every poll yield the
  // core to the compute threads sharing it (exec/host/mpi_ops.h). An explicit setting wins.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // Library errors come back as values; MPI errors too (no MPI_ERRORS_ARE_FATAL surprises).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_MULTIPLE)
    return kTawexec.usage_error(
        "MPI lacks MPI_THREAD_MULTIPLE support (the host backend runs one thread per IR stream)");
  // Waits for point-to-point messages sleep until the peer rings (exec/host/doorbell.h).
  if (Status s = tawpipe::exec::host::install_doorbells(); !s.ok() && world_rank() == 0)
    std::cerr << "tawexec: warning: no doorbells, waits poll on timers: " << s.error().message
              << "\n";

  if (argc > 1 && std::string(argv[1]) == "calibrate") {
    return tawpipe::exec::host::calibrate_main(argc - 1, argv + 1);
  }
  Options o;
  po::options_description visible("Options");
  // clang-format off
  visible.add_options()
    ("help,h", "print this help with examples")
    ("version", "print the version")
    ("backend", po::value(&o.backend), "host (MPI + OpenBLAS) or cuda [host]")
    ("topology,t", po::value(&o.program.workload.topology), "topology name or YAML path [2x2-cpu]")
    ("model,m", po::value(&o.program.workload.model), "model preset or YAML path [tiny]")
    ("schedule,s", po::value(&o.schedules)->composing(),
     "method, or method[key=value,...] [tawpipe]; several (repeated or a comma list) run "
     "interleaved in one launch")
    ("set", po::value(&o.program.workload.sets)->composing(),
     "KEY=VALUE: train.*, model.*, SCHEDULE.* options, dp, or a topology key path (repeatable)")
    ("dp", po::value<int>()->notifier([&](int v) { o.dp = v; }), "data-parallel replicas [1]")
    ("seq-len", po::value<std::string>()->notifier([&](const std::string& v) { o.seq_len = v; }),
     "tokens per sequence [64]")
    ("micro-batch", po::value<std::string>()->notifier([&](const std::string& v) {
       o.micro_batch = v; }), "sequences per micro-batch [1]")
    ("micro-batches", po::value<std::string>()->notifier([&](const std::string& v) {
       o.micro_batches = v; }), "micro-batches per data-parallel worker [2]")
    ("global-batch", po::value<std::string>()->notifier([&](const std::string& v) {
       o.global_batch = v; }), "sequences per iteration over all workers")
    ("seed", po::value<std::string>()->notifier([&](const std::string& v) { o.seed = v; }),
     "initialisation and data seed [1234]")
    ("ir", po::value(&o.ir_files)->composing(),
     "run this IR (JSON) instead of generating one; repeated: interleaved")
    ("steps", po::value(&o.steps), "measured iterations (each one optimizer step; interleaved: rounds) [1]")
    ("warmup", po::value(&o.warmup), "iterations before the measured ones (they train too) [0]")
    ("interleave-start", po::value(&o.interleave_start),
     "interleaved: the first timed round's place in the rotation of the programs' order, so that "
     "consecutive launches continue one rotation (a whole one is 2 x programs rounds) [0]")
    ("verify", po::bool_switch(&o.verify),
     "compare losses and final weights with the single-process reference; exit 1 on mismatch")
    ("report", po::value(&o.report_files)->composing(),
     "write the measured report (JSON) to FILE (interleaved: once per program, in order)")
    ("trace", po::value(&o.trace_files)->composing(),
     "write the measured Chrome/Perfetto trace to FILE (interleaved: once per program)")
    ("step-times", po::value(&o.step_times_file),
     "write every step's time, round and start of every program to FILE (TSV)")
    ("timeout", po::value(&o.timeout), "watchdog: seconds an op may take before every rank "
                                       "aborts [0 = none]")
    ("emit-ir", po::value(&o.emit_ir), "write the program (JSON) to FILE and exit")
    ("unverified-ir", po::bool_switch(&o.program.unverified_ir),
     "TEST ONLY: skip the verifier's dataflow check (runs deliberately broken programs)");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(visible).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return kTawexec.usage_error(std::string(e.what()) + " (see tawexec --help)");
  }
  if (vm.count("help")) {
    if (world_rank() == 0) {
      std::cout << "Usage: mpirun -np P tawexec [options]\n       tawexec calibrate [options]\n\n"
                << visible << "\n"
                << kExamples;
    }
    MPI_Finalize();
    return kExitOk;
  }
  if (vm.count("version")) {
    if (world_rank() == 0) std::cout << "tawexec " TAWPIPE_VERSION "\n";
    MPI_Finalize();
    return kExitOk;
  }
  add_flag_sets(o, o.program.flag_sets);
  return run(o);
}
