#include "common/ir/builder.h"

#include <cassert>
#include <cmath>
#include <functional>
#include <tuple>
#include <utility>
#include "common/memory.h"

namespace tawpipe::ir {

bool ProgramBuilder::CostLess::operator()(const Cost& a, const Cost& b) const {
  return std::tie(a.flops, a.bytes, a.recompute_flops, a.workspace_bytes, a.kernels) <
         std::tie(b.flops, b.bytes, b.recompute_flops, b.workspace_bytes, b.kernels);
}

ProgramBuilder::ProgramBuilder(Header header, std::int32_t num_ranks, std::int32_t stored_ranks) {
  assert(num_ranks > 0 && stored_ranks >= 0);
  program_.header = std::move(header);
  program_.streams.emplace_back("compute");
  program_.ranks.resize(static_cast<std::size_t>(num_ranks));
  stored_ = stored_ranks > 0 && stored_ranks < num_ranks ? stored_ranks : num_ranks;
  if (stored_ < num_ranks) {
    program_.stored_ranks = stored_;
    counted_ops_.assign(static_cast<std::size_t>(num_ranks - stored_), 0);
    counted_buffers_.assign(counted_ops_.size(), 0);
  }
  state_.resize(static_cast<std::size_t>(stored_));
}

StreamId ProgramBuilder::stream(std::string_view stream_name) {
  for (std::size_t i = 0; i < program_.streams.size(); ++i) {
    if (program_.streams[i] == stream_name) return static_cast<StreamId>(i);
  }
  assert(!frozen_ && "stream created while the shared tables are frozen");
  assert(program_.streams.size() < 256 && "too many streams for StreamId");
  program_.streams.emplace_back(stream_name);
  return static_cast<StreamId>(program_.streams.size() - 1);
}

void ProgramBuilder::check_members([[maybe_unused]] const std::vector<Rank>& members) const {
  assert(!members.empty());
#ifndef NDEBUG
  for (std::size_t i = 0; i < members.size(); ++i) {
    check_rank(members[i]);
    for (std::size_t j = 0; j < i; ++j)
      assert(members[i] != members[j] && "duplicate communicator member");
  }
#endif
}

namespace {

/// Hash of a communicator's name and members (a lookup key only: matches are compared in full).
std::uint64_t name_members_hash(std::string_view name, const std::vector<Rank>& members) {
  constexpr std::uint64_t kMix = 0x9e3779b97f4a7c15u;  // boost::hash_combine's mixing
  std::uint64_t h = std::hash<std::string_view>{}(name);
  for (const Rank r : members)
    h ^= static_cast<std::uint64_t>(static_cast<std::uint32_t>(r)) + kMix + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

CommId ProgramBuilder::add_communicator(std::string comm_name, std::vector<Rank> members) {
  assert(!frozen_ && "communicator created while the shared tables are frozen");
  const auto id = static_cast<CommId>(program_.communicators.size());
  named_comm_index_.emplace(name_members_hash(comm_name, members), id);
  program_.communicators.push_back(Communicator{std::move(comm_name), std::move(members)});
  return id;
}

CommId ProgramBuilder::communicator(std::string comm_name, std::vector<Rank> members) {
  check_members(members);
  auto it = comm_index_.find(members);
  if (it != comm_index_.end()) return it->second;
  const CommId id = add_communicator(std::move(comm_name), members);
  comm_index_.emplace(std::move(members), id);
  return id;
}

CommId ProgramBuilder::distinct_communicator(std::string comm_name, std::vector<Rank> members) {
  check_members(members);
  // The first communicator of that name and members, if any.
  CommId first = kNone;
  const auto [begin, end] = named_comm_index_.equal_range(name_members_hash(comm_name, members));
  for (auto it = begin; it != end; ++it) {
    const Communicator& c = program_.communicators[static_cast<std::size_t>(it->second)];
    if ((first == kNone || it->second < first) && c.name == comm_name && c.members == members)
      first = it->second;
  }
  if (first != kNone) return first;
  // Not entered in comm_index_: `communicator` never hands a distinct one out.
  return add_communicator(std::move(comm_name), std::move(members));
}

CostId ProgramBuilder::cost(const Cost& c) {
#ifndef NDEBUG
  for (double v : c.flops)
    assert(std::isfinite(v) && v >= 0.0);
  for (double v : c.bytes)
    assert(std::isfinite(v) && v >= 0.0);
  assert(std::isfinite(c.recompute_flops) && c.recompute_flops >= 0.0);
#endif
  auto it = cost_index_.find(c);
  if (it != cost_index_.end()) return it->second;
  assert(!frozen_ && "cost created while the shared tables are frozen");
  const auto id = static_cast<CostId>(program_.costs.size());
  cost_index_.emplace(c, id);
  program_.costs.push_back(c);
  return id;
}

std::int32_t ProgramBuilder::new_group() {
  assert(!frozen_ && "group created while the shared tables are frozen");
  return next_group_++;
}

void ProgramBuilder::check_rank([[maybe_unused]] Rank rank) const {
  assert(rank >= 0 && rank < program_.num_ranks() && "rank out of range");
}

void ProgramBuilder::check_buffer([[maybe_unused]] Rank rank,
                                  [[maybe_unused]] BufferId buffer) const {
  check_rank(rank);
  assert(buffer >= 0 && rank < stored_ &&
         static_cast<std::size_t>(buffer) <
             program_.ranks[static_cast<std::size_t>(rank)].buffers.size() &&
         "buffer id out of range");
}

BufferId ProgramBuilder::buffer(Rank rank, std::string buffer_name, Bytes size, BufferRole role,
                                bool persistent, TensorRef initial) {
  check_rank(rank);
  if (rank >= stored_) return counted_buffers_[static_cast<std::size_t>(rank - stored_)]++;
  auto& r = program_.ranks[static_cast<std::size_t>(rank)];
#ifndef NDEBUG
  // Only for the assert: a string copy and a hash insert per buffer cost 1-2 % of generating
  // 1024 ranks, so release builds skip the bookkeeping (the verifier checks names anyway).
  const bool inserted =
      state_[static_cast<std::size_t>(rank)].buffer_names.insert(buffer_name).second;
  assert(inserted && "buffer name not unique on this rank");
#endif
  // Sized like the largest rank so far, as the op lists (reserve_like_largest): a Buffer holds a
  // string, so every regrowth moves all of them.
  if (r.buffers.empty()) r.buffers.reserve(largest_buffers_.load(std::memory_order_relaxed));
  r.buffers.emplace_back(std::move(buffer_name), size, role, persistent, initial);  // in place
  raise(largest_buffers_, r.buffers.size());
  return static_cast<BufferId>(r.buffers.size() - 1);
}

OpIndex ProgramBuilder::push(Rank rank, const Op& op, std::span<const BufferId> op_reads,
                             std::span<const BufferId> op_writes,
                             std::span<const OpIndex> op_deps) {
  check_rank(rank);
  assert(op.stream < program_.streams.size() && "unknown stream");
  if (rank >= stored_) return counted_ops_[static_cast<std::size_t>(rank - stored_)]++;
  auto& r = program_.ranks[static_cast<std::size_t>(rank)];
  const auto index = static_cast<OpIndex>(r.ops.size());
  if (index == 0) reserve_like_largest(r);
  for (BufferId b : op_reads)
    check_buffer(rank, b);
  for (BufferId b : op_writes)
    check_buffer(rank, b);
  for ([[maybe_unused]] OpIndex d : op_deps)
    assert(d >= 0 && d < index && "dependency on a non-earlier op");
#ifndef NDEBUG
  // Group ops must be consecutive in program order and on one stream. Only for the asserts (a
  // hash insert per group, the pairwise exchanges of the weight-passing schedules): release
  // builds skip it.
  auto& st = state_[static_cast<std::size_t>(rank)];
  if (op.group != st.open_group) {
    if (st.open_group != kNone) st.closed_groups.insert(st.open_group);
    assert((op.group == kNone || st.closed_groups.count(op.group) == 0) &&
           "group ops not consecutive on this rank");
    st.open_group = op.group;
  } else if (op.group != kNone) {
    const Op& prev = r.ops.back();
    assert(prev.stream == op.stream && "group ops on different streams");
  }
#endif
  assert(op_reads.size() < 65536 && op_writes.size() < 65536);
  // The op is copied into place once and its list fields filled there.
  Op& added = r.ops.emplace_back(op);
  added.deps_offset = static_cast<std::uint32_t>(r.dep_pool.size());
  added.deps_count = static_cast<std::uint32_t>(op_deps.size());
  added.buffers_offset = static_cast<std::uint32_t>(r.buffer_pool.size());
  added.reads_count = static_cast<std::uint16_t>(op_reads.size());
  added.writes_count = static_cast<std::uint16_t>(op_writes.size());
  // Element-wise appends: the lists are a few ids, for which a memmove call costs more.
  for (OpIndex d : op_deps)
    r.dep_pool.push_back(d);
  for (BufferId b : op_reads)
    r.buffer_pool.push_back(b);
  for (BufferId b : op_writes)
    r.buffer_pool.push_back(b);
  raise(largest_ops_, r.ops.size());
  raise(largest_deps_, r.dep_pool.size());
  raise(largest_buffer_refs_, r.buffer_pool.size());
  return index;
}

void ProgramBuilder::raise(std::atomic<std::size_t>& largest, std::size_t value) {
  std::size_t seen = largest.load(std::memory_order_relaxed);
  while (value > seen && !largest.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

void ProgramBuilder::reserve_like_largest(RankProgram& r) const {
  // Ranks of one schedule have programs of similar length (SPMD), and generators mostly emit
  // rank after rank: sizing a fresh rank like the largest so far avoids the repeated
  // grow-and-copy of its vectors, which dominated generation time at 1024 ranks.
  // Pre-faulted: the rank will fill them (see common/memory.h for what a page fault costs).
  reserve_prefaulted(r.ops, largest_ops_.load(std::memory_order_relaxed));
  reserve_prefaulted(r.dep_pool, largest_deps_.load(std::memory_order_relaxed));
  reserve_prefaulted(r.buffer_pool, largest_buffer_refs_.load(std::memory_order_relaxed));
}

OpIndex ProgramBuilder::compute(Rank rank, StreamId stream_id, ComputeKind kind,
                                std::int32_t layer_begin, std::int32_t layer_end,
                                std::int32_t sample, CostId cost_id,
                                std::initializer_list<BufferId> op_reads,
                                std::initializer_list<BufferId> op_writes,
                                std::span<const OpIndex> op_deps) {
  return compute(rank, stream_id, kind, layer_begin, layer_end, sample, cost_id,
                 std::span<const BufferId>(op_reads.begin(), op_reads.size()),
                 std::span<const BufferId>(op_writes.begin(), op_writes.size()), op_deps);
}

OpIndex ProgramBuilder::compute(Rank rank, StreamId stream_id, ComputeKind kind,
                                std::int32_t layer_begin, std::int32_t layer_end,
                                std::int32_t sample, CostId cost_id,
                                std::span<const BufferId> op_reads,
                                std::span<const BufferId> op_writes,
                                std::span<const OpIndex> op_deps) {
  assert(cost_id == kNone ||
         (cost_id >= 0 && static_cast<std::size_t>(cost_id) < program_.costs.size()));
  Op op;
  op.kind = OpKind::compute;
  op.stream = stream_id;
  op.compute = kind;
  op.layer_begin = layer_begin;
  op.layer_end = layer_end;
  op.sample = sample;
  op.cost = cost_id;
  return push(rank, op, op_reads, op_writes, op_deps);
}

OpIndex ProgramBuilder::send(Rank rank, StreamId stream_id, Rank peer, CommId comm, Bytes bytes,
                             BufferId buf, std::span<const OpIndex> op_deps, std::int32_t group) {
  check_rank(peer);
  assert(peer != rank && "send to self");
  assert(comm >= 0 && static_cast<std::size_t>(comm) < program_.communicators.size());
  Op op;
  op.kind = OpKind::send;
  op.stream = stream_id;
  op.group = group;
  op.peer = peer;
  op.comm = comm;
  op.bytes = bytes.count();
  const BufferId list[] = {buf};
  return push(rank, op, list, {}, op_deps);
}

OpIndex ProgramBuilder::recv(Rank rank, StreamId stream_id, Rank peer, CommId comm, Bytes bytes,
                             BufferId buf, std::span<const OpIndex> op_deps, std::int32_t group) {
  check_rank(peer);
  assert(peer != rank && "recv from self");
  assert(comm >= 0 && static_cast<std::size_t>(comm) < program_.communicators.size());
  Op op;
  op.kind = OpKind::recv;
  op.stream = stream_id;
  op.group = group;
  op.peer = peer;
  op.comm = comm;
  op.bytes = bytes.count();
  const BufferId list[] = {buf};
  return push(rank, op, {}, list, op_deps);
}

OpIndex ProgramBuilder::collective(Rank rank, StreamId stream_id, CollectiveKind kind, CommId comm,
                                   Rank root, Bytes bytes, BufferId send_buffer,
                                   BufferId recv_buffer, std::span<const OpIndex> op_deps) {
  assert(comm >= 0 && static_cast<std::size_t>(comm) < program_.communicators.size());
  if (kind == CollectiveKind::broadcast || kind == CollectiveKind::reduce) {
    check_rank(root);
  } else {
    assert(root == kNone && "root given for a rootless collective");
  }
  Op op;
  op.kind = OpKind::collective;
  op.stream = stream_id;
  op.collective = kind;
  op.peer = root;
  op.comm = comm;
  op.bytes = bytes.count();
  const BufferId r[] = {send_buffer};
  const BufferId w[] = {recv_buffer};
  return push(rank, op, r, w, op_deps);
}

OpIndex ProgramBuilder::copy(Rank rank, StreamId stream_id, BufferId src, BufferId dst, Bytes bytes,
                             std::span<const OpIndex> op_deps) {
  Op op;
  op.kind = OpKind::copy;
  op.stream = stream_id;
  op.bytes = bytes.count();
  const BufferId r[] = {src};
  const BufferId w[] = {dst};
  return push(rank, op, r, w, op_deps);
}

OpIndex ProgramBuilder::alloc(Rank rank, StreamId stream_id, BufferId buf,
                              std::span<const OpIndex> op_deps) {
  const BufferId w[] = {buf};
  return alloc(rank, stream_id, w, op_deps);
}

OpIndex ProgramBuilder::free(Rank rank, StreamId stream_id, BufferId buf,
                             std::span<const OpIndex> op_deps) {
  const BufferId w[] = {buf};
  return free(rank, stream_id, w, op_deps);
}

OpIndex ProgramBuilder::alloc(Rank rank, StreamId stream_id, std::span<const BufferId> bufs,
                              std::span<const OpIndex> op_deps) {
  assert(!bufs.empty() && "alloc of no buffer");
  Op op;
  op.kind = OpKind::alloc;
  op.stream = stream_id;
  return push(rank, op, {}, bufs, op_deps);
}

OpIndex ProgramBuilder::free(Rank rank, StreamId stream_id, std::span<const BufferId> bufs,
                             std::span<const OpIndex> op_deps) {
  assert(!bufs.empty() && "free of no buffer");
  Op op;
  op.kind = OpKind::free;
  op.stream = stream_id;
  return push(rank, op, {}, bufs, op_deps);
}

OpIndex ProgramBuilder::next_op(Rank rank) const {
  check_rank(rank);
  if (rank >= stored_) return counted_ops_[static_cast<std::size_t>(rank - stored_)];
  return static_cast<OpIndex>(program_.ranks[static_cast<std::size_t>(rank)].ops.size());
}

Program ProgramBuilder::finish() && {
  Program out = std::move(program_);
  program_ = Program{};
  next_group_ = 0;
  comm_index_.clear();
  cost_index_.clear();
  state_.clear();
  counted_ops_.clear();
  counted_buffers_.clear();
  stored_ = 0;
  return out;
}

}  // namespace tawpipe::ir
