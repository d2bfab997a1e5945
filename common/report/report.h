/// \file
/// One report schema for predicted (tawsim) and measured (tawexec) runs of a Program, so that
/// `tawsim compare predicted.json measured.json` can set them side by side op class by op class.
///
/// Definitions (the same for both producers):
///  - iteration time: from the first op start to the last op end over all ranks;
///  - tokens per iteration: header.global_batch * header.seq_len;
///  - model FLOPs: model::model_flops_per_token * tokens (causal attention counted as in cost.h);
///    hardware FLOPs: the sum of all compute ops' Cost::flops (recomputation included);
///  - MFU = model FLOPs / (iteration time * sum over ranks of the device's peak FLOP/s at the
///    compute dtype); HFU likewise with hardware FLOPs;
///  - per rank: `compute` = time the compute stream is busy; `exposed_comm` = time some
///    communication op is in flight while the compute stream is idle; `idle` = the rest of the
///    iteration (bubbles, waiting); `comm_sum` = summed durations of communication ops over all
///    streams, as NCCL profilers report it (overlapped time counted);
///  - per link: bytes carried, busy time (a flow was active), utilisation = bytes /
///    (nominal capacity * iteration time).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/units.h"

namespace tawpipe::report {

inline constexpr int kReportFormatVersion = 1;

/// Start and end of one op of one rank (the trace), and on CPU runs the core time it used.
struct OpRecord {
  ir::Rank rank = 0;
  ir::OpIndex op = 0;
  SimTime start;
  SimTime end;
  /// Core time of a compute op or copy, where known (CPU topologies; host backend):
  ///  - measured: the CPU time of the thread that ran it, from its start to its end
  ///    (CLOCK_THREAD_CPUTIME_ID), so the time it waited for its core is not in it, and what
  ///    others' preemptions cost it (cache refills) is;
  ///  - predicted: the core work the simulator gave its job (kernel time at the calibrated
  ///    rates, the interpreter's per-op overhead, stretched by the replayed noise trace), which
  ///    sharing the core does not change.
  std::optional<SimTime> cpu;
  /// Measured with `cpu`: how often another thread preempted the op's thread while it ran
  /// (involuntary context switches, getrusage RUSAGE_THREAD). -1: not known.
  std::int64_t preemptions = -1;
  friend bool operator==(const OpRecord&, const OpRecord&) = default;
};

/// Totals of one op class over all ranks: compute classes (forward, backward, head, ...) and
/// communication classes (send, recv, broadcast, reduce, all_reduce, all_gather,
/// reduce_scatter, copy). `name` is the IR's name of the compute or collective kind.
struct OpClassTotals {
  std::string name;
  std::int64_t count = 0;
  SimTime total;       ///< summed durations
  double bytes = 0.0;  ///< communication bytes (message sizes as in the IR), 0 for compute
  double flops = 0.0;  ///< compute FLOPs, 0 for communication
  /// Summed core time of the class's ops where their records have it (OpRecord::cpu: CPU
  /// topologies' compute ops and copies); absent elsewhere.
  std::optional<SimTime> cpu;
  /// Measured with `cpu`: summed preemptions (OpRecord::preemptions); -1 when not known.
  std::int64_t preemptions = -1;
  friend bool operator==(const OpClassTotals&, const OpClassTotals&) = default;
};

/// Device memory at a rank's peak by kind (predicted reports; all zero when measured, where only
/// the allocator's peak is known). Kinds as in sim/memory/memory_model.h: `buffers` are weight
/// and gradient staging (gathered blocks, weight-passing slots, prefetch), `workspace` the
/// compute ops' transient working sets, `nccl` NCCL's channel buffers, `reserve` the CUDA
/// context and allocator fragmentation. The fields sum to RankStats::peak_memory_bytes.
struct MemoryBytes {
  std::uint64_t weights = 0;
  std::uint64_t gradients = 0;
  std::uint64_t optimizer = 0;
  std::uint64_t activations = 0;
  std::uint64_t buffers = 0;
  std::uint64_t workspace = 0;
  std::uint64_t nccl = 0;
  std::uint64_t reserve = 0;
  std::uint64_t total() const {
    return weights + gradients + optimizer + activations + buffers + workspace + nccl + reserve;
  }
  friend bool operator==(const MemoryBytes&, const MemoryBytes&) = default;
};

/// The names of MemoryBytes' fields in order (JSON keys, CSV columns, table labels).
inline constexpr const char* kMemoryBytesFields[] = {
    "weights", "gradients", "optimizer", "activations", "buffers", "workspace", "nccl", "reserve"};
/// Field `i` (0..7, in kMemoryBytesFields order).
inline std::uint64_t& memory_field(MemoryBytes& m, std::size_t i) {
  switch (i) {
    case 0:
      return m.weights;
    case 1:
      return m.gradients;
    case 2:
      return m.optimizer;
    case 3:
      return m.activations;
    case 4:
      return m.buffers;
    case 5:
      return m.workspace;
    case 6:
      return m.nccl;
    default:
      return m.reserve;
  }
}
inline std::uint64_t memory_field(const MemoryBytes& m, std::size_t i) {
  return memory_field(const_cast<MemoryBytes&>(m), i);
}

/// Time of one kernel class (common/model/kernel_class.h) over all ranks' compute ops, as the
/// kernel cost model splits each op's duration (predicted only). `share` = time / the summed
/// time of all classes.
struct KernelClassTotals {
  std::string name;          ///< kernel class: gemm, attention_fwd, ..., copy
  SimTime time;              ///< summed over ranks, launches included
  double share = 0.0;        ///< of the summed kernel time of all classes
  double flops = 0.0;        ///< executed FLOPs (recompute included)
  double bytes = 0.0;        ///< memory traffic
  std::int64_t kernels = 0;  ///< kernel launches (fused kernels not counted)
  friend bool operator==(const KernelClassTotals&, const KernelClassTotals&) = default;
};

struct RankStats {
  SimTime compute;
  SimTime exposed_comm;
  SimTime idle;
  SimTime comm_sum;
  std::uint64_t peak_memory_bytes = 0;      ///< predicted: includes NCCL buffers and reserve
  std::uint64_t memory_capacity_bytes = 0;  ///< device memory; 0 = unknown
  bool oom = false;                         ///< peak_memory_bytes > memory_capacity_bytes
  MemoryBytes peak_memory;                  ///< breakdown at the peak (predicted only)
  double intra_node_bytes_sent = 0.0;
  double inter_node_bytes_sent = 0.0;
  /// Measured reports whose ranks share one clock (one host): when this rank's iteration began
  /// after the earliest rank's. Op records stay relative to each rank's own start; adding this
  /// puts every rank on one time axis (a collective's members' posts become comparable).
  std::optional<SimTime> start_offset;
  friend bool operator==(const RankStats&, const RankStats&) = default;
};

struct LinkStats {
  std::string name;        ///< topology link name
  std::string link_class;  ///< nvlink, nvswitch, pcie, cpu_link, nic, network
  bool inter_node = false;
  double capacity_bytes_per_second = 0.0;
  double bytes = 0.0;
  SimTime busy;
  double utilisation = 0.0;
  friend bool operator==(const LinkStats&, const LinkStats&) = default;
};

struct Report {
  int format_version = kReportFormatVersion;
  std::string kind;      ///< "predicted" or "measured"
  std::string producer;  ///< e.g. "tawsim 0.1.0", "tawexec 0.1.0 (host backend)"
  ir::Header header;     ///< of the Program that ran
  std::int32_t ranks = 0;
  SimTime iteration_time;
  double tokens_per_iteration = 0.0;
  double tokens_per_second = 0.0;
  double model_flops = 0.0;
  double hardware_flops = 0.0;
  double peak_flops_per_second = 0.0;  ///< summed over ranks, at the compute dtype
  double mfu = 0.0;
  double hfu = 0.0;
  std::vector<RankStats> rank_stats;
  std::vector<LinkStats> links;  ///< predicted only (empty when measured)
  std::vector<OpClassTotals> op_classes;
  /// Predicted only (empty when measured or for programs without kernels); class order.
  std::vector<KernelClassTotals> kernel_classes;
  /// The calibration profile used: "file (producer)", or "built-in" (predicted); empty when
  /// measured. Optional in files (older reports lack it and kernel_classes).
  std::string profile;
  std::vector<OpRecord> ops;  ///< may be empty (not requested) or partial (rank filter)
  friend bool operator==(const Report&, const Report&) = default;
};

/// Versioned JSON (nlohmann). Round-trips exactly. Errors carry file, line, column, key path.
void write_report_json(const Report& report, std::ostream& out);
Expected<Report> read_report_json(std::string_view text, std::string_view file_name);
Expected<Report> read_report_file(const std::string& path);

}  // namespace tawpipe::report
