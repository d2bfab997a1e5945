// `tawexec --backend cuda`: the same loop as the host path of tawexec.cpp over DeviceBackend.
#include "exec/cuda/cuda_run.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <vector>

#include <fmt/core.h>
#include <mpi.h>

#include "common/io.h"
#include "common/report/report.h"
#include "common/report/trace.h"
#include "exec/cli_support.h"
#include "exec/cuda/cuda_api.h"
#include "exec/host/collect.h"
#include "exec/interpreter.h"
#include "exec/measure.h"
#include "exec/reference.h"

namespace tawpipe::exec::cuda {

using cli::kTawexec;

int run_main(const CudaRunOptions& o) {
  if (auto missing = missing_device()) return kTawexec.usage_error(*missing);
  const int rank = cli::world_rank();
  const int world = cli::world_size();
  if (o.steps < 1 || o.warmup < 0)
    return kTawexec.usage_error("--steps must be >= 1 and --warmup >= 0");
  auto prepared = prepare_run(o.program);
  if (!prepared.ok()) return kTawexec.usage_error(prepared.error().to_string());
  const ir::Program& program = prepared->program;
  if (program.num_ranks() != world) {
    return kTawexec.usage_error(
        fmt::format("the program has {} ranks but {} processes run; start it "
                    "with mpirun -np {}",
                    program.num_ranks(), world, program.num_ranks()));
  }
  auto api = make_cuda_api();
  auto boot = make_mpi_bootstrap();
  device::DeviceOptions opts;
  opts.model = prepared->model;
  opts.optimizer = prepared->train.optimizer;
  opts.seed = prepared->train.seed;
  device::DeviceBackend backend(*api, *boot, opts);
  if (Status s = backend.prepare(program, rank); !s.ok())
    kTawexec.abort_rank(s.error().to_string(), cli::kExitUsage);
  InterpreterOptions io;
  io.timeout_seconds = o.timeout_seconds;
  Interpreter interpreter(program, rank, backend, io);

  const std::vector<std::int32_t> samples = program_samples(program);
  const double tokens = static_cast<double>(samples.size()) *
                        static_cast<double>(program.header.micro_batch_size) *
                        static_cast<double>(program.header.seq_len);
  std::vector<double> losses, timed;
  IterationRecord last;
  for (std::int64_t step = 0; step < o.warmup + o.steps; ++step) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto rec = interpreter.run_iteration(step);
    if (!rec.ok()) {
      // The watchdog (or a CUDA/NCCL error): abort the communicators so that no rank stays
      // blocked inside NCCL, then take the job down with the naming line.
      backend.abort_communicators();
      kTawexec.abort_rank(rec.error().message);
    }
    auto mine_loss = backend.take_loss_sum();
    if (!mine_loss.ok()) kTawexec.abort_rank(mine_loss.error().message);
    auto loss = host::reduce_sum(*mine_loss);
    if (!loss.ok()) kTawexec.abort_rank(loss.error().message);
    losses.push_back(*loss / tokens);
    double mine = static_cast<double>(rec->end - rec->begin) * 1e-9, slowest = 0.0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (step >= o.warmup) timed.push_back(slowest);
    last = std::move(*rec);
  }
  auto records = host::gather_records(last, world);
  auto peaks = host::gather_u64(backend.peak_bytes(), world);
  if (!records.ok()) kTawexec.abort_rank(records.error().message);
  if (!peaks.ok()) kTawexec.abort_rank(peaks.error().message);
  int exit_code = cli::kExitOk;
  // --verify: losses, then the final weights of every rank (copied from the devices) against
  // the single-process reference after the same steps. bf16 programs get a bf16-sized tolerance
  // for both (weights stored in bf16 carry 2^-8 relative rounding per scalar).
  const bool bf16 = program.header.dtype == "bf16";
  std::optional<ReferenceTrainer> reference;
  double worst_loss = 0.0;
  if (o.verify && rank == 0) {
    ReferenceConfig rc;
    rc.model = prepared->model;
    rc.seq_len = program.header.seq_len;
    rc.micro_batch_size = program.header.micro_batch_size;
    rc.samples = samples;
    rc.optimizer = prepared->train.optimizer;
    rc.seed = prepared->train.seed;
    auto ref = ReferenceTrainer::create(rc);
    if (!ref.ok()) kTawexec.abort_rank(ref.error().to_string());
    reference.emplace(std::move(*ref));
    for (double got : losses) {
      const double want = reference->step();
      worst_loss = std::max(worst_loss, std::abs(got - want) / std::max(1.0, std::abs(want)));
    }
  }
  host::WeightCheck weights;
  if (o.verify) {
    auto check = host::check_weights(
        program, rank, [&](ir::BufferId b) { return backend.buffer_values(b); }, bf16 ? 2 : 4,
        reference ? &*reference : nullptr);
    if (!check.ok()) kTawexec.abort_rank(check.error().message);
    weights = *check;
  }
  if (rank == 0) {
    Measurement m;
    m.ranks = std::move(*records);
    m.peak_bytes = *peaks;
    std::sort(timed.begin(), timed.end());
    m.mean_iteration_seconds = timed[timed.size() / 2];
    m.producer =
        "tawexec " TAWPIPE_VERSION " (cuda backend; attention " + attention_path(*api, false) + ")";
    const report::Report rep = measured_report(program, prepared->model, m);
    const std::uint64_t peak = *std::max_element(peaks->begin(), peaks->end());
    std::cout << fmt::format(
        "tawexec: {} on {} GPUs: iteration {:.3f} ms (median of {}), {:.0f} tokens/s, peak "
        "device memory {:.2f} MB/rank, loss {:.6f}\n",
        program.header.schedule, world, m.mean_iteration_seconds * 1e3, o.steps,
        rep.tokens_per_second, static_cast<double>(peak) / 1e6, losses.back());
    std::cout << "tawexec: attention: " << attention_path(*api) << "\n";
    auto write = [&](const std::string& file, auto&& fn) {
      if (file.empty()) return;
      Status s = write_file_with(file, [&](std::ostream& out) {
        fn(out);
        return Status::success();
      });
      if (!s.ok()) {
        kTawexec.say(s.error().to_string());
        exit_code = cli::kExitUsage;
      }
    };
    write(o.report_file, [&](std::ostream& out) { report::write_report_json(rep, out); });
    write(o.trace_file,
          [&](std::ostream& out) { report::write_chrome_trace(program, rep, {}, {}, out); });
    if (o.verify) {
      const double loss_limit = bf16 ? 2e-2 : 1e-4, weight_limit = bf16 ? 2e-2 : 1e-4;
      const bool loss_ok = worst_loss <= loss_limit;
      const bool weights_ok = weights.max_relative_diff <= weight_limit;
      std::cout << fmt::format("verify: worst relative loss difference {:.3e} (limit {:.0e}): {}\n",
                               worst_loss, loss_limit, loss_ok ? "ok" : "FAILED");
      std::cout << fmt::format(
          "verify: max relative weight difference {:.3e} over {} buffers ({}) (limit {:.0e}): {}\n",
          weights.max_relative_diff, weights.buffers, weights.worst.empty() ? "-" : weights.worst,
          weight_limit, weights_ok ? "ok" : "FAILED");
      const bool ok = loss_ok && weights_ok;
      std::cout << (ok ? "verify: PASSED\n" : "verify: FAILED\n");
      if (!ok) exit_code = cli::kExitFailed;
    }
  }
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return exit_code;
}

}  // namespace tawpipe::exec::cuda
