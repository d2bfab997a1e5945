/// \file
/// Internals shared by the verifier's stages (verify_*.cpp). Not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/ir/program.h"

namespace tawpipe::ir::detail {

/// A verification failure before it is turned into a VerifyResult.
struct Failure {
  std::string message;
  Rank rank = kNone;
  OpIndex op = kNone;
  std::vector<std::string> details;
};
using Check = std::optional<Failure>;

/// `<describe_op(rank, op)>: <what>`.
Failure fail_at(const Program& program, Rank rank, OpIndex op, const std::string& what);

/// Global op index: ops of rank 0, then rank 1, ... The structure stage guarantees that the
/// total fits (kMaxOps), so the later stages keep one 32-bit number per op instead of two.
using GlobalOp = std::int32_t;
inline constexpr std::int64_t kMaxOps = 0x7fffffff;

/// Global op numbering: global index of (rank, op) = first[rank] + op.
struct OpNumbering {
  std::vector<GlobalOp> first;  ///< size num_ranks + 1
  explicit OpNumbering(const Program& program);
  GlobalOp global(Rank rank, OpIndex op) const {
    return first[static_cast<std::size_t>(rank)] + op;
  }
  GlobalOp total() const { return first.back(); }
  /// Inverse of global(); O(log P).
  std::pair<Rank, OpIndex> local(GlobalOp global_index) const;
};

/// The form being verified (verify_replicas.cpp): a whole program, or a replica-compact one
/// (Program::stored_ranks) verified through its stored replica.
struct Replicas {
  std::int32_t stored = 0;  ///< R: ranks [0, R) are stored; 0: the whole form (every rank)
  std::int32_t count = 1;   ///< k = N / R replicas (1 for the whole form)
  /// Per communicator: 1 when the shift by R maps it onto itself (cross-replica).
  std::vector<char> cross;
  bool compact() const { return stored > 0; }
  bool cross_replica(CommId c) const {
    return compact() && cross[static_cast<std::size_t>(c)] != 0;
  }
  /// One past the last rank whose ops are stored (and checked).
  Rank stored_end(const Program& program) const { return compact() ? stored : program.num_ranks(); }
};

/// How a compact program relates to its whole form: the whole form when the program is not
/// compact; a failure when the compact storage itself is malformed (stored_ranks not dividing
/// the rank count, ops stored beyond replica 0); `whole_form_needed` set, with the reason in
/// `why`, when a premise of the compact verification does not hold (then only the whole form can
/// be verified). Precondition: the structure check passed.
Check replica_form(const Program& program, Replicas* replicas, bool* whole_form_needed,
                   std::string* why);

/// Result of the matching stage, used by the execution.
struct Matching {
  /// Per global op: send/recv: global index of the partner; collective: instance id; else -1.
  std::vector<GlobalOp> link;
  /// Collective instances: members' (rank, op), in communicator member order, at
  /// instance_ops[instance_first[i] .. instance_first[i + 1]).
  std::vector<std::int32_t> instance_first;
  std::vector<std::pair<Rank, OpIndex>> instance_ops;
};

/// Stage 1. Everything later may rely on what this establishes (ids, offsets, enums in range).
/// Checks ranks on up to `threads` threads; the result does not depend on the count.
Check check_structure(const Program& program, int threads);
/// Stage 2.
/// In compact form only the stored ranks take part: a cross-replica collective's instance lists
/// its stored members only.
Check match(const Program& program, const Replicas& replicas, const OpNumbering& numbering,
            Matching* matching);

class Dataflow;
/// Stages 3 and 4: runs the logical execution; with `dataflow` non-null, evaluates contents in
/// the completion order. Returns the deadlock if there is one, else the first dataflow failure.
Check execute(const Program& program, const OpNumbering& numbering, const Matching& matching,
              Dataflow* dataflow, bool* deadlock, int threads);

/// Stage 4's state and rules (verify_dataflow.cpp).
class Dataflow {
 public:
  Dataflow(const Program& program, const Replicas& replicas, int threads);
  /// Checks run before execution (duplicate samples).
  Check prepare();
  /// A local op (compute, copy, alloc, free) runs.
  Check local(Rank rank, OpIndex op);
  /// A matched send/recv pair moves its data.
  Check transfer(Rank send_rank, OpIndex send_op, Rank recv_rank, OpIndex recv_op);
  /// A collective instance runs; `ops` are the members' (rank, op) in member order.
  Check collective(std::span<const std::pair<Rank, OpIndex>> ops);
  /// Checks after a complete execution (every owned weight updated).
  Check finish();

  /// A buffer's content. Gradients of a compact program: the content of the stored rank is
  /// A + N B (verify_replicas.cpp) with A its own replica's contributions (`fingerprint`,
  /// `count`) and B those summed over every replica (`replicated_*`); B is empty in the whole
  /// form.
  struct Content {
    TensorRef ref;
    std::uint64_t fingerprint = 0;             ///< gradients: sum of contribution keys (mod 2^64)
    std::uint64_t count = 0;                   ///< gradients: number of contributions
    std::uint64_t replicated_fingerprint = 0;  ///< compact form: B's fingerprint
    std::uint64_t replicated_count = 0;        ///< compact form: B's contributions
  };
  /// What the checks of every operand read (liveness, and the role by which compute finds its
  /// operands), apart from the contents: two bytes a buffer, so that the liveness check of an
  /// alloc or an operand hits the cache where the buffer's content (touched last at its
  /// previous use, often much earlier in the execution) would miss it.
  struct Hot {
    bool live = false;
    BufferRole role = BufferRole::workspace;  ///< copy of the buffer's role
  };
  struct BufferState {
    Content content;
    OpIndex freed_by = kNone;
    OpIndex updated_by = kNone;  ///< first optimizer op that updated it
  };

 private:
  Check compute(Rank rank, OpIndex index);
  Check optimizer(Rank rank, OpIndex index);
  /// Fails unless `buffer` is live (inline: it runs for every operand of every op).
  Check require_live(Rank rank, OpIndex index, BufferId buffer, const char* verb) {
    if (hot(rank, buffer).live) return std::nullopt;
    return dead_buffer(rank, index, buffer, verb);
  }
  Check dead_buffer(Rank rank, OpIndex index, BufferId buffer, const char* verb);
  BufferState& state(Rank rank, BufferId buffer) {
    return buffers_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(buffer)];
  }
  Hot& hot(Rank rank, BufferId buffer) {
    return hot_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(buffer)];
  }
  std::uint64_t expected_fingerprint(std::int32_t begin, std::int32_t end) const;
  std::uint64_t expected_count(std::int32_t begin, std::int32_t end) const;

  Check cross_replica_sum(std::span<const std::pair<Rank, OpIndex>> ops);

  const Program& program_;
  const Replicas& replicas_;
  std::vector<std::vector<BufferState>> buffers_;
  std::vector<std::vector<Hot>> hot_;  ///< per rank and buffer, as buffers_
  std::vector<std::int32_t> samples_;
  std::vector<std::uint64_t> layer_prefix_;  ///< prefix sums of per-layer expected keys
  std::uint64_t embedding_expected_ = 0;
};

/// The pseudo-random key of one gradient contribution (splitmix64 of the triple).
/// `source`: 0 = decoder backward, 1 = head, 2 = embedding_backward.
std::uint64_t contribution_key(std::int32_t sample, std::int32_t layer, std::uint32_t source);

}  // namespace tawpipe::ir::detail
