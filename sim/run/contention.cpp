// The executor's contention model (executor_impl.h): communication kernels take compute
// resources from the GPU they run on.
//
// Mechanism. NCCL runs every collective and P2P operation as a CUDA kernel with one thread
// block (CTA) per channel; a channel's block stays resident on its SM for the whole operation,
// including the time it waits for its peer or the network, and it moves the data itself with
// loads, stores and reductions through HBM (NCCL's "Simple"/"LL128"/"LL" primitives,
// src/device/prims_*.h; the channel <-> block mapping is src/enqueue.cc). GEMM and attention
// kernels size their grids for the whole GPU and spread their tiles over the SMs that are free,
// so while NCCL holds h of S SMs they progress at (S - h) / S of their rate; memory-bound
// kernels (norms, element-wise ops, the optimizer, copies) share the HBM bandwidth with NCCL's
// copies. So a compute op whose time alone is t = t_sm + t_mem (t_mem: its memory-bound
// kernels, from the kernel-level cost model) takes
//
//     t * factor,  factor = (t_sm / t) * S / (S - h)  +  (t_mem / t) / (1 - u)
//
// while the load stays constant, with u = min(0.9, HBM bytes/s of NCCL / HBM bandwidth). The
// load changes when a communication op starts or ends on the rank; the compute ops running there
// are then advanced at the old factor and rescheduled at the new one.
//
// HBM traffic of an operation: its bus rate (the bound of its solver variable: channels x
// per-channel rate, or the socket connections' rate; an upper estimate of the rate it gets)
// times the HBM accesses per bus byte on each GPU: a copy step reads the received chunk from
// the FIFO and writes it (2), a reduction step also reads the local input (3) -- NCCL's
// recvCopySend / recvReduceSend primitives. Host-staged transports (sockets without GPUDirect)
// use the same figure; their rates are small.
//
// Where it does not hold (stated, not modelled): a P2P kernel is counted from the moment both
// sides are posted (NCCL launches it when the first side posts, so an early side holds its SMs
// longer), a collective from the moment all members arrived; a send and a receive of one group
// to the same peer count their channels twice (NCCL's channel carries both); GEMM tiles are not
// re-quantised over S - h SMs (kernel_rates.h's wave quantisation uses S).
//
// `--sm-contention X` (ExecOptions::sm_contention > 0) replaces all of this with a flat factor
// 1 + X for compute ops that start while a communication op of their rank is in flight; 0 turns
// contention off. CPU topologies (host backend) share cores instead (core_sharing.h).
#include <algorithm>
#include <cassert>
#include <cmath>

#include "sim/run/executor_impl.h"

namespace tawpipe::sim::detail {

namespace {

/// HBM accesses per bus byte on each GPU (see the file comment).
constexpr double kCopyAccesses = 2.0;
constexpr double kReduceAccesses = 3.0;
/// HBM share NCCL's traffic may take at most: memory-bound kernels always get some bandwidth.
constexpr double kMaxHbmShare = 0.9;

bool reduces(ir::CollectiveKind k) {
  return k == ir::CollectiveKind::all_reduce || k == ir::CollectiveKind::reduce ||
         k == ir::CollectiveKind::reduce_scatter;
}

}  // namespace

void Executor::init_contention() {
  contention_model_ = options_.sm_contention < 0.0 && !topology_.host_cpu();
  if (!contention_model_) return;
  const std::size_t ranks = program_.ranks.size();
  rank_sms_.assign(ranks, 0.0);
  rank_hbm_.assign(ranks, 0.0);
  const auto& placement = program_.header.placement;
  for (std::size_t r = 0; r < ranks && r < placement.size(); ++r) {
    const topo::DeviceKind& kind = topology_.device(placement[r]);
    rank_sms_[r] = static_cast<double>(kind.sm_count);
    rank_hbm_[r] = kind.memory_bandwidth.bytes_per_second();
  }
}

CommLoad Executor::collective_load(const CollectiveChoice& choice, ir::CollectiveKind kind) const {
  CommLoad load;
  if (choice.channels <= 0) return load;
  load.sms = choice.channels;
  if (std::isfinite(choice.bound))
    load.hbm = choice.bound * (reduces(kind) ? kReduceAccesses : kCopyAccesses);
  return load;
}

CommLoad Executor::p2p_load(int channels, double bound) const {
  CommLoad load;
  if (channels <= 0) return load;
  load.sms = channels;
  if (std::isfinite(bound)) load.hbm = bound * kCopyAccesses;
  return load;
}

std::uint8_t Executor::memory_bound_share(const ir::Op& op, const RtOp& rt) const {
  const bool backward =
      op.compute == ir::ComputeKind::backward || op.compute == ir::ComputeKind::backward_input;
  const auto seconds = compute_.class_seconds(rt.rank, op.cost, backward);
  double sm = 0.0, total = 0.0;
  for (std::size_t k = 0; k < seconds.size(); ++k) {
    total += seconds[k];
    const auto cls = static_cast<model::KernelClass>(k);
    if (cls == model::KernelClass::gemm || cls == model::KernelClass::attention_fwd ||
        cls == model::KernelClass::attention_bwd)
      sm += seconds[k];
  }
  if (total <= 0.0) return 0;
  return static_cast<std::uint8_t>(std::lround(255.0 * (total - sm) / total));
}

double Executor::contention_factor(ir::Rank r, std::uint8_t mem_share) const {
  const CommLoad& load = clock_[idx(r)].load;
  const double sms = rank_sms_[idx(r)];
  if (sms <= 0.0 || (load.sms <= 0 && load.hbm <= 0.0)) return 1.0;
  const double held = std::min(static_cast<double>(load.sms), sms - 1.0);
  const double hbm = rank_hbm_[idx(r)];
  const double u = hbm > 0.0 ? std::min(kMaxHbmShare, load.hbm / hbm) : 0.0;
  const double m = static_cast<double>(mem_share) / 255.0;
  return (1.0 - m) * sms / (sms - held) + m / (1.0 - u);
}

void Executor::start_compute_contended(std::size_t g, SimTime work) {
  const RtOp& op = rt_[g];
  RankClock& c = clock_[idx(op.rank)];
  RunningCompute run;
  run.g = static_cast<std::uint32_t>(g);
  run.mem_share = op.mem_share;
  run.work_ps = static_cast<double>(work.picoseconds());
  run.factor = contention_factor(op.rank, op.mem_share);
  run.last = engine_.now();
  run.done = engine_.schedule_after(
      SimTime::ps(static_cast<std::int64_t>(std::ceil(run.work_ps * run.factor))),
      Event{handler_, kOpDone, g});
  c.running.push_back(run);
}

void Executor::finish_compute_contended(std::size_t g) {
  auto& running = clock_[idx(rt_[g].rank)].running;
  const auto it = std::find_if(running.begin(), running.end(),
                               [g](const RunningCompute& x) { return x.g == g; });
  if (it != running.end()) running.erase(it);
}

void Executor::shift_load(ir::Rank r, const CommLoad& load, int sign) {
  RankClock& c = clock_[idx(r)];
  c.load.sms += sign * load.sms;
  c.load.hbm += sign * load.hbm;
  assert(c.load.sms >= 0 && "a communication op's load removed more often than added");
  if (c.load.hbm < 1e-6) c.load.hbm = 0.0;  // rounding residue of sums of rates
  const SimTime now = engine_.now();
  for (RunningCompute& run : c.running) {
    const double factor = contention_factor(r, run.mem_share);
    if (factor == run.factor) continue;
    const auto elapsed = static_cast<double>((now - run.last).picoseconds());
    run.work_ps = std::max(0.0, run.work_ps - elapsed / run.factor);
    run.factor = factor;
    run.last = now;
    run.done = engine_.reschedule_after(
        run.done, SimTime::ps(static_cast<std::int64_t>(std::ceil(run.work_ps * run.factor))),
        Event{handler_, kOpDone, run.g});
  }
}

}  // namespace tawpipe::sim::detail
