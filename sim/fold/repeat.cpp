// The repeat check and the extrapolation of steady-state folding (repeat.h).
#include "sim/fold/repeat.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace tawpipe::sim::fold_detail {
namespace {

// Relative tolerance of the repeat check: the network model rounds completions to picoseconds
// and moves bytes in doubles, and the contention model re-rates running compute ops in doubles
// rounded up to whole picoseconds, so identical rounds differ in the last bits, and the
// differences add up over rounds. Measured: 1F1B on 3x8-a100 (llama-h4096-l48, NCCL's P2P
// channels holding SMs) extrapolated from the probes 64, 66, 68 misses rank 10's compute at
// 132 micro-batches by 109 ns of 41.7 s (2.6e-9); the table then matches --no-fold to 3e-8.
// Real differences between rounds are far larger (WeiPipe's drifting split: milliseconds).
// With NCCL's single P2P channel per peer on 3x8-a100 (nccl_tuning.h) the re-rating happens at
// every activation transfer: 1F1B's rank 10 then drifts 430 ns from the extrapolation of the
// probes 128-132 at 260 micro-batches (4.1e-9 of 104 s) and the probe 516 misses 1e-8, while
// the table equals --no-fold; 5e-8 keeps three orders of magnitude below a real difference.
constexpr double kRelTol = 5e-8;

bool same_step(double d1, double d2, double scale) {
  return std::abs(d1 - d2) <= kRelTol * std::abs(scale) + 1e-3;
}
bool same_step(SimTime d1, SimTime d2, SimTime scale) {
  const double tol = kRelTol * static_cast<double>(scale.picoseconds()) + 64.0;
  return std::abs(static_cast<double>((d1 - d2).picoseconds())) <= tol;
}

// Same ranks, links and op classes in the same order.
bool comparable(const report::Report& a, const report::Report& b) {
  if (a.rank_stats.size() != b.rank_stats.size() || a.links.size() != b.links.size() ||
      a.op_classes.size() != b.op_classes.size())
    return false;
  for (std::size_t i = 0; i < a.links.size(); ++i)
    if (a.links[i].name != b.links[i].name) return false;
  for (std::size_t i = 0; i < a.op_classes.size(); ++i)
    if (a.op_classes[i].name != b.op_classes[i].name) return false;
  return true;
}

// Communication op classes: their `total` runs from posting to completion, waiting included.
bool is_comm_class(const std::string& name) {
  for (const char* c :
       {"send", "recv", "broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"})
    if (name == c) return true;
  return false;
}

double safe_div(double a, double b) {
  return b > 0.0 ? a / b : 0.0;
}

}  // namespace

Miss repeats(const report::Report& a, const report::Report& b, const report::Report& c,
             std::int64_t k) {
  if (!comparable(a, b) || !comparable(b, c)) return Miss::layout;
  const auto kd = static_cast<double>(k);
  if (!same_step((b.iteration_time - a.iteration_time) * k, c.iteration_time - b.iteration_time,
                 c.iteration_time))
    return Miss::iteration;
  for (std::size_t r = 0; r < c.rank_stats.size(); ++r)
    if (b.rank_stats[r].peak_memory_bytes != c.rank_stats[r].peak_memory_bytes ||
        (k > 1 && a.rank_stats[r].peak_memory_bytes != b.rank_stats[r].peak_memory_bytes))
      return Miss::memory;
  if (!same_step((b.hardware_flops - a.hardware_flops) * kd, c.hardware_flops - b.hardware_flops,
                 c.hardware_flops))
    return Miss::traffic;
  for (std::size_t r = 0; r < c.rank_stats.size(); ++r) {
    const auto &x = a.rank_stats[r], &y = b.rank_stats[r], &z = c.rank_stats[r];
    if (!same_step((y.intra_node_bytes_sent - x.intra_node_bytes_sent) * kd,
                   z.intra_node_bytes_sent - y.intra_node_bytes_sent, z.intra_node_bytes_sent) ||
        !same_step((y.inter_node_bytes_sent - x.inter_node_bytes_sent) * kd,
                   z.inter_node_bytes_sent - y.inter_node_bytes_sent, z.inter_node_bytes_sent))
      return Miss::traffic;
  }
  for (std::size_t l = 0; l < c.links.size(); ++l) {
    const auto &x = a.links[l], &y = b.links[l], &z = c.links[l];
    if (!same_step((y.bytes - x.bytes) * kd, z.bytes - y.bytes, z.bytes) ||
        !same_step((y.busy - x.busy) * k, z.busy - y.busy, c.iteration_time))
      return Miss::traffic;
  }
  for (std::size_t i = 0; i < c.op_classes.size(); ++i) {
    const auto &x = a.op_classes[i], &y = b.op_classes[i], &z = c.op_classes[i];
    if ((y.count - x.count) * k != z.count - y.count ||
        !same_step((y.bytes - x.bytes) * kd, z.bytes - y.bytes, z.bytes) ||
        !same_step((y.flops - x.flops) * kd, z.flops - y.flops, z.flops))
      return Miss::traffic;
  }
  // Everything above repeats; what is left depends on how communication overlaps compute on
  // each rank (the contention model slows compute that overlaps communication kernels).
  for (std::size_t r = 0; r < c.rank_stats.size(); ++r) {
    const auto &x = a.rank_stats[r], &y = b.rank_stats[r], &z = c.rank_stats[r];
    if (!same_step((y.compute - x.compute) * k, z.compute - y.compute, z.compute) ||
        !same_step((y.exposed_comm - x.exposed_comm) * k, z.exposed_comm - y.exposed_comm,
                   c.iteration_time))
      return Miss::split;
  }
  for (std::size_t i = 0; i < c.op_classes.size(); ++i) {
    const auto &x = a.op_classes[i], &y = b.op_classes[i], &z = c.op_classes[i];
    if (!is_comm_class(z.name) && !same_step((y.total - x.total) * k, z.total - y.total, z.total))
      return Miss::split;
  }
  return Miss::none;
}

std::string miss_reason(Miss miss, std::int64_t last_probe) {
  const std::string at = std::to_string(last_probe) + " micro-batches per worker";
  switch (miss) {
    case Miss::none:
      break;
    case Miss::layout:
      return "the probes' reports differ in ranks, links or op classes";
    case Miss::iteration:
      return "the iteration time did not grow by one step per round up to " + at +
             " (warm-up longer than the probes)";
    case Miss::memory:
      return "peak memory still grows at " + at;
    case Miss::traffic:
      return "bytes, FLOPs or op counts did not grow by one step per round up to " + at;
    case Miss::split:
      return "iteration time, bytes and memory repeat per round, but the per-rank split into "
             "compute and exposed communication does not (communication-compute contention "
             "on ranks off the critical path: their overlap drifts from round to round)";
  }
  return {};
}

SimOutput extrapolate(const SimOutput& from, const SimOutput& lo, const SimOutput& hi,
                      std::int64_t n, const model::ResolvedBatch& batch) {
  const report::Report& f = from.report;
  const report::Report& b = lo.report;
  const report::Report& c = hi.report;
  const auto nd = static_cast<double>(n);
  const auto lin = [nd](double x, double yb, double yc) { return x + nd * (yc - yb); };
  const auto lint = [n](SimTime x, SimTime yb, SimTime yc) { return x + (yc - yb) * n; };
  SimOutput out;
  out.events = from.events;
  out.replicas_collapsed = from.replicas_collapsed;
  out.replica_ranks = from.replica_ranks;
  out.symmetry_note = from.symmetry_note;
  out.tree_all_reduces = from.tree_all_reduces + static_cast<std::uint64_t>(n) *
                                                     (hi.tree_all_reduces - lo.tree_all_reduces);
  report::Report& r = out.report;
  r = f;
  r.header.micro_batches = static_cast<std::int32_t>(batch.micro_batches);
  r.header.global_batch = batch.global_batch;
  r.iteration_time = lint(f.iteration_time, b.iteration_time, c.iteration_time);
  const double seconds = r.iteration_time.seconds();
  r.tokens_per_iteration =
      static_cast<double>(batch.global_batch) * static_cast<double>(r.header.seq_len);
  r.tokens_per_second = safe_div(r.tokens_per_iteration, seconds);
  r.model_flops = safe_div(f.model_flops, f.tokens_per_iteration) * r.tokens_per_iteration;
  r.hardware_flops = lin(f.hardware_flops, b.hardware_flops, c.hardware_flops);
  r.mfu = safe_div(r.model_flops, seconds * r.peak_flops_per_second);
  r.hfu = safe_div(r.hardware_flops, seconds * r.peak_flops_per_second);
  for (std::size_t i = 0; i < r.rank_stats.size(); ++i) {
    auto& s = r.rank_stats[i];
    const auto &w = f.rank_stats[i], &x = b.rank_stats[i], &y = c.rank_stats[i];
    s.compute = lint(w.compute, x.compute, y.compute);
    s.exposed_comm = lint(w.exposed_comm, x.exposed_comm, y.exposed_comm);
    s.comm_sum = lint(w.comm_sum, x.comm_sum, y.comm_sum);
    s.idle = r.iteration_time - s.compute - s.exposed_comm;
    s.intra_node_bytes_sent =
        lin(w.intra_node_bytes_sent, x.intra_node_bytes_sent, y.intra_node_bytes_sent);
    s.inter_node_bytes_sent =
        lin(w.inter_node_bytes_sent, x.inter_node_bytes_sent, y.inter_node_bytes_sent);
    s.oom = s.memory_capacity_bytes > 0 && s.peak_memory_bytes > s.memory_capacity_bytes;
  }
  for (std::size_t i = 0; i < r.links.size(); ++i) {
    auto& l = r.links[i];
    l.bytes = lin(f.links[i].bytes, b.links[i].bytes, c.links[i].bytes);
    l.busy = lint(f.links[i].busy, b.links[i].busy, c.links[i].busy);
    l.utilisation = safe_div(l.bytes, l.capacity_bytes_per_second * seconds);
  }
  for (std::size_t i = 0; i < r.op_classes.size(); ++i) {
    auto& k = r.op_classes[i];
    const auto &w = f.op_classes[i], &x = b.op_classes[i], &y = c.op_classes[i];
    k.count = w.count + n * (y.count - x.count);
    k.total = lint(w.total, x.total, y.total);
    k.bytes = lin(w.bytes, x.bytes, y.bytes);
    k.flops = lin(w.flops, x.flops, y.flops);
  }
  // Kernel-class totals are additive too (the classes present do not change with the rounds);
  // shares are recomputed from the extrapolated times.
  if (f.kernel_classes.size() == b.kernel_classes.size() &&
      f.kernel_classes.size() == c.kernel_classes.size()) {
    double total = 0.0;
    for (std::size_t i = 0; i < r.kernel_classes.size(); ++i) {
      auto& k = r.kernel_classes[i];
      const auto &w = f.kernel_classes[i], &x = b.kernel_classes[i], &y = c.kernel_classes[i];
      k.time = lint(w.time, x.time, y.time);
      k.flops = lin(w.flops, x.flops, y.flops);
      k.bytes = lin(w.bytes, x.bytes, y.bytes);
      k.kernels = w.kernels + n * (y.kernels - x.kernels);
      total += k.time.seconds();
    }
    for (auto& k : r.kernel_classes)
      k.share = safe_div(k.time.seconds(), total);
  }
  return out;
}

bool agrees(const report::Report& predicted, const report::Report& actual) {
  if (!comparable(predicted, actual)) return false;
  const SimTime scale = actual.iteration_time;
  if (!same_step(predicted.iteration_time, actual.iteration_time, scale)) return false;
  for (std::size_t r = 0; r < actual.rank_stats.size(); ++r) {
    const auto &p = predicted.rank_stats[r], &a = actual.rank_stats[r];
    if (p.peak_memory_bytes != a.peak_memory_bytes || !same_step(p.compute, a.compute, scale) ||
        !same_step(p.exposed_comm, a.exposed_comm, scale))
      return false;
  }
  for (std::size_t l = 0; l < actual.links.size(); ++l) {
    if (!same_step(predicted.links[l].bytes, actual.links[l].bytes, actual.links[l].bytes))
      return false;
  }
  return true;
}

}  // namespace tawpipe::sim::fold_detail
