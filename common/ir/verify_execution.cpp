// Stages 3 and 4 of the verifier: the logical execution (infinite speed) with exactly the
// semantics of program.h, driving the symbolic dataflow in completion order.
//
// Worklist algorithm. Each (rank, stream) has a head: the next op (or group of consecutive ops
// with one group id) in its program order. A head waits for one unfinished dependency at a time
// (the next one in its members' dependency lists); when that op is propagated the head resumes
// its scan, and once every dependency has completed it is posted. Local ops complete when
// posted; a send/recv completes with its matched partner once both are posted; a collective
// instance completes when its last member arrives (O(members), once per instance). A completed op
// is queued; popping it wakes the heads of its rank that wait for it and, when its head group is
// done, advances its stream to the next op of the stream (precomputed per op). Every op and
// dependency edge is touched O(1) times: a completed op wakes exactly the heads waiting for it
// (a chain per op); per op the execution keeps a state byte, that successor index and the chain.
// Ops left unfinished at the end form a deadlock; following "waits for" edges from the first one
// finds the cycle that the error reports.
#include <algorithm>
#include <span>
#include <unordered_map>

#include "common/ir/text.h"
#include "common/ir/verify_internal.h"
#include "common/memory.h"
#include "common/parallel.h"

namespace tawpipe::ir::detail {
namespace {

enum State : std::uint8_t { kIdle, kAtHead, kPosted, kDone, kPropagated };

class Execution {
 public:
  Execution(const Program& p, const OpNumbering& n, const Matching& m, Dataflow* dataflow,
            int threads)
      : p_(p), n_(n), m_(m), dataflow_(dataflow) {
    reserve_prefaulted(state_, static_cast<std::size_t>(n.total()));
    state_.assign(static_cast<std::size_t>(n.total()), kIdle);
    arrivals_.assign(m.instance_first.empty() ? 0 : m.instance_first.size() - 1, 0);
    heads_.resize(static_cast<std::size_t>(p.num_ranks()) * p.streams.size());
    reserve_prefaulted(waiters_, static_cast<std::size_t>(n.total()));
    waiters_.assign(static_cast<std::size_t>(n.total()), kNone);
    queue_.reserve(static_cast<std::size_t>(n.total()));
    // Per op, the next op of the same stream (one backward pass per rank; streams are few).
    reserve_prefaulted(next_same_, static_cast<std::size_t>(n.total()));
    next_same_.resize(static_cast<std::size_t>(n.total()));
    parallel_for(0, p.num_ranks(), threads, [&](std::int64_t ri, int) {
      const auto r = static_cast<Rank>(ri);
      std::vector<OpIndex> next(p_.streams.size());
      const auto& ops = rank(r).ops;
      std::fill(next.begin(), next.end(), static_cast<OpIndex>(ops.size()));
      for (auto i = static_cast<OpIndex>(ops.size()) - 1; i >= 0; --i) {
        OpIndex& slot = next[ops[static_cast<std::size_t>(i)].stream];
        next_same_[static_cast<std::size_t>(n.global(r, i))] = slot;
        slot = i;
      }
      for (std::size_t s = 0; s < p_.streams.size(); ++s) {
        Head& h = head(r, static_cast<StreamId>(s));
        h.cursor = next[s];
        h.end = h.cursor;
      }
    });
  }

  Check run(bool* deadlock) {
    for (Rank r = 0; r < p_.num_ranks(); ++r)
      for (std::size_t s = 0; s < p_.streams.size(); ++s)
        activate(r, static_cast<StreamId>(s));
    // FIFO: every op is queued once, so a vector read front to back is the queue.
    for (std::size_t next = 0; next < queue_.size(); ++next) {
      const auto [r, i] = queue_[next];
      propagate(r, i);
    }
    for (std::size_t g = 0; g < state_.size(); ++g) {
      if (state_[g] != kPropagated) {
        *deadlock = true;
        return describe_deadlock(static_cast<GlobalOp>(g));
      }
    }
    return std::move(first_dataflow_failure_);
  }

 private:
  struct Head {
    OpIndex cursor = 0;          // first op of the current head group (ops.size(): stream done)
    OpIndex end = 0;             // one past its last op (groups are consecutive in program order)
    OpIndex scan_op = 0;         // dependency scan position: op of the group ...
    std::uint32_t scan_dep = 0;  // ... and index into its dependency list
    OpIndex waiting_on = kNone;  // the unfinished dependency the head waits for
    std::int32_t remaining = 0;  // head group ops not yet propagated
    std::int32_t next_waiter = kNone;  // next head (index into heads_) waiting for that op
  };

  const RankProgram& rank(Rank r) const { return p_.ranks[static_cast<std::size_t>(r)]; }
  Head& head(Rank r, StreamId s) {
    return heads_[static_cast<std::size_t>(r) * p_.streams.size() + s];
  }
  const Op& op_at(GlobalOp g) const {
    const auto [r, i] = n_.local(g);
    return rank(r).ops[static_cast<std::size_t>(i)];
  }
  State& state(GlobalOp g) { return state_[static_cast<std::size_t>(g)]; }
  State& state(Rank r, OpIndex i) { return state(n_.global(r, i)); }

  // Sets the state of the head group's ops. Most groups are one op: a plain store (the
  // compiler turns the loop into a call to memset, which costs more than the whole step).
  void mark(Rank r, const Head& h, State to) {
    if (h.end - h.cursor == 1) {
      state(r, h.cursor) = to;
      return;
    }
    for (OpIndex k = h.cursor; k < h.end; ++k)
      state(r, k) = to;
  }

  // Makes the group starting at the stream's cursor its head and starts its dependency scan.
  void activate(Rank r, StreamId s) {
    Head& h = head(r, s);
    const auto& ops = rank(r).ops;
    if (static_cast<std::size_t>(h.cursor) >= ops.size()) return;
    const std::int32_t group = ops[static_cast<std::size_t>(h.cursor)].group;
    auto end = static_cast<std::size_t>(h.cursor) + 1;
    while (group != kNone && end < ops.size() && ops[end].group == group)
      ++end;
    h.end = static_cast<OpIndex>(end);
    h.remaining = h.end - h.cursor;
    mark(r, h, kAtHead);
    h.scan_op = h.cursor;
    h.scan_dep = 0;
    resume(r, s);
  }

  // Continues the head's dependency scan; waits at the first unfinished dependency, or posts.
  void resume(Rank r, StreamId s) {
    Head& h = head(r, s);
    const RankProgram& rp = rank(r);
    for (; h.scan_op < h.end; ++h.scan_op, h.scan_dep = 0) {
      const auto ds = deps(rp, rp.ops[static_cast<std::size_t>(h.scan_op)]);
      for (; h.scan_dep < ds.size(); ++h.scan_dep) {
        const OpIndex d = ds[h.scan_dep];
        if (state(r, d) != kPropagated) {
          h.waiting_on = d;
          std::int32_t& first = waiters_[static_cast<std::size_t>(n_.global(r, d))];
          h.next_waiter = first;
          first = static_cast<std::int32_t>(&h - heads_.data());
          return;
        }
      }
    }
    post(r, s);
  }

  void post(Rank r, StreamId s) {
    Head& h = head(r, s);
    mark(r, h, kPosted);
    for (OpIndex k = h.cursor; k < h.end; ++k)
      try_complete(r, k);
  }

  void record(Check c) {
    if (c && !first_dataflow_failure_) first_dataflow_failure_ = std::move(c);
  }

  void done(Rank r, OpIndex i) {
    state(r, i) = kDone;
    queue_.emplace_back(r, i);
  }

  void try_complete(Rank r, OpIndex i) {
    const GlobalOp g = n_.global(r, i);
    if (state(g) != kPosted) return;  // already completed by its partner
    const Op& op = rank(r).ops[static_cast<std::size_t>(i)];
    switch (op.kind) {
      case OpKind::send:
      case OpKind::recv: {
        const GlobalOp partner = m_.link[static_cast<std::size_t>(g)];
        if (state(partner) != kPosted) return;
        const auto [pr, pi] = n_.local(partner);
        if (dataflow_) {
          record(op.kind == OpKind::send ? dataflow_->transfer(r, i, pr, pi)
                                         : dataflow_->transfer(pr, pi, r, i));
        }
        done(r, i);
        done(pr, pi);
        return;
      }
      case OpKind::collective: {
        const auto inst = static_cast<std::size_t>(m_.link[static_cast<std::size_t>(g)]);
        const auto first = static_cast<std::size_t>(m_.instance_first[inst]);
        const auto size = static_cast<std::size_t>(m_.instance_first[inst + 1]) - first;
        if (static_cast<std::size_t>(++arrivals_[inst]) < size) return;
        const auto members = std::span(m_.instance_ops).subspan(first, size);
        if (dataflow_) record(dataflow_->collective(members));
        for (const auto& [mr, mi] : members)
          done(mr, mi);
        return;
      }
      default:
        if (dataflow_) record(dataflow_->local(r, i));
        done(r, i);
    }
  }

  void propagate(Rank r, OpIndex i) {
    const GlobalOp g = n_.global(r, i);
    state(g) = kPropagated;
    // Wake the heads of this rank that wait for it (dependencies never cross ranks), in stream
    // order: the chain of waiters_ is sorted first when it has several (rare). Resuming one
    // head never changes which others wait for this op.
    if (std::int32_t w = waiters_[static_cast<std::size_t>(g)]; w != kNone) {
      waiters_[static_cast<std::size_t>(g)] = kNone;
      woken_.clear();
      for (; w != kNone; w = heads_[static_cast<std::size_t>(w)].next_waiter)
        woken_.push_back(w);
      if (woken_.size() > 1) std::sort(woken_.begin(), woken_.end());
      for (const std::int32_t k : woken_) {
        Head& h = heads_[static_cast<std::size_t>(k)];
        h.waiting_on = kNone;
        h.next_waiter = kNone;
        resume(r, static_cast<StreamId>(static_cast<std::size_t>(k) % p_.streams.size()));
      }
    }
    const StreamId s = rank(r).ops[static_cast<std::size_t>(i)].stream;
    Head& h = head(r, s);
    if (--h.remaining == 0) {
      h.cursor = next_same_[static_cast<std::size_t>(n_.global(r, h.end - 1))];
      activate(r, s);
    }
  }

  // --- deadlock reporting -------------------------------------------------------------------

  std::string describe(GlobalOp g) const {
    const auto [r, i] = n_.local(g);
    return describe_op(p_, r, i, false);
  }

  // The first unfinished op of the head group of g's stream.
  GlobalOp stream_blocker(GlobalOp g) {
    const auto [r, i] = n_.local(g);
    Head& h = head(r, op_at(g).stream);
    for (OpIndex k = h.cursor; k < h.end; ++k) {
      if (state(r, k) != kPropagated) return n_.global(r, k);
    }
    return n_.global(r, h.cursor);
  }

  // One op that g waits for, and why.
  std::pair<GlobalOp, std::string> waits_for(GlobalOp g) {
    const auto [r, i] = n_.local(g);
    const Op& op = op_at(g);
    switch (state(g)) {
      case kIdle: {
        const GlobalOp b = stream_blocker(g);
        return {b, "is queued behind it on stream " + p_.streams[op.stream]};
      }
      case kAtHead: {
        Head& h = head(r, op.stream);
        const RankProgram& rp = rank(r);
        for (OpIndex k = h.cursor; k < h.end; ++k)
          for (OpIndex d : deps(rp, rp.ops[static_cast<std::size_t>(k)]))
            if (state(r, d) != kPropagated) return {n_.global(r, d), "depends on it"};
        return {g, "?"};
      }
      case kPosted:
        if (op.kind == OpKind::collective) {
          const auto inst = static_cast<std::size_t>(m_.link[static_cast<std::size_t>(g)]);
          for (auto k = m_.instance_first[inst]; k < m_.instance_first[inst + 1]; ++k) {
            const auto [xr, xi] = m_.instance_ops[static_cast<std::size_t>(k)];
            const GlobalOp x = n_.global(xr, xi);
            if (state(x) < kPosted) return {x, "waits for the member to reach the collective"};
          }
          return {g, "?"};
        }
        return {m_.link[static_cast<std::size_t>(g)], "waits for its partner to be posted"};
      default:
        return {g, "?"};
    }
  }

  Failure describe_deadlock(GlobalOp first_stuck) {
    Failure f;
    for (Rank r = 0; r < p_.num_ranks(); ++r) {
      for (std::size_t s = 0; s < p_.streams.size(); ++s) {
        Head& h = head(r, static_cast<StreamId>(s));
        if (static_cast<std::size_t>(h.cursor) >= rank(r).ops.size()) continue;
        const GlobalOp b = stream_blocker(n_.global(r, h.cursor));
        const auto [w, why] = waits_for(b);
        f.details.push_back(describe(b) + " " + why + ": " + describe(w));
      }
    }
    // Follow waits-for edges until an op repeats: that loop is the deadlock.
    std::unordered_map<GlobalOp, std::size_t> seen;
    std::vector<GlobalOp> path;
    GlobalOp g = first_stuck;
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
  std::vector<State> state_;            ///< per global op
  std::vector<std::int32_t> arrivals_;  ///< per collective instance
  std::vector<Head> heads_;             ///< per (rank, stream)
  /// Per global op: the first head (index into heads_) waiting for it, chained through
  /// Head::next_waiter; kNone when none waits.
  std::vector<std::int32_t> waiters_;
  std::vector<std::int32_t> woken_;  ///< scratch of propagate()
  /// Completed ops in completion order (run() propagates them front to back).
  std::vector<std::pair<Rank, OpIndex>> queue_;
  std::vector<OpIndex> next_same_;  ///< per global op: next op of its rank and stream, or size
  Check first_dataflow_failure_;
};

}  // namespace

Check execute(const Program& program, const OpNumbering& numbering, const Matching& matching,
              Dataflow* dataflow, bool* deadlock, int threads) {
  *deadlock = false;
  Execution e(program, numbering, matching, dataflow, threads);
  return e.run(deadlock);
}

}  // namespace tawpipe::ir::detail
