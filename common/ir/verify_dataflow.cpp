// Stage 4 of the verifier: symbolic dataflow. The rules are those of program.h ("Exact content
// rules"); this file applies them op by op, in the completion order of the logical execution.
//
// Gradient bookkeeping: a gradient content carries a fingerprint, the sum (mod 2^64) of the
// pseudo-random keys of its contributions, plus their count. The complete gradient of a block is
// known in advance (every sample of the program, each layer of the block, once), so an optimizer
// can tell complete from incomplete (count too low), duplicated (count too high) or wrong (count
// right, keys wrong) without tracking sets.
#include <algorithm>
#include <unordered_map>

#include "common/ir/text.h"
#include "common/ir/verify_internal.h"
#include "common/parallel.h"

namespace tawpipe::ir::detail {
namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::uint32_t kSourceDecoder = 0;  // keep in sync with verify_compute.cpp
constexpr std::uint32_t kSourceHead = 1;
constexpr std::uint32_t kSourceEmbedding = 2;

bool same_block(const TensorRef& a, const TensorRef& b) {
  return a.layer_begin == b.layer_begin && a.layer_end == b.layer_end && a.piece == b.piece &&
         a.pieces == b.pieces;
}

}  // namespace

std::uint64_t contribution_key(std::int32_t sample, std::int32_t layer, std::uint32_t source) {
  std::uint64_t h = splitmix64(static_cast<std::uint64_t>(static_cast<std::uint32_t>(sample)));
  h = splitmix64(h ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(layer)));
  return splitmix64(h ^ source);
}

Dataflow::Dataflow(const Program& program, const Replicas& replicas, int threads)
    : program_(program), replicas_(replicas) {
  buffers_.resize(program.ranks.size());
  hot_.resize(program.ranks.size());
  parallel_for(0, program.num_ranks(), threads, [&](std::int64_t i, int) {
    const auto r = static_cast<std::size_t>(i);
    const auto& bufs = program.ranks[r].buffers;
    buffers_[r].resize(bufs.size());
    hot_[r].resize(bufs.size());
    for (std::size_t b = 0; b < bufs.size(); ++b) {
      hot_[r][b].role = bufs[b].role;
      if (!bufs[b].persistent) continue;
      hot_[r][b].live = true;
      buffers_[r][b].content.ref = bufs[b].initial;
    }
  });
}

Check Dataflow::prepare() {
  std::unordered_map<std::int32_t, std::pair<Rank, OpIndex>> seen;
  Check duplicate;
  for (Rank r = 0; r < program_.num_ranks(); ++r) {
    const auto& ops = program_.ranks[static_cast<std::size_t>(r)].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != OpKind::compute || ops[i].compute != ComputeKind::embedding_forward)
        continue;
      const auto [it, inserted] =
          seen.emplace(ops[i].sample, std::pair{r, static_cast<OpIndex>(i)});
      if (!inserted && !duplicate) {
        duplicate = fail_at(program_, r, static_cast<OpIndex>(i),
                            "sample " + str(ops[i].sample) + " is embedded twice (also by " +
                                describe_op(program_, it->second.first, it->second.second, false) +
                                "); samples must be unique over the program");
      }
      if (inserted) samples_.push_back(ops[i].sample);
    }
  }
  std::sort(samples_.begin(), samples_.end());
  const auto layers = static_cast<std::size_t>(program_.header.layers);
  layer_prefix_.assign(layers + 1, 0);
  for (std::size_t l = 0; l < layers; ++l) {
    std::uint64_t sum = 0;
    for (std::int32_t s : samples_)
      sum += contribution_key(s, static_cast<std::int32_t>(l), kSourceDecoder);
    layer_prefix_[l + 1] = layer_prefix_[l] + sum;
  }
  for (std::int32_t s : samples_)
    embedding_expected_ += contribution_key(s, kEmbeddingLayer, kSourceHead) +
                           contribution_key(s, kEmbeddingLayer, kSourceEmbedding);
  return duplicate;
}

std::uint64_t Dataflow::expected_fingerprint(std::int32_t begin, std::int32_t end) const {
  if (begin == kEmbeddingLayer) return embedding_expected_;
  return layer_prefix_[static_cast<std::size_t>(end)] -
         layer_prefix_[static_cast<std::size_t>(begin)];
}

std::uint64_t Dataflow::expected_count(std::int32_t begin, std::int32_t end) const {
  // Compact form: samples_ are replica 0's; every replica has as many.
  const auto n =
      static_cast<std::uint64_t>(samples_.size()) * static_cast<std::uint64_t>(replicas_.count);
  if (begin == kEmbeddingLayer) return 2 * n;
  return n * static_cast<std::uint64_t>(end - begin);
}

Check Dataflow::dead_buffer(Rank rank, OpIndex index, BufferId buffer, const char* verb) {
  const BufferState& s = state(rank, buffer);
  const std::string& bname =
      program_.ranks[static_cast<std::size_t>(rank)].buffers[static_cast<std::size_t>(buffer)].name;
  return fail_at(
      program_, rank, index,
      std::string(verb) + " dead buffer '" + bname + "' (" +
          (s.freed_by == kNone ? std::string("never allocated") : "freed by #" + str(s.freed_by)) +
          ")");
}

Check Dataflow::local(Rank rank, OpIndex index) {
  const RankProgram& rp = program_.ranks[static_cast<std::size_t>(rank)];
  const Op& op = rp.ops[static_cast<std::size_t>(index)];
  switch (op.kind) {
    case OpKind::alloc:
      for (BufferId b : writes(rp, op)) {
        Hot& h = hot(rank, b);
        if (h.live)
          return fail_at(
              program_, rank, index,
              "alloc of a live buffer '" + rp.buffers[static_cast<std::size_t>(b)].name + "'");
        h.live = true;
        state(rank, b).content = Content{};  // a store: the old content is not read
      }
      return std::nullopt;
    case OpKind::free:
      for (BufferId b : writes(rp, op)) {
        if (Check c = require_live(rank, index, b, "frees")) return c;
        hot(rank, b).live = false;
        state(rank, b).freed_by = index;
      }
      return std::nullopt;
    case OpKind::copy: {
      if (Check c = require_live(rank, index, reads(rp, op)[0], "reads")) return c;
      if (Check c = require_live(rank, index, writes(rp, op)[0], "writes")) return c;
      state(rank, writes(rp, op)[0]).content = state(rank, reads(rp, op)[0]).content;
      return std::nullopt;
    }
    case OpKind::compute:
      return compute(rank, index);
    default:
      return std::nullopt;
  }
}

Check Dataflow::transfer(Rank send_rank, OpIndex send_op, Rank recv_rank, OpIndex recv_op) {
  const RankProgram& sp = program_.ranks[static_cast<std::size_t>(send_rank)];
  const RankProgram& rp = program_.ranks[static_cast<std::size_t>(recv_rank)];
  const BufferId from = reads(sp, sp.ops[static_cast<std::size_t>(send_op)])[0];
  const BufferId to = writes(rp, rp.ops[static_cast<std::size_t>(recv_op)])[0];
  if (Check c = require_live(send_rank, send_op, from, "sends from")) return c;
  if (Check c = require_live(recv_rank, recv_op, to, "receives into")) return c;
  state(recv_rank, to).content = state(send_rank, from).content;
  return std::nullopt;
}

Check Dataflow::collective(std::span<const std::pair<Rank, OpIndex>> ops) {
  const auto m = static_cast<std::int32_t>(ops.size());
  const auto op_of = [&](std::size_t k) -> const Op& {
    return program_.ranks[static_cast<std::size_t>(ops[k].first)]
        .ops[static_cast<std::size_t>(ops[k].second)];
  };
  const auto rp_of = [&](std::size_t k) -> const RankProgram& {
    return program_.ranks[static_cast<std::size_t>(ops[k].first)];
  };
  const auto send_buf = [&](std::size_t k) { return reads(rp_of(k), op_of(k))[0]; };
  const auto recv_buf = [&](std::size_t k) { return writes(rp_of(k), op_of(k))[0]; };
  // The members' ops, buffer lists and buffer states lie in as many ranks' tables, far apart:
  // request them level by level so that the cache misses of all members overlap.
  for (std::size_t k = 0; k < ops.size(); ++k)
    __builtin_prefetch(&op_of(k));
  for (std::size_t k = 0; k < ops.size(); ++k)
    __builtin_prefetch(rp_of(k).buffer_pool.data() + op_of(k).buffers_offset);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    __builtin_prefetch(&state(ops[k].first, send_buf(k)));
    __builtin_prefetch(&state(ops[k].first, recv_buf(k)));
  }
  const Op& first = op_of(0);
  const CollectiveKind kind = first.collective;
  const Rank root = first.peer;
  // Liveness of the buffers each member touches.
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const bool is_root = ops[k].first == root;
    const bool reads_send = kind != CollectiveKind::broadcast || is_root;
    const bool writes_recv = kind != CollectiveKind::reduce || is_root;
    if (reads_send)
      if (Check c = require_live(ops[k].first, ops[k].second, send_buf(k), "sends from")) return c;
    if (writes_recv)
      if (Check c = require_live(ops[k].first, ops[k].second, recv_buf(k), "receives into"))
        return c;
  }
  const auto content = [&](std::size_t k) { return state(ops[k].first, send_buf(k)).content; };
  const auto fail_member = [&](std::size_t k, const std::string& what) {
    return fail_at(program_, ops[k].first, ops[k].second, what);
  };
  switch (kind) {
    case CollectiveKind::broadcast: {
      std::size_t r = 0;
      while (ops[r].first != root)
        ++r;
      const Content c = content(r);
      for (std::size_t k = 0; k < ops.size(); ++k)
        state(ops[k].first, recv_buf(k)).content = c;
      return std::nullopt;
    }
    case CollectiveKind::reduce:
    case CollectiveKind::all_reduce:
    case CollectiveKind::reduce_scatter: {
      Content sum;
      for (std::size_t k = 0; k < ops.size(); ++k) {
        const Content c = content(k);
        if (c.ref.kind == TensorKind::none) continue;
        if (c.ref.kind != TensorKind::gradient)
          return fail_member(k, std::string(name(kind)) + " sums " + describe_tensor(c.ref) +
                                    ", which is not a gradient");
        if (sum.ref.kind == TensorKind::none) {
          sum.ref = c.ref;
        } else if (!same_block(sum.ref, c.ref)) {
          return fail_member(k, std::string(name(kind)) + " sums " + describe_tensor(c.ref) +
                                    " with " + describe_tensor(sum.ref) + " of other members");
        }
        sum.fingerprint += c.fingerprint;
        sum.count += c.count;
        sum.replicated_fingerprint += c.replicated_fingerprint;
        sum.replicated_count += c.replicated_count;
      }
      if (replicas_.cross_replica(first.comm)) {
        // verify_replicas.cpp (d): over every replica, the members' A + N B sum to
        // N (sum A + k sum B); only all_reduce gets here (premise (b')).
        const auto k = static_cast<std::uint64_t>(replicas_.count);
        sum.replicated_fingerprint = sum.fingerprint + k * sum.replicated_fingerprint;
        sum.replicated_count = sum.count + k * sum.replicated_count;
        sum.fingerprint = 0;
        sum.count = 0;
      }
      for (std::size_t k = 0; k < ops.size(); ++k) {
        if (kind == CollectiveKind::reduce && ops[k].first != root) continue;
        Content out = sum;
        if (kind == CollectiveKind::reduce_scatter && out.ref.kind != TensorKind::none) {
          out.ref.piece = sum.ref.piece * m + static_cast<std::int32_t>(k);
          out.ref.pieces = sum.ref.pieces * m;
        }
        state(ops[k].first, recv_buf(k)).content = out;
      }
      return std::nullopt;
    }
    case CollectiveKind::all_gather: {
      const Content c0 = content(0);
      if (c0.ref.kind != TensorKind::weights && c0.ref.kind != TensorKind::gradient)
        return fail_member(0, "all_gather of " + describe_tensor(c0.ref) +
                                  ", expected a piece of weights or of a gradient");
      if (c0.ref.pieces % m != 0)
        return fail_member(0, "all_gather of " + describe_tensor(c0.ref) + " over " + str(m) +
                                  " members: the pieces do not split that way");
      Content whole = c0;
      whole.ref.pieces = c0.ref.pieces / m;
      whole.ref.piece = c0.ref.piece / m;
      for (std::size_t k = 0; k < ops.size(); ++k) {
        const Content c = content(k);
        TensorRef want = c0.ref;
        want.piece = whole.ref.piece * m + static_cast<std::int32_t>(k);
        if (c.ref != want)
          return fail_member(k, "all_gather member " + str(static_cast<std::int64_t>(k)) +
                                    " contributes " + describe_tensor(c.ref) + ", expected " +
                                    describe_tensor(want));
        if (c.fingerprint != c0.fingerprint || c.count != c0.count ||
            c.replicated_fingerprint != c0.replicated_fingerprint ||
            c.replicated_count != c0.replicated_count)
          return fail_member(k, "all_gather of gradient pieces with different contributions");
      }
      for (std::size_t k = 0; k < ops.size(); ++k)
        state(ops[k].first, recv_buf(k)).content = whole;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

Check Dataflow::finish() {
  for (Rank r = 0; r < program_.num_ranks(); ++r) {
    const auto& bufs = program_.ranks[static_cast<std::size_t>(r)].buffers;
    for (std::size_t b = 0; b < bufs.size(); ++b) {
      if (bufs[b].role != BufferRole::weights || !bufs[b].persistent ||
          bufs[b].initial.kind != TensorKind::weights)
        continue;
      if (buffers_[static_cast<std::size_t>(r)][b].updated_by == kNone)
        return Failure{"r" + str(r) + ": weights buffer '" + bufs[b].name + "' (" +
                           describe_tensor(bufs[b].initial) +
                           ") is never updated by an optimizer op",
                       r,
                       kNone,
                       {}};
    }
  }
  return std::nullopt;
}

}  // namespace tawpipe::ir::detail
