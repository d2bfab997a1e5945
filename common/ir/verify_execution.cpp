// Stages 3 and 4 of the verifier: the logical execution (infinite speed) with exactly the
// semantics of program.h, driving the symbolic dataflow in completion order.
//
// Worklist algorithm. Each (rank, stream) has a head: the next op (or group of consecutive ops
// with one group id) in its program order. A head is posted when all dependencies of its
// members have completed (counted once when it becomes head, then decremented as dependencies
// complete). Local ops complete when posted; a send/recv completes with its matched partner once
// both are posted; a collective instance completes when its last member arrives (O(members),
// once per instance). A completed op is queued; popping it releases its dependents and, when
// its head group is done, advances its stream. Every op and dependency edge is touched O(1)
// times. Ops left unfinished at the end form a deadlock; following "waits for" edges from the
// first one finds the cycle that the error reports.
#include <deque>
#include <unordered_map>

#include "common/ir/text.h"
#include "common/ir/verify_internal.h"

namespace tawpipe::ir::detail {
namespace {

enum State : std::uint8_t { kIdle, kAtHead, kPosted, kDone, kPropagated };

class Execution {
 public:
  Execution(const Program& p, const OpNumbering& n, const Matching& m, Dataflow* dataflow)
      : p_(p), n_(n), m_(m), dataflow_(dataflow) {
    const auto total = static_cast<std::size_t>(n.total());
    state_.assign(total, kIdle);
    arrivals_.assign(m.instance_first.empty() ? 0 : m.instance_first.size() - 1, 0);
    // Dependents (reverse dependency edges), CSR over global op indices.
    dependents_first_.assign(total + 1, 0);
    for (Rank r = 0; r < p.num_ranks(); ++r) {
      const RankProgram& rp = rank(r);
      for (const Op& op : rp.ops)
        for (OpIndex d : deps(rp, op))
          ++dependents_first_[static_cast<std::size_t>(n.global(r, d)) + 1];
    }
    for (std::size_t i = 1; i <= total; ++i)
      dependents_first_[i] += dependents_first_[i - 1];
    dependents_.resize(static_cast<std::size_t>(dependents_first_[total]));
    std::vector<std::int64_t> fill(dependents_first_.begin(), dependents_first_.end() - 1);
    for (Rank r = 0; r < p.num_ranks(); ++r) {
      const RankProgram& rp = rank(r);
      for (std::size_t i = 0; i < rp.ops.size(); ++i)
        for (OpIndex d : deps(rp, rp.ops[i]))
          dependents_[static_cast<std::size_t>(fill[static_cast<std::size_t>(n.global(r, d))]++)] =
              n.global(r, static_cast<OpIndex>(i));
    }
    // Per (rank, stream): the ops of the stream in program order.
    const std::size_t streams = p.streams.size();
    heads_.resize(static_cast<std::size_t>(p.num_ranks()) * streams);
    for (Rank r = 0; r < p.num_ranks(); ++r) {
      const RankProgram& rp = rank(r);
      for (std::size_t i = 0; i < rp.ops.size(); ++i)
        head(r, rp.ops[i].stream).ops.push_back(static_cast<OpIndex>(i));
    }
  }

  Check run(bool* deadlock) {
    for (Rank r = 0; r < p_.num_ranks(); ++r)
      for (std::size_t s = 0; s < p_.streams.size(); ++s)
        activate(r, static_cast<StreamId>(s));
    while (!queue_.empty()) {
      const std::int64_t g = queue_.front();
      queue_.pop_front();
      propagate(g);
    }
    for (std::size_t g = 0; g < state_.size(); ++g) {
      if (state_[g] != kPropagated) {
        *deadlock = true;
        return describe_deadlock(static_cast<std::int64_t>(g));
      }
    }
    return std::move(first_dataflow_failure_);
  }

 private:
  struct Head {
    std::vector<OpIndex> ops;   // the stream's ops in program order
    std::size_t cursor = 0;     // first op of the current head group
    std::size_t size = 0;       // ops in the current head group
    std::int64_t pending = 0;   // unfinished dependencies of the head group
    std::size_t remaining = 0;  // head group ops not yet propagated
  };

  const RankProgram& rank(Rank r) const { return p_.ranks[static_cast<std::size_t>(r)]; }
  Head& head(Rank r, StreamId s) {
    return heads_[static_cast<std::size_t>(r) * p_.streams.size() + s];
  }
  const Op& op_at(std::int64_t g) const {
    const auto [r, i] = n_.local(g);
    return rank(r).ops[static_cast<std::size_t>(i)];
  }
  State& state(std::int64_t g) { return state_[static_cast<std::size_t>(g)]; }

  void activate(Rank r, StreamId s) {
    Head& h = head(r, s);
    if (h.cursor >= h.ops.size()) return;
    const RankProgram& rp = rank(r);
    const std::int32_t group = rp.ops[static_cast<std::size_t>(h.ops[h.cursor])].group;
    std::size_t end = h.cursor + 1;
    while (group != kNone && end < h.ops.size() &&
           rp.ops[static_cast<std::size_t>(h.ops[end])].group == group)
      ++end;
    h.size = end - h.cursor;
    h.remaining = h.size;
    h.pending = 0;
    for (std::size_t k = h.cursor; k < end; ++k) {
      state(n_.global(r, h.ops[k])) = kAtHead;
      for (OpIndex d : deps(rp, rp.ops[static_cast<std::size_t>(h.ops[k])]))
        if (state(n_.global(r, d)) != kPropagated) ++h.pending;
    }
    if (h.pending == 0) post(r, s);
  }

  void post(Rank r, StreamId s) {
    Head& h = head(r, s);
    for (std::size_t k = h.cursor; k < h.cursor + h.size; ++k)
      state(n_.global(r, h.ops[k])) = kPosted;
    for (std::size_t k = h.cursor; k < h.cursor + h.size; ++k)
      try_complete(r, h.ops[k]);
  }

  void record(Check c) {
    if (c && !first_dataflow_failure_) first_dataflow_failure_ = std::move(c);
  }

  void done(std::int64_t g) {
    state(g) = kDone;
    queue_.push_back(g);
  }

  void try_complete(Rank r, OpIndex i) {
    const std::int64_t g = n_.global(r, i);
    if (state(g) != kPosted) return;  // already completed by its partner
    const Op& op = rank(r).ops[static_cast<std::size_t>(i)];
    switch (op.kind) {
      case OpKind::send:
      case OpKind::recv: {
        const std::int64_t partner = m_.link[static_cast<std::size_t>(g)];
        if (state(partner) != kPosted) return;
        if (dataflow_) {
          const auto [pr, pi] = n_.local(partner);
          record(op.kind == OpKind::send ? dataflow_->transfer(r, i, pr, pi)
                                         : dataflow_->transfer(pr, pi, r, i));
        }
        done(g);
        done(partner);
        return;
      }
      case OpKind::collective: {
        const auto inst = static_cast<std::size_t>(m_.link[static_cast<std::size_t>(g)]);
        const std::int64_t first = m_.instance_first[inst];
        const std::int64_t size = m_.instance_first[inst + 1] - first;
        if (++arrivals_[inst] < size) return;
        std::vector<std::int64_t> members(m_.instance_ops.begin() + first,
                                          m_.instance_ops.begin() + first + size);
        if (dataflow_) {
          std::vector<std::pair<Rank, OpIndex>> ops;
          ops.reserve(members.size());
          for (std::int64_t x : members)
            ops.push_back(n_.local(x));
          record(dataflow_->collective(ops));
        }
        for (std::int64_t x : members)
          done(x);
        return;
      }
      default:
        if (dataflow_) record(dataflow_->local(r, i));
        done(g);
    }
  }

  void propagate(std::int64_t g) {
    state(g) = kPropagated;
    const auto [r, i] = n_.local(g);
    for (auto k = dependents_first_[static_cast<std::size_t>(g)];
         k < dependents_first_[static_cast<std::size_t>(g) + 1]; ++k) {
      const std::int64_t d = dependents_[static_cast<std::size_t>(k)];
      if (state(d) != kAtHead) continue;
      Head& h = head(r, op_at(d).stream);
      if (--h.pending == 0) post(r, op_at(d).stream);
    }
    const StreamId s = rank(r).ops[static_cast<std::size_t>(i)].stream;
    Head& h = head(r, s);
    if (--h.remaining == 0) {
      h.cursor += h.size;
      activate(r, s);
    }
  }

  // --- deadlock reporting -------------------------------------------------------------------

  std::string describe(std::int64_t g) const {
    const auto [r, i] = n_.local(g);
    return describe_op(p_, r, i, false);
  }

  // The first unfinished op of the head group of g's stream.
  std::int64_t stream_blocker(std::int64_t g) {
    const auto [r, i] = n_.local(g);
    Head& h = head(r, op_at(g).stream);
    for (std::size_t k = h.cursor; k < h.cursor + h.size && k < h.ops.size(); ++k) {
      const std::int64_t x = n_.global(r, h.ops[k]);
      if (state(x) != kPropagated) return x;
    }
    return n_.global(r, h.ops[h.cursor]);
  }

  // One op that g waits for, and why.
  std::pair<std::int64_t, std::string> waits_for(std::int64_t g) {
    const auto [r, i] = n_.local(g);
    const Op& op = op_at(g);
    switch (state(g)) {
      case kIdle: {
        const std::int64_t b = stream_blocker(g);
        return {b, "is queued behind it on stream " + p_.streams[op.stream]};
      }
      case kAtHead: {
        Head& h = head(r, op.stream);
        const RankProgram& rp = rank(r);
        for (std::size_t k = h.cursor; k < h.cursor + h.size; ++k)
          for (OpIndex d : deps(rp, rp.ops[static_cast<std::size_t>(h.ops[k])]))
            if (state(n_.global(r, d)) != kPropagated) return {n_.global(r, d), "depends on it"};
        return {g, "?"};
      }
      case kPosted:
        if (op.kind == OpKind::collective) {
          const auto inst = static_cast<std::size_t>(m_.link[static_cast<std::size_t>(g)]);
          for (auto k = m_.instance_first[inst]; k < m_.instance_first[inst + 1]; ++k) {
            const std::int64_t x = m_.instance_ops[static_cast<std::size_t>(k)];
            if (state(x) < kPosted) return {x, "waits for the member to reach the collective"};
          }
          return {g, "?"};
        }
        return {m_.link[static_cast<std::size_t>(g)], "waits for its partner to be posted"};
      default:
        return {g, "?"};
    }
  }

  Failure describe_deadlock(std::int64_t first_stuck) {
    Failure f;
    for (Rank r = 0; r < p_.num_ranks(); ++r) {
      for (std::size_t s = 0; s < p_.streams.size(); ++s) {
        Head& h = head(r, static_cast<StreamId>(s));
        if (h.cursor >= h.ops.size()) continue;
        const std::int64_t b = stream_blocker(n_.global(r, h.ops[h.cursor]));
        const auto [w, why] = waits_for(b);
        f.details.push_back(describe(b) + " " + why + ": " + describe(w));
      }
    }
    // Follow waits-for edges until an op repeats: that loop is the deadlock.
    std::unordered_map<std::int64_t, std::size_t> seen;
    std::vector<std::int64_t> path;
    std::int64_t g = first_stuck;
    while (seen.find(g) == seen.end() && path.size() <= state_.size()) {
      seen.emplace(g, path.size());
      path.push_back(g);
      g = waits_for(g).first;
    }
    const std::size_t start = seen.count(g) ? seen[g] : 0;
    std::string chain;
    const std::size_t shown = std::min<std::size_t>(path.size() - start, 8);
    for (std::size_t k = start; k < start + shown; ++k) {
      chain += describe(path[k]) + " -> ";
    }
    if (path.size() - start > shown) chain += "... -> ";
    chain += describe(g);
    const auto [r, i] = n_.local(path[start]);
    f.rank = r;
    f.op = i;
    f.message = "deadlock: ops wait on each other: " + chain;
    return f;
  }

  const Program& p_;
  const OpNumbering& n_;
  const Matching& m_;
  Dataflow* dataflow_;
  std::vector<State> state_;
  std::vector<std::int64_t> arrivals_;
  std::vector<std::int64_t> dependents_first_;
  std::vector<std::int64_t> dependents_;
  std::vector<Head> heads_;
  std::deque<std::int64_t> queue_;
  Check first_dataflow_failure_;
};

}  // namespace

Check execute(const Program& program, const OpNumbering& numbering, const Matching& matching,
              Dataflow* dataflow, bool* deadlock) {
  *deadlock = false;
  Execution e(program, numbering, matching, dataflow);
  return e.run(deadlock);
}

}  // namespace tawpipe::ir::detail
