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
      : p_(p), n_(n), m_(m), dataflow_(dataflow), streams_(p.streams.size()) {
    reserve_prefaulted(state_, static_cast<std::size_t>(n.total()));
    state_.assign(static_cast<std::size_t>(n.total()), kIdle);
    arrivals_.assign(m.instance_first.empty() ? 0 : m.instance_first.size() - 1, 0);
    heads_.resize(static_cast<std::size_t>(p.num_ranks()) * streams_);
    reserve_prefaulted(waiters_, static_cast<std::size_t>(n.total()));
    waiters_.assign(static_cast<std::size_t>(n.total()), kNone);
    queue_.reserve(static_cast<std::size_t>(n.total()));
    // Per op, the next op of the same stream (one backward pass per rank; streams are few).
    reserve_prefaulted(next_same_, static_cast<std::size_t>(n.total()));
    next_same_.resize(static_cast<std::size_t>(n.total()));
    views_.resize(static_cast<std::size_t>(p.num_ranks()));
    parallel_for(0, p.num_ranks(), threads, [&](std::int64_t ri, int) {
      const auto r = static_cast<Rank>(ri);
      const RankProgram& rp = p_.ranks[static_cast<std::size_t>(r)];
      const auto first = static_cast<std::size_t>(n.global(r, 0));
      View& v = views_[static_cast<std::size_t>(r)];
      v.ops = rp.ops.data();
      v.dep_pool = rp.dep_pool.data();
      v.state = state_.data() + first;
      v.waiters = waiters_.data() + first;
      v.next_same = next_same_.data() + first;
      v.heads = heads_.data() + static_cast<std::size_t>(r) * streams_;
      v.size = static_cast<OpIndex>(rp.ops.size());
      v.first = static_cast<GlobalOp>(first);
      std::vector<OpIndex> next(streams_);
      std::fill(next.begin(), next.end(), v.size);
      for (OpIndex i = v.size - 1; i >= 0; --i) {
        OpIndex& slot = next[v.ops[i].stream];
        v.next_same[i] = slot;
        slot = i;
      }
      for (std::size_t s = 0; s < streams_; ++s) {
        Head& h = v.heads[s];
        h.cursor = next[s];
        h.end = h.cursor;
      }
    });
  }

  Check run(bool* deadlock) {
    for (Rank r = 0; r < p_.num_ranks(); ++r)
      for (std::size_t s = 0; s < streams_; ++s)
        activate(view(r), r, static_cast<StreamId>(s));
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
  // One rank's slices of the per-op tables and of its program, indexed by the rank's own op
  // index: the hot paths reach an op's state, waiters and program entry with one addition
  // instead of going through the global numbering and the rank's vectors each time.
  struct View {
    const Op* ops = nullptr;
    const OpIndex* dep_pool = nullptr;
    State* state = nullptr;
    std::int32_t* waiters = nullptr;
    OpIndex* next_same = nullptr;
    Head* heads = nullptr;  // per stream
    OpIndex size = 0;       // ops of the rank
    GlobalOp first = 0;     // global index of its op 0
  };

  View& view(Rank r) { return views_[static_cast<std::size_t>(r)]; }
  const RankProgram& rank(Rank r) const { return p_.ranks[static_cast<std::size_t>(r)]; }
  Head& head(Rank r, StreamId s) { return heads_[static_cast<std::size_t>(r) * streams_ + s]; }
  const Op& op_at(GlobalOp g) const {
    const auto [r, i] = n_.local(g);
    return rank(r).ops[static_cast<std::size_t>(i)];
  }
  State& state(GlobalOp g) { return state_[static_cast<std::size_t>(g)]; }
  State& state(Rank r, OpIndex i) { return state(n_.global(r, i)); }

  // Sets the state of the head group's ops. Most groups are one op: a plain store (the
  // compiler turns the loop into a call to memset, which costs more than the whole step).
  static void mark(const View& v, const Head& h, State to) {
    if (h.end - h.cursor == 1) {
      v.state[h.cursor] = to;
      return;
    }
    for (OpIndex k = h.cursor; k < h.end; ++k)
      v.state[k] = to;
  }

  // Makes the group starting at the stream's cursor its head and starts its dependency scan.
  void activate(const View& v, Rank r, StreamId s) {
    Head& h = v.heads[s];
    if (h.cursor >= v.size) return;
    const std::int32_t group = v.ops[h.cursor].group;
    OpIndex end = h.cursor + 1;
    while (group != kNone && end < v.size && v.ops[end].group == group)
      ++end;
    h.end = end;
    h.remaining = h.end - h.cursor;
    mark(v, h, kAtHead);
    h.scan_op = h.cursor;
    h.scan_dep = 0;
    resume(v, r, h);
  }

  // Continues the head's dependency scan; waits at the first unfinished dependency, or posts.
  void resume(const View& v, Rank r, Head& h) {
    for (; h.scan_op < h.end; ++h.scan_op, h.scan_dep = 0) {
      const Op& op = v.ops[h.scan_op];
      const OpIndex* ds = v.dep_pool + op.deps_offset;
      for (; h.scan_dep < op.deps_count; ++h.scan_dep) {
        const OpIndex d = ds[h.scan_dep];
        if (v.state[d] != kPropagated) {
          h.waiting_on = d;
          std::int32_t& first = v.waiters[d];
          h.next_waiter = first;
          first = static_cast<std::int32_t>(&h - heads_.data());
          return;
        }
      }
    }
    post(v, r, h);
  }

  void post(const View& v, Rank r, const Head& h) {
    mark(v, h, kPosted);
    for (OpIndex k = h.cursor; k < h.end; ++k)
      try_complete(v, r, k);
  }

  void record(Check c) {
    if (c && !first_dataflow_failure_) first_dataflow_failure_ = std::move(c);
  }

  void done(State* state, Rank r, OpIndex i) {
    *state = kDone;
    queue_.emplace_back(r, i);
  }

  void try_complete(const View& v, Rank r, OpIndex i) {
    if (v.state[i] != kPosted) return;  // already completed by its partner
    const Op& op = v.ops[i];
    switch (op.kind) {
      case OpKind::send:
      case OpKind::recv: {
        // The partner is on the peer rank: matching pairs the ops of the channel (comm, rank,
        // peer) with those of (comm, peer, rank).
        const GlobalOp partner = m_.link[static_cast<std::size_t>(v.first + i)];
        State& partner_state = state(partner);
        if (partner_state != kPosted) return;
        const Rank pr = op.peer;
        const OpIndex pi = partner - view(pr).first;
        if (dataflow_) {
          record(op.kind == OpKind::send ? dataflow_->transfer(r, i, pr, pi)
                                         : dataflow_->transfer(pr, pi, r, i));
        }
        done(&v.state[i], r, i);
        done(&partner_state, pr, pi);
        return;
      }
      case OpKind::collective: {
        const auto inst = static_cast<std::size_t>(m_.link[static_cast<std::size_t>(v.first + i)]);
        const auto first = static_cast<std::size_t>(m_.instance_first[inst]);
        const auto size = static_cast<std::size_t>(m_.instance_first[inst + 1]) - first;
        if (static_cast<std::size_t>(++arrivals_[inst]) < size) return;
        const auto members = std::span(m_.instance_ops).subspan(first, size);
        if (dataflow_) record(dataflow_->collective(members));
        for (const auto& [mr, mi] : members)
          done(&view(mr).state[mi], mr, mi);
        return;
      }
      default:
        if (dataflow_) record(dataflow_->local(r, i));
        done(&v.state[i], r, i);
    }
  }

  void propagate(Rank r, OpIndex i) {
    const View& v = view(r);
    v.state[i] = kPropagated;
    // Wake the heads of this rank that wait for it (dependencies never cross ranks), in stream
    // order: the chain of waiters_ is sorted first when it has several (rare). Resuming one
    // head never changes which others wait for this op.
    if (std::int32_t w = v.waiters[i]; w != kNone) {
      v.waiters[i] = kNone;
      woken_.clear();
      for (; w != kNone; w = heads_[static_cast<std::size_t>(w)].next_waiter)
        woken_.push_back(w);
      if (woken_.size() > 1) std::sort(woken_.begin(), woken_.end());
      for (const std::int32_t k : woken_) {
        Head& h = heads_[static_cast<std::size_t>(k)];
        h.waiting_on = kNone;
        h.next_waiter = kNone;
        resume(v, r, h);
      }
    }
    const StreamId s = v.ops[i].stream;
    Head& h = v.heads[s];
    if (--h.remaining == 0) {
      h.cursor = v.next_same[h.end - 1];
      activate(v, r, s);
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
  std::size_t streams_;                 ///< streams of the program
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
  std::vector<View> views_;         ///< per rank
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
