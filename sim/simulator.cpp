// Simulation driver: runs the executor and derives the report (definitions in report.h).
#include "sim/simulator.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ir/verifier.h"
#include "common/model/cost.h"
#include "sim/compute/compute_model.h"
#include "sim/run/executor.h"
#include "sim/run/noise.h"
#include "sim/symmetry/symmetry.h"

namespace tawpipe::sim {
namespace {

template <class T>
std::size_t idx(T v) {
  return static_cast<std::size_t>(v);
}

// Op classes of the report: compute kinds, collective kinds, then send, recv, copy.
constexpr std::size_t kComputeKinds = static_cast<std::size_t>(ir::kLastComputeKind) + 1;
constexpr std::size_t kCollectiveKinds =
    static_cast<std::size_t>(ir::CollectiveKind::reduce_scatter) + 1;
constexpr std::size_t kClassSlots = kComputeKinds + kCollectiveKinds + 3;

std::size_t class_slot(const ir::Op& op) {
  switch (op.kind) {
    case ir::OpKind::compute:
      return static_cast<std::size_t>(op.compute);
    case ir::OpKind::collective:
      return kComputeKinds + static_cast<std::size_t>(op.collective);
    case ir::OpKind::send:
      return kComputeKinds + kCollectiveKinds;
    case ir::OpKind::recv:
      return kComputeKinds + kCollectiveKinds + 1;
    default:
      return kComputeKinds + kCollectiveKinds + 2;
  }
}

const char* class_slot_name(std::size_t slot) {
  if (slot < kComputeKinds) return ir::name(static_cast<ir::ComputeKind>(slot));
  slot -= kComputeKinds;
  if (slot < kCollectiveKinds) return ir::name(static_cast<ir::CollectiveKind>(slot));
  slot -= kCollectiveKinds;
  return ir::name(slot == 0 ? ir::OpKind::send : slot == 1 ? ir::OpKind::recv : ir::OpKind::copy);
}

bool is_comm(ir::OpKind k) {
  return k == ir::OpKind::send || k == ir::OpKind::recv || k == ir::OpKind::collective;
}

double safe_div(double a, double b) {
  return b > 0.0 ? a / b : 0.0;
}

// Per-kernel-class time, FLOPs, bytes and launches over all ranks' compute and copy ops, from
// the compute model's per-cost split (built once here, outside the event loop), and the name of
// the profile used. Fed op by op from the per-rank pass of simulate_program: the IR is streamed
// from memory once for both (a separate pass over the ~33 MB IR of a 24-GPU TawPipe program cost
// ~3 ms of DRAM traffic), and every sum still adds its terms in (rank, op) order.
class KernelClasses {
 public:
  KernelClasses(const ir::Program& program, const topo::Topology& topology,
                const SimOptions& options, report::Report& rep) {
    const profile::Profile* prof = options.profile ? &*options.profile : nullptr;
    rep.profile = profile::describe_profile(prof, options.profile_name);
    auto model = ComputeModel::create(program, topology, prof);
    if (!model.ok()) return;
    model_.emplace(std::move(*model));
    // Per cost: FLOPs, bytes and launches by class (class of the op-class totals when a cost
    // has no kernels: gemm, attention forward, and element-wise under residual).
    cost_flops_.resize(program.costs.size());
    cost_bytes_.resize(program.costs.size());
    cost_launches_.resize(program.costs.size());
    for (std::size_t c = 0; c < program.costs.size(); ++c) {
      const ir::Cost& cost = program.costs[c];
      for (const model::Kernel& k : cost.kernels) {
        const auto i = static_cast<std::size_t>(k.cls);
        cost_flops_[c][i] += static_cast<double>(k.count) * k.flops;
        cost_bytes_[c][i] += static_cast<double>(k.count) * k.bytes;
        if (!k.fused) cost_launches_[c][i] += k.count;
      }
      if (cost.kernels.empty()) {
        const std::size_t slot[] = {static_cast<std::size_t>(model::KernelClass::gemm),
                                    static_cast<std::size_t>(model::KernelClass::attention_fwd),
                                    static_cast<std::size_t>(model::KernelClass::residual)};
        for (std::size_t k = 0; k < ir::kOpClassCount; ++k) {
          cost_flops_[c][slot[k]] += cost.flops[k];
          cost_bytes_[c][slot[k]] += cost.bytes[k];
        }
      }
    }
  }

  /// Adds `op` of `rank` (ranks in order, each rank's ops in program order).
  void add(ir::Rank rank, const ir::Op& op) {
    if (!model_) return;
    if (op.kind == ir::OpKind::copy) {
      seconds_[kCopy] += model_->copy_seconds(rank, op.bytes);
      bytes_[kCopy] += 2.0 * static_cast<double>(op.bytes);
      ++launches_[kCopy];
      return;
    }
    if (op.kind != ir::OpKind::compute || op.cost == ir::kNone) return;
    const auto c = static_cast<std::size_t>(op.cost);
    const auto s = model_->class_seconds(rank, op.cost, op.compute == ir::ComputeKind::backward);
    for (std::size_t i = 0; i < kN; ++i) {
      seconds_[i] += s[i];
      flops_[i] += cost_flops_[c][i];
      bytes_[i] += cost_bytes_[c][i];
      launches_[i] += cost_launches_[c][i];
    }
  }

  /// The classes with any time, FLOPs or bytes, in class order, into rep.kernel_classes.
  void finish(report::Report& rep) const {
    if (!model_) return;
    double total = 0.0;
    for (double s : seconds_)
      total += s;
    for (std::size_t i = 0; i < kN; ++i) {
      if (!(seconds_[i] > 0.0) && !(flops_[i] > 0.0) && !(bytes_[i] > 0.0)) continue;
      report::KernelClassTotals t;
      t.name = std::string(model::to_string(model::kAllKernelClasses[i]));
      t.time = SimTime::from_seconds(seconds_[i]);
      t.share = safe_div(seconds_[i], total);
      t.flops = flops_[i];
      t.bytes = bytes_[i];
      t.kernels = launches_[i];
      rep.kernel_classes.push_back(std::move(t));
    }
  }

 private:
  static constexpr std::size_t kN = model::kNumKernelClasses;
  static constexpr auto kCopy = static_cast<std::size_t>(model::KernelClass::copy);
  std::optional<ComputeModel> model_;
  std::array<double, kN> seconds_{}, flops_{}, bytes_{};
  std::array<std::int64_t, kN> launches_{};
  std::vector<std::array<double, kN>> cost_flops_, cost_bytes_;
  std::vector<std::array<std::int64_t, kN>> cost_launches_;
};

constexpr std::string_view kInvalidPrefix = "program fails verification (";

// SimOptions::test_fault: the sample of rank 0's first forward op moves to one no op embeds.
void apply_fault(const std::string& fault, ir::Program& program) {
  if (fault != "sample" || program.ranks.empty()) return;
  for (ir::Op& op : program.ranks[0].ops) {
    if (op.kind == ir::OpKind::compute && op.compute == ir::ComputeKind::forward) {
      op.sample += 1 << 20;
      return;
    }
  }
}

// Verifies `program` unless this shared object passed before (options.verified); `shared` is
// null or holds `program`. A replica-compact program is verified in its compact form; where
// that cannot be done (ir::VerifyResult::whole_form_needed), `*whole_needed` is set instead.
Status verify_program(const ir::Program& program, const std::shared_ptr<const ir::Program>& shared,
                      const SimOptions& options, bool* whole_needed = nullptr) {
  const bool cached = shared && options.verified;
  if (cached && options.verified->contains(shared)) return Status::success();
  ir::VerifyOptions vo;
  vo.threads = options.verify_threads;
  vo.skip_dataflow = !options.verify_dataflow;
  vo.statistics = false;  // counts only, not a check: the report has its own
  const ir::VerifyResult r = ir::verify(program, vo);
  if (r.whole_form_needed && whole_needed) {
    *whole_needed = true;
    return Status::success();
  }
  if (!r.ok) return make_error(std::string(kInvalidPrefix) + ir::name(r.stage) + "): " + r.message);
  if (cached) options.verified->insert(shared);
  return Status::success();
}

Expected<SimOutput> simulate_program(const ir::Program& given,
                                     const std::shared_ptr<const ir::Program>& given_shared,
                                     const topo::Topology& topology, const SimOptions& options,
                                     const FullProgram& full);

}  // namespace

bool is_invalid_program(const Error& e) {
  return e.message.compare(0, kInvalidPrefix.size(), kInvalidPrefix) == 0;
}

Expected<SimOutput> run_simulation(const ir::Program& program, const topo::Topology& topology,
                                   const SimOptions& options, const FullProgram& full) {
  return simulate_program(program, nullptr, topology, options, full);
}

Expected<SimOutput> run_simulation(const std::shared_ptr<const ir::Program>& program,
                                   const topo::Topology& topology, const SimOptions& options,
                                   const FullProgram& full) {
  return simulate_program(*program, program, topology, options, full);
}

namespace {

/// The core work of global op `g` (report.h OpRecord::cpu): CPU topologies' compute ops and
/// copies, and their transfers' work on their threads (copies, sums, wake-ups: what tawexec
/// measures of a transfer its thread runs alone); none for alloc and free or on device
/// topologies (op_cpu empty).
std::optional<SimTime> core_work(const ExecutionResult& res, std::size_t g, ir::OpKind kind) {
  if (g >= res.op_cpu.size() || kind == ir::OpKind::alloc || kind == ir::OpKind::free)
    return std::nullopt;
  return res.op_cpu[g];
}

Expected<SimOutput> simulate_program(const ir::Program& given,
                                     const std::shared_ptr<const ir::Program>& given_shared,
                                     const topo::Topology& topology, const SimOptions& options,
                                     const FullProgram& full) {
  ExecOptions exec;
  exec.profile = options.profile ? &*options.profile : nullptr;
  exec.sm_contention = options.sm_contention;
  exec.comm_order = options.comm_order;
  exec.memory = options.memory;
  if (topology.host_cpu()) {
    // MPI ranks on CPU cores (host backend): no CUDA context, no NCCL buffers, and no CUDA
    // caching-allocator fragmentation; the backend allocates with the system allocator.
    exec.memory.context_bytes = 0;
    exec.memory.nccl_connection_bytes = 0;
    exec.memory.fragmentation = 0.0;
  }
  exec.record_link_usage = options.record_link_usage;
  exec.record_memory = options.record_link_usage;  // both feed the trace's counter tracks
  exec.all_reduce_algo = options.nccl_algo;
  exec.nccl = options.nccl;
  // A replica-compact program holds replica 0 only: it runs under symmetry or is replaced by
  // the whole program (`full`) before anything reads the other ranks.
  const ir::Program* current = &given;
  std::shared_ptr<const ir::Program> whole;
  const auto get_whole = [&]() -> Status {
    if (whole) return Status::success();
    if (!full) return make_error("internal: a replica-compact program without its full form");
    auto p = full();
    if (!p.ok()) return p.error();
    whole = std::move(*p);
    return Status::success();
  };
  const auto expand = [&]() -> Status {
    if (!current->compact()) return Status::success();
    TAWPIPE_TRY(get_whole());
    current = whole.get();
    return Status::success();
  };
  // Test hook: the faulty copies replace the given program (and its whole form).
  std::optional<ir::Program> faulty;
  if (!options.test_fault.empty()) {
    faulty = given;
    apply_fault(options.test_fault, *faulty);
    current = &*faulty;
    if (given.compact()) {
      TAWPIPE_TRY(get_whole());
      auto w = std::make_shared<ir::Program>(*whole);
      apply_fault(options.test_fault, *w);
      whole = std::move(w);
    }
  }
  // Verification first (SimOptions::verify): nothing below runs on a program that failed. A
  // replica-compact program is verified as such, or in its whole form where that is needed.
  if (options.verify) {
    bool whole_needed = false;
    TAWPIPE_TRY(verify_program(*current, faulty ? nullptr : given_shared, options, &whole_needed));
    if (whole_needed) {
      TAWPIPE_TRY(get_whole());
      TAWPIPE_TRY(verify_program(*whole, whole, options));
    }
  }
  // A noise trace to replay (SimOptions::noise): every rank simulated, its core's noise its own.
  const profile::NoiseTrace* noise =
      options.noise && topology.host_cpu() && options.profile && options.profile->noise
          ? &*options.profile->noise
          : nullptr;
  std::optional<ReplicaSymmetry> symmetry;
  std::string symmetry_note;
  if (options.symmetry && noise == nullptr && !options.record_ops && !options.record_link_usage) {
    symmetry = current->compact() ? compact_replica_symmetry(*current, topology, symmetry_note)
                                  : find_replica_symmetry(*current, topology, symmetry_note);
    if (symmetry) exec.symmetry = &*symmetry;
  }
  if (!symmetry) TAWPIPE_TRY(expand());
  std::vector<SimTime> noise_iterations;
  std::int32_t noise_pick = 0;
  Expected<ExecutionResult> result = make_error("internal: not run");
  if (noise != nullptr) {
    exec.noise = noise;
    const std::int32_t n = std::max(1, options.noise_replicates);
    const SimTime span = NoiseReplay::span(*noise);
    const auto offset = [&](std::int32_t k) { return SimTime::ps(span.picoseconds() / n * k); };
    // Iteration times first, one run at a time (a result holds every op's times); then the
    // median one again (the simulation is deterministic: the same result).
    for (std::int32_t k = 0; k < n; ++k) {
      exec.noise_offset = offset(k);
      auto r = execute(*current, topology, exec);
      if (!r.ok()) return r.error();
      noise_iterations.push_back(r->last_end - r->first_start);
    }
    std::vector<std::int32_t> order(noise_iterations.size());
    for (std::size_t k = 0; k < order.size(); ++k)
      order[k] = static_cast<std::int32_t>(k);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      return noise_iterations[idx(a)] < noise_iterations[idx(b)];
    });
    noise_pick = order[(order.size() - 1) / 2];
    exec.noise_offset = offset(noise_pick);
    result = execute(*current, topology, exec);
  } else {
    result = execute(*current, topology, exec);
  }
  if (!result.ok()) return result.error();
  if (!result->symmetry_broken.empty()) {  // the network was not symmetric: run every rank
    symmetry_note = result->symmetry_broken;
    symmetry.reset();
    exec.symmetry = nullptr;
    TAWPIPE_TRY(expand());
    result = execute(*current, topology, exec);
    if (!result.ok()) return result.error();
  }
  const ir::Program& program = *current;
  ExecutionResult& res = *result;

  SimOutput out;
  if (symmetry) {
    out.replicas_collapsed = symmetry->replicas;
    out.replica_ranks = symmetry->replica_ranks;
    out.uneven_links = res.uneven_links;
  } else {
    out.symmetry_note = options.symmetry ? symmetry_note : "--no-symmetry";
  }
  out.events = res.events;
  out.noise_iterations = std::move(noise_iterations);
  out.noise_replicate = noise_pick;
  out.tree_all_reduces = res.tree_all_reduces;
  out.last_protocol = res.last_protocol;
  out.last_channels = res.last_channels;
  out.link_usage = std::move(res.link_usage);
  out.memory_samples = std::move(res.memory_samples);
  report::Report& rep = out.report;
  rep.kind = "predicted";
  rep.producer =
      options.producer.empty() ? std::string("tawsim ") + TAWPIPE_VERSION : options.producer;
  rep.header = program.header;
  rep.ranks = program.num_ranks();
  rep.iteration_time = res.last_end - res.first_start;
  const double seconds = rep.iteration_time.seconds();
  rep.tokens_per_iteration = static_cast<double>(program.header.global_batch) *
                             static_cast<double>(program.header.seq_len);
  rep.tokens_per_second = safe_div(rep.tokens_per_iteration, seconds);
  if (options.model && program.header.seq_len > 0)
    rep.model_flops =
        model::model_flops_per_token(*options.model, program.header.seq_len).total_flops() *
        rep.tokens_per_iteration;

  // Per-rank figures, op class totals (accumulated per kind, then sorted by name), hardware
  // FLOPs.
  // Kernel-class totals in the same pass (KernelClasses).
  std::vector<report::OpClassTotals> classes(kClassSlots);
  KernelClasses kernel_classes(program, topology, options, rep);
  rep.rank_stats.resize(idx(rep.ranks));
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const auto rank = static_cast<ir::Rank>(r);
    const ir::RankProgram& rp = program.program_of(rank);
    report::RankStats& rs = rep.rank_stats[r];
    auto peak =
        device_rates(topology.device(program.header.placement[r]), program.header.dtype, nullptr);
    if (peak.ok()) rep.peak_flops_per_second += peak->peak_flops_per_second;
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      const ir::Op& op = rp.ops[i];
      if (op.kind == ir::OpKind::alloc || op.kind == ir::OpKind::free) continue;
      kernel_classes.add(rank, op);
      const std::size_t g = res.rank_offset[res.timing_rank(r)] + i;
      const SimTime d = res.op_end[g] - res.op_start[g];
      report::OpClassTotals& t = classes[class_slot(op)];
      ++t.count;
      t.total += d;
      if (const auto cpu = core_work(res, g, op.kind)) t.cpu = t.cpu.value_or(SimTime()) + *cpu;
      if (op.kind == ir::OpKind::compute && op.cost != ir::kNone) {
        const ir::Cost& c = program.costs[idx(op.cost)];
        const double f = c.flops[0] + c.flops[1] + c.flops[2];
        t.flops += f;
        rep.hardware_flops += f;
      } else if (op.kind != ir::OpKind::compute) {
        t.bytes += static_cast<double>(op.bytes);
      }
      if (is_comm(op.kind)) rs.comm_sum += d;
    }
    rs.compute = res.rank_times[r].compute;
    rs.exposed_comm = res.rank_times[r].exposed_comm;
    rs.idle = rep.iteration_time - rs.compute - rs.exposed_comm;
    rs.peak_memory_bytes = res.peak_memory_bytes[r];
    rs.memory_capacity_bytes = res.memory_capacity_bytes[r];
    rs.oom = rs.memory_capacity_bytes > 0 && rs.peak_memory_bytes > rs.memory_capacity_bytes;
    const MemoryBreakdown& m = res.peak_memory[r];
    const auto kind = [&](MemoryKind k) { return m.allocated[idx(k)]; };
    rs.peak_memory = report::MemoryBytes{kind(MemoryKind::weights),
                                         kind(MemoryKind::gradients),
                                         kind(MemoryKind::optimizer),
                                         kind(MemoryKind::activations),
                                         kind(MemoryKind::buffers),
                                         kind(MemoryKind::workspace),
                                         m.nccl,
                                         m.reserve};
    rs.intra_node_bytes_sent = res.intra_node_bytes_sent[r];
    rs.inter_node_bytes_sent = res.inter_node_bytes_sent[r];
  }
  for (std::size_t k = 0; k < kClassSlots; ++k) {
    if (classes[k].count == 0) continue;
    classes[k].name = class_slot_name(k);
    rep.op_classes.push_back(classes[k]);
  }
  std::sort(rep.op_classes.begin(), rep.op_classes.end(),
            [](const report::OpClassTotals& a, const report::OpClassTotals& b) {
              return a.name < b.name;
            });
  kernel_classes.finish(rep);
  rep.mfu = safe_div(rep.model_flops, seconds * rep.peak_flops_per_second);
  rep.hfu = safe_div(rep.hardware_flops, seconds * rep.peak_flops_per_second);

  // Links that carried traffic, in link id order.
  const auto& links = topology.links();
  for (std::size_t l = 0; l < links.size(); ++l) {
    if (!(res.link_bytes[l] > 0.0)) continue;
    report::LinkStats ls;
    ls.name = links[l].name;
    ls.link_class = std::string(topo::to_string(links[l].cls));
    ls.inter_node = links[l].inter_node;
    ls.capacity_bytes_per_second = links[l].capacity.bytes_per_second();
    ls.bytes = res.link_bytes[l];
    ls.busy = res.link_busy[l];
    ls.utilisation = safe_div(ls.bytes, ls.capacity_bytes_per_second * seconds);
    rep.links.push_back(std::move(ls));
  }

  if (options.record_ops) {
    std::vector<bool> keep(program.ranks.size(), options.record_ranks.empty());
    for (ir::Rank r : options.record_ranks) {
      if (r >= 0 && idx(r) < keep.size()) keep[idx(r)] = true;
    }
    for (std::size_t r = 0; r < program.ranks.size(); ++r) {
      if (!keep[r]) continue;
      for (std::size_t i = 0; i < program.ranks[r].ops.size(); ++i) {
        const std::size_t g = res.rank_offset[res.timing_rank(r)] + i;
        report::OpRecord& o = rep.ops.emplace_back();
        o.rank = static_cast<ir::Rank>(r);
        o.op = static_cast<ir::OpIndex>(i);
        o.start = res.op_start[g];
        o.end = res.op_end[g];
        o.cpu = core_work(res, g, program.ranks[r].ops[i].kind);
      }
    }
  }
  return out;
}

}  // namespace

Expected<report::Report> simulate(const ir::Program& program, const topo::Topology& topology,
                                  const SimOptions& options) {
  auto out = run_simulation(program, topology, options);
  if (!out.ok()) return out.error();
  return std::move(out->report);
}

std::vector<report::CounterTrack> link_counter_tracks(const topo::Topology& topology,
                                                      const std::vector<LinkUsageSample>& usage) {
  std::vector<std::int32_t> track_of(topology.links().size(), -1);
  std::vector<topo::LinkId> order;
  for (const LinkUsageSample& s : usage) {
    if (track_of[idx(s.link)] < 0) {
      track_of[idx(s.link)] = 0;
      order.push_back(s.link);
    }
  }
  std::sort(order.begin(), order.end());
  std::vector<report::CounterTrack> tracks(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    track_of[idx(order[i])] = static_cast<std::int32_t>(i);
    tracks[i].name = topology.link(order[i]).name;
    tracks[i].unit = "GB/s";
  }
  for (const LinkUsageSample& s : usage)
    tracks[idx(track_of[idx(s.link)])].points.emplace_back(s.time, s.bytes_per_second / 1e9);
  return tracks;
}

std::vector<report::CounterTrack> memory_counter_tracks(
    const std::vector<std::vector<MemorySample>>& samples) {
  std::vector<report::CounterTrack> tracks;
  for (std::size_t r = 0; r < samples.size(); ++r) {
    if (samples[r].empty()) continue;
    report::CounterTrack t;
    t.name = "memory";
    t.unit = "GiB";
    t.rank = static_cast<ir::Rank>(r);
    t.points.reserve(samples[r].size());
    for (const MemorySample& s : samples[r])
      t.points.emplace_back(s.time, static_cast<double>(s.bytes) / static_cast<double>(1ull << 30));
    tracks.push_back(std::move(t));
  }
  return tracks;
}

}  // namespace tawpipe::sim
