/// \file
/// The schedule IR: a self-contained, serialisable description of one training iteration of one
/// parallel-training method on P ranks. The simulator times it; the executors run it.
///
/// A Program holds a header, communicators, and per rank: buffers and ops in program order. The IR
/// speaks of ranks, buffers, bytes and FLOPs only; it never refers to the topology.
///
/// Semantics (identical in the simulator, the executors and the verifier's logical execution):
///  1. Ops of one stream of a rank run one at a time in program order. An op starts when the
///     previous op of its stream and all its `deps` (earlier ops of the same rank, any stream —
///     like CUDA events) have completed.
///  2. Ops with the same `group` (NCCL group semantics) are on the same stream, consecutive in
///     program order, and are posted together; the stream moves past the group when all of them
///     have completed. A pairwise exchange (send + recv to the same peer) is one group.
///  3. Send/recv between a pair of ranks on a communicator match in issue order; data moves only
///     when both sides are posted.
///  4. All members of a communicator issue its collectives in the same order; a collective starts
///     when every member has reached it.
///  5. A non-persistent buffer is dead until an `alloc` op and after a `free` op (one alloc or
///     free op may list several buffers: it acts on each of them); touching a dead
///     buffer is an error. Persistent buffers live for the whole program (memory model: their
///     bytes count from time zero).
///
/// Symbolic contents (what the verifier tracks, see verifier.h). Every buffer holds a TensorRef:
///  - weights of decoder layers [layer_begin, layer_end), or piece `piece` of `pieces` of them
///    (FSDP shards); the pseudo-layer kEmbeddingLayer (= -1) stands for all non-decoder
///    parameters (token embedding, final norm, LM head, tied or not);
///  - the gradient of such a block (the verifier also tracks which (sample, op) contributions were
///    summed into it, to prove every gradient reaches its owner complete and exactly once);
///  - the activation entering decoder layer `layer_begin` for micro-batch `sample`
///    (layer_begin == layers means the output of the last decoder layer, entering the head);
///  - the activation gradient at that boundary.
/// `sample` identifies a micro-batch globally (unique over ranks and data-parallel replicas).
///
/// Exact content rules (the verifier's symbolic dataflow, verifier.h; generators must follow them):
///  - The embedding block is TensorRef{weights|gradient, layer_begin = -1, layer_end = 0}; it is
///    never merged with decoder layers. Compute ops embedding_forward / head / embedding_backward
///    have layer_begin = kEmbeddingLayer and layer_end = 0; an optimizer for the embedding block
///    too. Decoder blocks are [b, e) with 0 <= b < e <= layers.
///  - A compute op finds its operands by buffer *role*: weights, weight_staging, master_weights
///    are weight operands; activation / activation_grad are activation (gradient) operands;
///    gradient, gradient_staging are gradient operands; workspace and optimizer_state are not
///    checked. forward/backward/head/embedding_forward read exactly one weight operand, holding
///    the whole (pieces = 1) weights of exactly the op's block.
///  - A freshly allocated buffer (alloc) is empty (kind none = zero). Compute ALWAYS
///    accumulates into gradient operands (like PyTorch's .grad): backward over [a, b) for sample
///    s adds the contributions (s, l) for l in [a, b); head adds (s, embedding, head);
///    embedding_backward adds (s, embedding, embed). The target must be empty or already hold a
///    gradient of exactly the same block. To reuse a gradient buffer for another block or
///    another partial sum, free and re-alloc it.
///  - recv, copy and every collective OVERWRITE their receive buffer: broadcast: every member's
///    recv = root's send; reduce: root's recv = sum of all members' sends (non-roots' recv is
///    untouched); all_reduce: every member's recv = the sum; reduce_scatter over m members:
///    member i's recv = piece i of m of the sum (a piece p of n split again gives piece p*m+i of
///    n*m); all_gather: member i's send must hold piece i of m (or p*m+i of n*m) of the same
///    tensor, every recv = the whole (or piece p of n). Sums need gradient (or empty) contents of
///    the same block and piece. accumulate: writes[0] += reads[0] (same block and piece, or
///    writes[0] empty).
///  - The complete gradient of a block is the sum over ALL samples of the program (the samples
///    of its embedding_forward ops, all data-parallel replicas included), each exactly once.
///    optimizer over block B reads one gradient operand that must hold the complete gradient of
///    B (or a piece p of n of it) and writes weight operands holding weights(B) (same piece).
///    Every `weights`-role buffer whose initial content is weights must be updated by exactly
///    one optimizer op.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/kernels.h"
#include "common/units.h"

namespace tawpipe::ir {

using Rank = std::int32_t;
using OpIndex = std::int32_t;   ///< index into one rank's op list
using BufferId = std::int32_t;  ///< index into one rank's buffer list
using CommId = std::int32_t;    ///< index into Program::communicators
using StreamId = std::uint8_t;  ///< index into Program::streams
using CostId = std::int32_t;    ///< index into Program::costs
inline constexpr std::int32_t kNone = -1;
inline constexpr std::int32_t kEmbeddingLayer = -1;

/// Format version written to and required from JSON. Bump on any incompatible change.
inline constexpr int kFormatVersion = 1;

enum class OpKind : std::uint8_t { compute, send, recv, collective, copy, alloc, free };

/// What a compute op does. Reads and writes are identified by the roles of its buffers.
enum class ComputeKind : std::uint8_t {
  embedding_forward,  ///< reads weights(embedding); writes activation(sample, 0)
  forward,   ///< reads weights(layers), activation(sample, begin); writes activation(sample, end)
  backward,  ///< reads weights(layers), activation(sample, begin), activation_grad(sample, end);
             ///< writes activation_grad(sample, begin) and adds a gradient contribution for
             ///< (layers, sample) into a gradient buffer. Includes recomputation when the
             ///< cost says so (Cost::recompute_flops).
  head,      ///< final norm + LM head + loss, forward and backward: reads weights(embedding),
             ///< activation(sample, L); writes activation_grad(sample, L) and a gradient
             ///< contribution for the embedding block
  embedding_backward,  ///< reads activation_grad(sample, 0); adds a gradient contribution
                       ///< (embedding)
  accumulate,          ///< reads[0] is a gradient; writes[0] += it (element-wise sum)
  optimizer,           ///< reads a complete gradient of block B; updates the weights of B (writes)
  // Split backward (zero-bubble pipelines, Qi et al., ICLR 2024, arXiv 2401.10241): `backward`
  // = `backward_input` (B) + `backward_weight` (W) of the same layers and sample.
  backward_input,   ///< B: reads weights(layers), activation(sample, begin),
                    ///< activation_grad(sample, end); writes activation_grad(sample, begin). Adds
                    ///< no gradient. Includes recomputation when the cost says so.
  backward_weight,  ///< W: reads weights(layers), activation(sample, begin),
                    ///< activation_grad(sample, end) (the inputs it holds until it runs) and adds
                    ///< the gradient contribution for (layers, sample) into a gradient buffer,
                    ///< exactly as `backward` does; writes no activation gradient
};
/// The last ComputeKind (range checks of readers and the verifier).
inline constexpr ComputeKind kLastComputeKind = ComputeKind::backward_weight;

enum class CollectiveKind : std::uint8_t {
  broadcast,
  reduce,
  all_reduce,
  all_gather,
  reduce_scatter
};

/// What a buffer is for. Drives the memory report and tells the verifier how a compute op uses
/// each buffer it lists.
enum class BufferRole : std::uint8_t {
  weights,           ///< own (device-bound) weights, compute precision
  weight_staging,    ///< received/broadcast weights being used or prefetched
  master_weights,    ///< fp32 master copy of owned weights
  optimizer_state,   ///< AdamW moments of owned weights
  gradient,          ///< gradient accumulator of owned weights
  gradient_staging,  ///< locally computed or in-flight gradient
  activation,        ///< a boundary activation (input of layer `layer_begin` for `sample`)
  activation_grad,   ///< a boundary activation gradient
  workspace,         ///< scratch
};

enum class TensorKind : std::uint8_t { none, weights, gradient, activation, activation_grad };

/// Symbolic identity of a tensor (see the file comment). Small and trivially copyable.
struct TensorRef {
  TensorKind kind = TensorKind::none;
  std::int32_t layer_begin = 0;  ///< weights/gradient: first layer (or kEmbeddingLayer);
                                 ///< activations: the boundary index in [0, layers]
  std::int32_t layer_end = 0;    ///< weights/gradient: one past the last layer; unused otherwise
  std::int32_t sample = kNone;   ///< activations only
  std::int32_t piece = 0;        ///< FSDP shards: this is piece `piece` of `pieces`
  std::int32_t pieces = 1;
  friend bool operator==(const TensorRef&, const TensorRef&) = default;
};

/// Op classes of the compute cost model (design.md).
enum class OpClass : std::uint8_t { gemm, attention, elementwise };
inline constexpr std::size_t kOpClassCount = 3;

/// FLOPs and memory bytes of one compute op by op class; shared by the simulator's compute model
/// and the executors' kernels. Deduplicated in Program::costs.
struct Cost {
  std::array<double, kOpClassCount> flops{};  ///< floating-point operations
  std::array<double, kOpClassCount> bytes{};  ///< memory traffic in bytes
  double recompute_flops = 0.0;  ///< part of `flops` spent recomputing the forward (HFU, not MFU)
  std::uint64_t workspace_bytes = 0;  ///< transient memory live only while the op runs
  /// The kernels behind the totals (common/model/kernels.h), `count` of each per op; empty for
  /// hand-built costs and files written before kernels existed (the simulator then costs the
  /// three op classes). When present, the verifier checks that they sum to `flops` / `bytes`.
  std::vector<model::Kernel> kernels;
  friend bool operator==(const Cost&, const Cost&) = default;
};

struct Communicator {
  std::string name;           ///< e.g. "world", "node1", "rail3", "pair0-8"
  std::vector<Rank> members;  ///< ordered; a member's index is its position
  friend bool operator==(const Communicator&, const Communicator&) = default;
};

struct Buffer {
  std::string name;  ///< unique per rank, e.g. "w.own", "act.s3.b2"
  Bytes size;
  BufferRole role = BufferRole::workspace;
  bool persistent = true;  ///< false: dead until an alloc op, dead again after a free op
  TensorRef initial;       ///< content at program start (persistent buffers)
  friend bool operator==(const Buffer&, const Buffer&) = default;
};

/// One op. Fields that do not apply to a kind hold kNone / 0. Buffer and dependency lists live in
/// the rank's pools (`RankProgram::buffer_pool`, `dep_pool`) to keep Op small and flat.
struct Op {
  OpKind kind = OpKind::compute;
  StreamId stream = 0;
  ComputeKind compute = ComputeKind::forward;             ///< compute ops
  CollectiveKind collective = CollectiveKind::broadcast;  ///< collective ops
  std::int32_t group = kNone;    ///< NCCL-style group id (unique in the program), or kNone
  Rank peer = kNone;             ///< send/recv: the other rank; broadcast/reduce: the root rank
  CommId comm = kNone;           ///< send/recv/collective
  std::int32_t layer_begin = 0;  ///< compute: layer range (kEmbeddingLayer for embedding/head)
  std::int32_t layer_end = 0;
  std::int32_t sample = kNone;  ///< compute: micro-batch id
  CostId cost = kNone;          ///< compute: index into Program::costs
  std::uint64_t bytes = 0;      ///< send/recv/copy: message bytes; collectives: see below
  std::uint32_t deps_offset = 0;
  std::uint32_t deps_count = 0;
  std::uint32_t buffers_offset = 0;  ///< reads then writes, in RankProgram::buffer_pool
  std::uint16_t reads_count = 0;
  std::uint16_t writes_count = 0;
  friend bool operator==(const Op&, const Op&) = default;
};
// Collective `bytes`: broadcast/reduce/all_reduce: the message size; all_gather: the size of
// the gathered (full) output; reduce_scatter: the size of the full input. Collective buffers:
// reads[0] = send buffer, writes[0] = receive buffer (may be the same buffer: in place).
// send: reads[0]; recv: writes[0]; copy: reads[0] -> writes[0]; alloc/free: every buffer in
// writes (one or more: e.g. all activations a backward op releases), no reads.

/// Ops and buffers of one rank.
struct RankProgram {
  std::vector<Buffer> buffers;
  std::vector<Op> ops;
  std::vector<OpIndex> dep_pool;
  std::vector<BufferId> buffer_pool;
  friend bool operator==(const RankProgram&, const RankProgram&) = default;
};

/// What the program was generated from: enough to label reports and to check that a measured
/// trace belongs to a predicted one.
struct Header {
  int format_version = kFormatVersion;
  std::string schedule;                        ///< registry name, e.g. "tawpipe"
  std::map<std::string, std::string> options;  ///< schedule options as given (groups=3, ...)
  std::string model;                           ///< model name
  std::int32_t layers = 0;                     ///< decoder layers of the model
  std::uint64_t model_params = 0;              ///< total parameters
  std::int32_t seq_len = 0;
  std::int32_t micro_batch_size = 0;    ///< sequences per micro-batch
  std::int32_t micro_batches = 0;       ///< micro-batches per rank (or per pipeline)
  std::int64_t global_batch = 0;        ///< sequences per iteration over all ranks
  std::string dtype;                    ///< compute dtype: bf16, fp16, fp32
  std::string recompute;                ///< none, selective, full
  std::string topology;                 ///< topology name
  std::string topology_hash;            ///< Topology::content_hash()
  std::vector<std::int32_t> placement;  ///< rank -> topology GPU index
  friend bool operator==(const Header&, const Header&) = default;
};

struct Program {
  Header header;
  std::vector<std::string> streams;  ///< stream names; 0 is "compute"
  std::vector<Communicator> communicators;
  std::vector<Cost> costs;
  std::vector<RankProgram> ranks;
  /// 0: every rank is stored (every program that is written, read or executed). R > 0:
  /// a replica-compact program, the simulator's internal form at scale (ScheduleInput::
  /// replica_only, sim/symmetry/symmetry.h): only ranks [0, R) are stored, and every other
  /// rank's RankProgram is empty; by the generator's construction rank r >= R runs the image of
  /// rank r mod R's program under the shift by whole replicas (peers and communicators shifted,
  /// micro-batch ids renamed so that every replica has its own). Header, streams, costs and every
  /// communicator (all replicas') are as in the full program; so are the stored ranks. verify()
  /// checks it in this form (common/ir/verify_replicas.cpp).
  std::int32_t stored_ranks = 0;

  std::int32_t num_ranks() const { return static_cast<std::int32_t>(ranks.size()); }
  /// Whether only replica 0's ranks are stored (see `stored_ranks`).
  bool compact() const { return stored_ranks > 0; }
  /// The rank whose stored program rank `r` runs (itself unless the program is compact).
  const RankProgram& program_of(Rank r) const {
    return ranks[static_cast<std::size_t>(compact() ? r % stored_ranks : r)];
  }
  /// Field-by-field equality (pools included): what an exact JSON round trip preserves.
  friend bool operator==(const Program&, const Program&) = default;
};

/// Helpers to read an op's lists (inline: the verifier and the simulator call them per op).
inline std::span<const OpIndex> deps(const RankProgram& rank, const Op& op) {
  return std::span<const OpIndex>(rank.dep_pool).subspan(op.deps_offset, op.deps_count);
}
inline std::span<const BufferId> reads(const RankProgram& rank, const Op& op) {
  return std::span<const BufferId>(rank.buffer_pool).subspan(op.buffers_offset, op.reads_count);
}
inline std::span<const BufferId> writes(const RankProgram& rank, const Op& op) {
  return std::span<const BufferId>(rank.buffer_pool)
      .subspan(op.buffers_offset + op.reads_count, op.writes_count);
}

// Names for text forms (canonical dump, JSON, traces). Each *_from_name returns false on unknown.
const char* name(OpKind);
const char* name(ComputeKind);
const char* name(CollectiveKind);
const char* name(BufferRole);
const char* name(TensorKind);
bool from_name(std::string_view, OpKind*);
bool from_name(std::string_view, ComputeKind*);
bool from_name(std::string_view, CollectiveKind*);
bool from_name(std::string_view, BufferRole*);
bool from_name(std::string_view, TensorKind*);

}  // namespace tawpipe::ir
