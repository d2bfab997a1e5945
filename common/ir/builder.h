/// \file
/// ProgramBuilder: the API the schedule generators use to emit a Program. It owns the pools,
/// deduplicates costs and communicators, hands out group ids, and asserts on misuse that is a
/// generator bug (unknown rank or buffer, dependency on a later op). Whether the resulting program
/// is *correct* is the verifier's job, not the builder's.
///
/// Concurrency: the calls that name a rank (buffer, compute, send, recv, collective, copy, alloc,
/// free, next_op) touch only that rank's state, so several threads may emit for *different*
/// ranks at once, provided none of them meanwhile creates a stream, communicator, cost or group.
/// A generator that does so creates those tables first and brackets the parallel part with
/// freeze_shared_tables(true/false); in debug builds a creation while frozen asserts.
#pragma once

#include <atomic>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/ir/program.h"

namespace tawpipe::ir {

class ProgramBuilder {
 public:
  /// Creates an empty program for `num_ranks` ranks with stream 0 named "compute". With
  /// `stored_ranks` in (0, num_ranks) the program is replica-compact (Program::stored_ranks):
  /// the calls that name a rank >= stored_ranks only count (op indices and buffer ids come out
  /// as if stored) and store nothing; everything shared (streams, communicators, costs, groups)
  /// is created exactly as in the full program. The generator guarantees that the ranks not
  /// stored are images of the stored ones (sim/symmetry/symmetry.h).
  ProgramBuilder(Header header, std::int32_t num_ranks, std::int32_t stored_ranks = 0);

  /// The id of the stream named `name`, created on first use.
  StreamId stream(std::string_view name);
  /// The id of a communicator with exactly these ordered members, created on first use (a second
  /// call with the same members returns the same id; `name` is kept from the first call).
  CommId communicator(std::string name, std::vector<Rank> members);
  /// A communicator of these members distinct from every other one, created on the first call
  /// with this name (later calls with the same name and members return it; `communicator`
  /// never returns it). NCCL runs the
  /// operations of one communicator one at a time on a GPU, so transfers among the same ranks
  /// that must be in flight together need two communicators.
  CommId distinct_communicator(std::string name, std::vector<Rank> members);
  /// The id of an equal cost, created on first use.
  CostId cost(const Cost& cost);
  /// A fresh group id for ops posted together.
  std::int32_t new_group();

  /// Declares a buffer on `rank`. Names must be unique per rank.
  BufferId buffer(Rank rank, std::string name, Bytes size, BufferRole role, bool persistent,
                  TensorRef initial = {});

  OpIndex compute(Rank rank, StreamId stream, ComputeKind kind, std::int32_t layer_begin,
                  std::int32_t layer_end, std::int32_t sample, CostId cost,
                  std::initializer_list<BufferId> reads, std::initializer_list<BufferId> writes,
                  std::span<const OpIndex> deps = {});
  /// As above, with operand lists built at run time.
  OpIndex compute(Rank rank, StreamId stream, ComputeKind kind, std::int32_t layer_begin,
                  std::int32_t layer_end, std::int32_t sample, CostId cost,
                  std::span<const BufferId> reads, std::span<const BufferId> writes,
                  std::span<const OpIndex> deps = {});
  OpIndex send(Rank rank, StreamId stream, Rank peer, CommId comm, Bytes bytes, BufferId buffer,
               std::span<const OpIndex> deps = {}, std::int32_t group = kNone);
  OpIndex recv(Rank rank, StreamId stream, Rank peer, CommId comm, Bytes bytes, BufferId buffer,
               std::span<const OpIndex> deps = {}, std::int32_t group = kNone);
  /// `root` is a rank (broadcast/reduce) or kNone. See program.h for the meaning of `bytes`.
  OpIndex collective(Rank rank, StreamId stream, CollectiveKind kind, CommId comm, Rank root,
                     Bytes bytes, BufferId send_buffer, BufferId recv_buffer,
                     std::span<const OpIndex> deps = {});
  OpIndex copy(Rank rank, StreamId stream, BufferId src, BufferId dst, Bytes bytes,
               std::span<const OpIndex> deps = {});
  OpIndex alloc(Rank rank, StreamId stream, BufferId buffer, std::span<const OpIndex> deps = {});
  OpIndex free(Rank rank, StreamId stream, BufferId buffer, std::span<const OpIndex> deps = {});
  /// One alloc (free) op acting on every buffer of `buffers` (at least one).
  OpIndex alloc(Rank rank, StreamId stream, std::span<const BufferId> buffers,
                std::span<const OpIndex> deps = {});
  OpIndex free(Rank rank, StreamId stream, std::span<const BufferId> buffers,
               std::span<const OpIndex> deps = {});

  /// While frozen, stream/communicator/cost may only look up existing entries and new_group
  /// must not be called (see the concurrency note above).
  void freeze_shared_tables(bool frozen) { frozen_ = frozen; }

  /// Number of ops emitted so far on `rank` (the index the next op will get).
  OpIndex next_op(Rank rank) const;
  /// Whether `rank`'s ops and buffers are stored (not only counted: see the constructor).
  bool stored(Rank rank) const { return rank < stored_; }
  /// Read access while building (e.g. to look up a buffer's size).
  const Program& program() const { return program_; }

  /// Ends building. The builder is empty afterwards.
  Program finish() &&;

 private:
  /// Strict weak order on Cost (lexicographic over its fields) for deduplication.
  struct CostLess {
    bool operator()(const Cost& a, const Cost& b) const;
  };
  /// Per-rank bookkeeping for the builder's asserts (filled in debug builds only).
  struct RankState {
    std::unordered_set<std::string> buffer_names;
    std::unordered_set<std::int32_t> closed_groups;  ///< groups this rank has moved past
    std::int32_t open_group = kNone;                 ///< group of the rank's last op
  };

  void check_rank(Rank rank) const;
  /// Debug checks of a communicator's members: in range, no duplicates, not empty.
  void check_members(const std::vector<Rank>& members) const;
  /// Appends a communicator (no lookup).
  CommId add_communicator(std::string name, std::vector<Rank> members);
  void check_buffer(Rank rank, BufferId buffer) const;
  /// Appends an op with its lists to `rank`'s pools; asserts on bad ids and group misuse.
  OpIndex push(Rank rank, const Op& op, std::span<const BufferId> reads,
               std::span<const BufferId> writes, std::span<const OpIndex> deps);

  /// Reserves `r`'s vectors at the sizes of the largest rank so far.
  void reserve_like_largest(RankProgram& r) const;
  /// largest = max(largest, value), safe against concurrent emitters.
  static void raise(std::atomic<std::size_t>& largest, std::size_t value);

  Program program_;
  std::int32_t stored_ = 0;  ///< ranks [0, stored_) are stored
  /// Ranks not stored: ops and buffers counted so far, by rank - stored_.
  std::vector<std::int32_t> counted_ops_;
  std::vector<std::int32_t> counted_buffers_;
  // Sizes of the largest rank so far (a sizing hint; updated by concurrent emitters).
  std::atomic<std::size_t> largest_ops_{0};
  std::atomic<std::size_t> largest_deps_{0};
  std::atomic<std::size_t> largest_buffer_refs_{0};
  std::atomic<std::size_t> largest_buffers_{0};
  bool frozen_ = false;
  std::int32_t next_group_ = 0;
  std::map<std::vector<Rank>, CommId> comm_index_;
  /// Every communicator by a hash of (name, members), for distinct_communicator's "the first
  /// equal one" without a walk over all of them (quadratic: half of 16,384-GPU TawPipe's time).
  std::unordered_multimap<std::uint64_t, CommId> named_comm_index_;
  std::map<Cost, CostId, CostLess> cost_index_;
  std::vector<RankState> state_;
};

}  // namespace tawpipe::ir
