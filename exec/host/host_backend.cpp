#include "exec/host/host_backend.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/aligned.h"
#include "common/ir/zeroing.h"
#include "exec/host/compute_ops.h"
#include "exec/host/doorbell.h"
#include "exec/host/mpi_ops.h"
#include "exec/host/mpi_util.h"
#include "exec/host/wait_log.h"
#include "exec/math/init.h"

namespace tawpipe::exec::host {
namespace {

Nanos clock_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The calling thread's CPU time and involuntary context switches so far: an op's core time is
/// their change over it (Completion::cpu, ::preemptions). Two system calls, ~1 us together, per
/// compute op or copy (milliseconds each in the runs this is for).
struct ThreadUsage {
  Nanos cpu = -1;
  std::int64_t preemptions = -1;
  static ThreadUsage now() {
    ThreadUsage u;
    timespec t{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0)
      u.cpu = static_cast<Nanos>(t.tv_sec) * 1000000000 + t.tv_nsec;
    rusage r{};
    if (getrusage(RUSAGE_THREAD, &r) == 0) u.preemptions = r.ru_nivcsw;
    return u;
  }
  /// `done` for an op from this usage (at its start) to now.
  Completion finish(ir::OpIndex op, Nanos start) const {
    const ThreadUsage end = now();
    Completion c{op, start, clock_now()};
    if (cpu >= 0 && end.cpu >= cpu) c.cpu = end.cpu - cpu;
    if (c.cpu >= 0 && preemptions >= 0 && end.preemptions >= preemptions)
      c.preemptions = end.preemptions - preemptions;
    return c;
  }
};

/// A buffer's storage: uninitialised on allocation (zeroed only where the IR needs it), at a
/// page (common/aligned.h: its offset must not depend on what was allocated before).
struct Slab {
  AlignedFloats p;
  std::size_t n = 0;  ///< scalars
};

/// One IR stream's thread and its queue of batches (one op, or one IR group).
struct StreamThread {
  std::thread thread;
  std::deque<std::vector<ir::OpIndex>> queue;  ///< guarded by Impl::mu
  std::condition_variable cv;
};

}  // namespace

struct HostBackend::Impl {
  HostOptions options;
  const ir::Program* program = nullptr;
  ir::Rank rank = 0;
  ComputeContext ctx;
  std::vector<Slab> data;
  std::vector<std::uint8_t> alive;
  /// Freed storage by scalar count, reused by the next alloc of that size: like a framework's
  /// caching allocator, so an IR alloc/free costs no mmap, munmap or page faults (freshly
  /// mapped pages fault on first touch, which cost as much as the GEMMs on this backend).
  std::multimap<std::size_t, AlignedFloats> pool;
  /// Per alloc op: its buffers whose first use can read the contents, so they must hold the
  /// IR's "a fresh buffer is empty (zero)"; the others are overwritten whole first (zeroing
  /// them would be a hidden memset per alloc). See plan_zeroing().
  std::vector<std::vector<ir::BufferId>> zero_on_alloc;
  /// Per persistent buffer that does not keep its contents across iterations: whether
  /// begin_iteration() must zero it (same rule, first use in the program).
  std::vector<std::uint8_t> zero_each_iteration;
  std::uint64_t live_bytes = 0, peak_bytes = 0;
  std::vector<MpiComm> comms;                    ///< per IR communicator: point-to-point
  std::vector<std::vector<MpiComm>> coll_comms;  ///< [comm][stream]: collectives
  std::vector<std::vector<int>> comm_rank;       ///< [comm][global rank] -> rank in comm, or -1
  std::vector<int> tags;                         ///< per op: p2p tag
  /// Per op (p2p): the IR stream of the peer's matching op, whose thread waits on that doorbell
  /// slot (exec/host/doorbell.h).
  std::vector<int> peer_slots;
  int tag_ub = 32767;

  std::vector<Completion> local_done;  ///< alloc/free completed inline (interpreter thread)

  // Stream threads. `mu` guards the queues, `finished`, `error` and `loss_sum`.
  std::vector<std::unique_ptr<StreamThread>> streams;  ///< by stream id; null when unused
  std::mutex mu;
  std::condition_variable done_cv;
  std::vector<Completion> finished;
  std::optional<Error> error;
  double loss_sum = 0.0;
  std::atomic<bool> stop{false};

  Expected<std::span<float>> access(ir::BufferId b) {
    const auto u = static_cast<std::size_t>(b);
    if (u >= data.size()) return make_error("buffer " + std::to_string(b) + " out of range");
    if (!alive[u]) {
      return make_error("buffer '" +
                        program->ranks[static_cast<std::size_t>(rank)].buffers[u].name +
                        "' is dead (not allocated)");
    }
    return std::span<float>(data[u].p.get(), data[u].n);
  }

  /// Makes `b` live with uninitialised storage (from the pool when one of its size is free).
  void make_alive(ir::BufferId b) {
    const auto u = static_cast<std::size_t>(b);
    const std::uint64_t bytes =
        program->ranks[static_cast<std::size_t>(rank)].buffers[u].size.count();
    const std::size_t n = (bytes + 3) / 4;
    if (!alive[u]) {
      live_bytes += bytes;
      peak_bytes = std::max(peak_bytes, live_bytes);
    }
    alive[u] = 1;
    if (data[u].p && data[u].n == n) return;
    release(u);
    auto it = pool.find(n);
    if (it != pool.end()) {
      data[u].p = std::move(it->second);
      pool.erase(it);
    } else {
      data[u].p = make_aligned_floats(n);
    }
    assert(reinterpret_cast<std::uintptr_t>(data[u].p.get()) % kBufferAlignment == 0);
    data[u].n = n;
#ifndef NDEBUG
    // Debug builds poison what the IR leaves undefined, so a missed zeroing fails --verify.
    std::fill_n(data[u].p.get(), n, std::numeric_limits<float>::quiet_NaN());
#endif
  }

  void zero(ir::BufferId b) {
    Slab& s = data[static_cast<std::size_t>(b)];
    std::fill_n(s.p.get(), s.n, 0.0f);
  }

  void release(std::size_t u) {
    if (data[u].p) pool.emplace(data[u].n, std::move(data[u].p));
    data[u].n = 0;
  }

  void kill(ir::BufferId b) {
    const auto u = static_cast<std::size_t>(b);
    if (alive[u])
      live_bytes -= program->ranks[static_cast<std::size_t>(rank)].buffers[u].size.count();
    alive[u] = 0;
    release(u);
  }

  void plan_zeroing(const ir::RankProgram& rp);

  void stream_loop(StreamThread& st, const std::string& name, int stream) {
    // Named after its IR stream (15 characters at most), for perf sched / top -H.
    prctl(PR_SET_NAME, name.substr(0, 15).c_str(), 0UL, 0UL, 0UL);
    // Sleeps of the MPI waits (mpi_ops.h) are microseconds: without this, Linux rounds every
    // sleep of a normal thread up by its 50 us default timer slack.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    // Rung only for this stream's ops (exec/host/doorbell.h).
    set_doorbell_slot(stream);
    std::vector<Completion> out;
    for (;;) {
      std::vector<ir::OpIndex> batch;
      {
        std::unique_lock lock(mu);
        st.cv.wait(lock, [&] { return stop.load() || !st.queue.empty(); });
        if (stop.load()) return;
        batch = std::move(st.queue.front());
        st.queue.pop_front();
      }
      out.clear();
      double loss = 0.0;
      const wait_log::Stamp begin = wait_log::stamp();
      Status status = run_batch(batch, out, loss);
      wait_log::batch(begin, batch.front(), batch.size());
      {
        std::lock_guard lock(mu);
        if (!status.ok() && !error) error = status.error();
        loss_sum += loss;
        finished.insert(finished.end(), out.begin(), out.end());
      }
      done_cv.notify_all();
    }
  }

  Status run_batch(std::span<const ir::OpIndex> batch, std::vector<Completion>& out, double& loss);
  /// The scheduler slice of the calling stream thread, set per op (set_slice): the compute slice
  /// while it computes or copies, the communication slice while it posts and waits for MPI.
  enum class Slice : std::uint8_t { none, compute, communication };
  static void set_slice(Slice want) {
    thread_local Slice current = Slice::none;
    if (current == want) return;
    current = want;
    // A stream thread computes in long slices, so that two ranks' compute threads on one core
    // switch rarely (kComputeSliceNs), and waits for MPI in the shortest slice, so that it wakes
    // ahead of the compute thread sharing its core (mpi_ops.h). Per op, not per stream: a
    // stream that communicates and also runs a copy or an accumulate (WeiPipe's ring, TawPipe's
    // reduce stream) held the compute slice for its waits too, and its woken waits queued
    // behind 20 ms compute slices (best effort: older kernels refuse custom slices).
    if (want == Slice::compute) {
      request_compute_slice();
    } else {
      request_comm_slice(true);
    }
  }
  /// Posts a communication op (non-blocking; run_batch waits, mpi_ops.h); with `posted` null, a
  /// collective runs to completion with MPI's blocking call instead.
  Status post_comm(ir::OpIndex index, PostedOp* posted);
  Status run_comm(ir::OpIndex index) {
    return post_comm(index, nullptr);
  }
  Status prepare_comms(const ir::Program& program);
};

namespace {

std::string at_op(ir::Rank rank, ir::OpIndex index, const Error& e) {
  return "rank " + std::to_string(rank) + " op " + std::to_string(index) + ": " + e.message;
}

}  // namespace

void HostBackend::Impl::plan_zeroing(const ir::RankProgram& rp) {
  // The IR's rule (common/ir/zeroing.h), with what this backend's kernels overwrite.
  ir::ZeroingPlan plan = ir::plan_zeroing(*program, rank, [&](const ir::Op& op, ir::BufferId b) {
    return std::uint64_t{4} * compute_overwrites(rp, op, b, ctx.dims);
  });
  zero_on_alloc = std::move(plan.on_alloc);
  zero_each_iteration = std::move(plan.each_iteration);
}

Status HostBackend::Impl::post_comm(ir::OpIndex index, PostedOp* posted) {
  const ir::RankProgram& rp = program->ranks[static_cast<std::size_t>(rank)];
  const ir::Op& op = rp.ops[static_cast<std::size_t>(index)];
  const auto c = static_cast<std::size_t>(op.comm);
  if (op.kind == ir::OpKind::send || op.kind == ir::OpKind::recv) {
    const bool is_send = op.kind == ir::OpKind::send;
    auto buf = access(is_send ? ir::reads(rp, op)[0] : ir::writes(rp, op)[0]);
    if (!buf.ok()) return buf.error();
    return post_p2p(is_send, buf->data(), op.bytes, comm_rank[c][static_cast<std::size_t>(op.peer)],
                    tags[static_cast<std::size_t>(index)], comms[c].get(), *posted,
                    peer_slots[static_cast<std::size_t>(index)]);
  }
  const auto reads = ir::reads(rp, op);
  const auto writes = ir::writes(rp, op);
  if (reads.empty() || writes.empty()) return make_error("collective without buffers");
  auto send = access(reads[0]);
  if (!send.ok()) return send.error();
  auto recv = access(writes[0]);
  if (!recv.ok()) return recv.error();
  CollectiveArgs args;
  args.kind = op.collective;
  args.send = send->data();
  args.recv = recv->data();
  args.bytes = op.bytes;
  args.me = comm_rank[c][static_cast<std::size_t>(rank)];
  args.size = static_cast<int>(program->communicators[c].members.size());
  if (op.peer != ir::kNone) args.root = comm_rank[c][static_cast<std::size_t>(op.peer)];
  args.comm = coll_comms[c][op.stream].get();
  return posted == nullptr ? run_alone(args) : post_collective(args, *posted);
}

Status HostBackend::Impl::run_batch(std::span<const ir::OpIndex> batch,
                                    std::vector<Completion>& out, double& loss) {
  const ir::RankProgram& rp = program->ranks[static_cast<std::size_t>(rank)];
  std::vector<PostedOp> posted;
  std::vector<ir::OpIndex> posted_op;
  std::vector<Nanos> posted_at;
  std::optional<ThreadUsage> alone_usage;  // a batch of one posted op: its thread's usage
  posted.reserve(batch.size());
  for (ir::OpIndex index : batch) {
    const ir::Op& op = rp.ops[static_cast<std::size_t>(index)];
    const Nanos start = clock_now();
    auto fail = [&](const Error& e) { return make_error(at_op(rank, index, e)); };
    const bool computes = op.kind == ir::OpKind::compute || op.kind == ir::OpKind::copy;
    set_slice(computes ? Slice::compute : Slice::communication);
    // The thread's CPU time is taken for compute ops and copies, and for a transfer this thread
    // runs by itself (a batch of one op): its posts, copies and wake-ups, which tawsim charges
    // to the rank's core (sim/run/host_cpu.cpp). Ops posted together share the thread's waits,
    // which no op owns: they get none.
    const bool alone = batch.size() == 1;
    const ThreadUsage usage = computes || alone ? ThreadUsage::now() : ThreadUsage{};
    switch (op.kind) {
      case ir::OpKind::compute: {
        auto result =
            run_compute(*program, rank, index, ctx, [this](ir::BufferId b) { return access(b); });
        if (!result.ok()) return fail(result.error());
        loss += *result;
        out.push_back(usage.finish(index, start));
        break;
      }
      case ir::OpKind::copy: {
        auto src = access(ir::reads(rp, op)[0]);
        if (!src.ok()) return fail(src.error());
        auto dst = access(ir::writes(rp, op)[0]);
        if (!dst.ok()) return fail(dst.error());
        const std::size_t n =
            std::min({src->size(), dst->size(), static_cast<std::size_t>(op.bytes / 4)});
        std::copy(src->begin(), src->begin() + static_cast<std::ptrdiff_t>(n), dst->begin());
        out.push_back(usage.finish(index, start));
        break;
      }
      case ir::OpKind::collective:
        if (batch.size() == 1 && !nonblocking_alone(op.collective)) {
          Status s = run_comm(index);  // run_alone (mpi_ops.h)
          if (!s.ok()) return fail(s.error());
          out.push_back(usage.finish(index, start));
          break;
        }
        [[fallthrough]];
      case ir::OpKind::send:
      case ir::OpKind::recv: {
        posted.emplace_back();
        if (alone) alone_usage = usage;
        Status s = post_comm(index, &posted.back());
        if (!s.ok()) return fail(s.error());
        posted_op.push_back(index);
        posted_at.push_back(start);
        break;
      }
      default:
        return fail(make_error("op kind cannot run on a stream thread"));
    }
  }
  if (posted.empty()) return Status::success();
  set_slice(Slice::communication);
  Status s = wait_all(
      posted,
      [&](std::size_t i) {
        // One op posted alone: the thread's CPU time from its post to its completion is its.
        out.push_back(alone_usage ? alone_usage->finish(posted_op[i], posted_at[i])
                                  : Completion{posted_op[i], posted_at[i], clock_now()});
      },
      &stop);
  if (!s.ok()) return make_error(at_op(rank, posted_op.front(), s.error()));
  return Status::success();
}

Status HostBackend::Impl::prepare_comms(const ir::Program& p) {
  // Which streams carry the collectives of each communicator: the k-th collective must be on the
  // same stream on every member (each (communicator, stream) is one MPI communicator).
  const std::size_t ncomm = p.communicators.size();
  std::vector<std::vector<ir::StreamId>> order(ncomm);  // stream of the k-th collective
  std::vector<std::size_t> seen(ncomm);                 // collectives of rank r so far
  std::vector<std::set<ir::StreamId>> used(ncomm);
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    std::fill(seen.begin(), seen.end(), 0);
    for (const ir::Op& op : p.ranks[r].ops) {
      if (op.kind != ir::OpKind::collective) continue;
      const auto c = static_cast<std::size_t>(op.comm);
      const std::size_t k = seen[c]++;
      if (k == order[c].size()) order[c].push_back(op.stream);
      if (order[c][k] != op.stream) {
        return make_error("host backend: collective #" + std::to_string(k) + " of communicator '" +
                          p.communicators[c].name + "' is on stream '" + p.streams[op.stream] +
                          "' on rank " + std::to_string(r) + " but on stream '" +
                          p.streams[order[c][k]] + "' on another member");
      }
      used[c].insert(op.stream);
    }
  }
  // Communicators, created in id order by their members only (deadlock-free: every member
  // walks the same increasing sequence).
  int world = 0;
  TAWPIPE_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  void* ub = nullptr;
  int flag = 0;
  TAWPIPE_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
  if (flag && ub) tag_ub = *static_cast<int*>(ub);
  MPI_Group world_group;
  TAWPIPE_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  MpiGroup world_owner(world_group);
  comms.clear();
  comms.resize(ncomm);
  coll_comms.clear();
  coll_comms.resize(ncomm);
  comm_rank.assign(ncomm, std::vector<int>(static_cast<std::size_t>(world), -1));
  int tag = 0;
  for (std::size_t c = 0; c < ncomm; ++c) {
    const auto& members = p.communicators[c].members;
    for (std::size_t i = 0; i < members.size(); ++i)
      comm_rank[c][static_cast<std::size_t>(members[i])] = static_cast<int>(i);
    if (comm_rank[c][static_cast<std::size_t>(rank)] < 0) {
      tag += 1 + static_cast<int>(used[c].size());
      continue;
    }
    MPI_Group g;
    TAWPIPE_MPI(MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &g));
    MpiGroup owner(g);
    auto create = [&](MpiComm& out) -> Status {
      MPI_Comm comm = MPI_COMM_NULL;
      TAWPIPE_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, tag++ % 32768, &comm));
      out = MpiComm(comm);
      return Status::success();
    };
    TAWPIPE_TRY(create(comms[c]));
    coll_comms[c].resize(p.streams.size());
    for (ir::StreamId s : used[c])
      TAWPIPE_TRY(create(coll_comms[c][s]));
  }
  return Status::success();
}

namespace {

/// Per op of `rp`: for a send (recv), how many sends to (receives from) the same peer on the same
/// communicator come before it in op order; -1 for other ops. MPI matches a rank's k-th send to a
/// peer with the peer's k-th receive from it there (tag k, prepare()).
std::vector<std::int64_t> p2p_sequence(const ir::RankProgram& rp) {
  std::vector<std::int64_t> out(rp.ops.size(), -1);
  std::map<std::tuple<ir::CommId, ir::Rank, bool>, std::int64_t> next;
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    const ir::Op& op = rp.ops[i];
    if (op.kind != ir::OpKind::send && op.kind != ir::OpKind::recv) continue;
    out[i] = next[{op.comm, op.peer, op.kind == ir::OpKind::send}]++;
  }
  return out;
}

}  // namespace

std::vector<int> peer_streams_of_p2p(const ir::Program& program, ir::Rank rank) {
  // The streams of the peers' sends (receives) to (from) `rank`, per communicator, in op order:
  // the k-th of them matches this rank's k-th receive (send) there (p2p_sequence).
  std::map<std::tuple<ir::CommId, ir::Rank, bool>, std::vector<ir::StreamId>> theirs;
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    for (const ir::Op& op : program.ranks[r].ops) {
      if ((op.kind != ir::OpKind::send && op.kind != ir::OpKind::recv) || op.peer != rank) continue;
      theirs[{op.comm, static_cast<ir::Rank>(r), op.kind == ir::OpKind::send}].push_back(op.stream);
    }
  }
  const ir::RankProgram& rp = program.ranks[static_cast<std::size_t>(rank)];
  const std::vector<std::int64_t> seq = p2p_sequence(rp);
  std::vector<int> out(rp.ops.size(), 0);
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    if (seq[i] < 0) continue;
    const ir::Op& op = rp.ops[i];
    const auto it = theirs.find({op.comm, op.peer, op.kind != ir::OpKind::send});
    const auto k = static_cast<std::size_t>(seq[i]);
    if (it != theirs.end() && k < it->second.size()) out[i] = static_cast<int>(it->second[k]);
  }
  return out;
}

HostBackend::HostBackend(HostOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

HostBackend::~HostBackend() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    m.stop = true;
  }
  for (auto& st : m.streams) {
    if (st) st->cv.notify_all();
  }
  for (auto& st : m.streams) {
    if (st && st->thread.joinable()) st->thread.join();
  }
}

Nanos HostBackend::now() const {
  return clock_now();
}

Status HostBackend::prepare(const ir::Program& program, ir::Rank rank) {
  Impl& m = *impl_;
  m.program = &program;
  m.rank = rank;
  const ir::Header& h = program.header;
  if (h.dtype != "fp32") {
    return make_error("host backend: the program computes in " + h.dtype +
                      "; the host backend runs fp32 programs only (generate with dtype fp32)");
  }
  auto dims = math::host_dims(m.options.model, h.seq_len, h.micro_batch_size);
  if (!dims.ok()) return dims.error();
  m.ctx.dims = *dims;
  m.ctx.seed = m.options.seed;
  m.ctx.optimizer = m.options.optimizer;
  // 1/N of the global-batch mean: N = tokens of every embedding_forward of the program.
  std::uint64_t samples = 0;
  for (const ir::RankProgram& rp : program.ranks) {
    for (const ir::Op& op : rp.ops) {
      samples += op.kind == ir::OpKind::compute && op.compute == ir::ComputeKind::embedding_forward;
    }
  }
  // A program without any (calibration's op-overhead chain) computes no gradient: scale 1.
  m.ctx.grad_scale = samples == 0 ? 1.0f
                                  : static_cast<float>(1.0 / (static_cast<double>(samples) *
                                                              static_cast<double>(dims->tokens())));

  TAWPIPE_TRY(m.prepare_comms(program));

  // Point-to-point tags: the k-th send (recv) to (from) a peer on a communicator gets tag k.
  const ir::RankProgram& rp = program.ranks[static_cast<std::size_t>(rank)];
  m.tags.assign(rp.ops.size(), 0);
  m.peer_slots = peer_streams_of_p2p(program, rank);
  const std::vector<std::int64_t> seq = p2p_sequence(rp);
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    // Tags wrap at MPI_TAG_UB (Open MPI's is INT_MAX: + 1 in int would overflow).
    if (seq[i] >= 0)
      m.tags[i] = static_cast<int>(seq[i] % (static_cast<std::int64_t>(m.tag_ub) + 1));
  }

  // Buffers: persistent ones live from the start with their initial contents.
  m.data.clear();
  m.data.resize(rp.buffers.size());
  m.alive.assign(rp.buffers.size(), 0);
  m.live_bytes = m.peak_bytes = 0;
  for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
    const ir::Buffer& buf = rp.buffers[b];
    if (!buf.persistent) continue;
    m.make_alive(static_cast<ir::BufferId>(b));
    if (buf.initial.kind == ir::TensorKind::weights) {
      const std::size_t n = m.data[b].n;
      math::fill_initial_weights(
          m.ctx.dims, m.ctx.seed, buf.initial.layer_begin, buf.initial.layer_end,
          static_cast<std::size_t>(buf.initial.piece) * n, std::span<float>(m.data[b].p.get(), n));
    } else {
      m.zero(static_cast<ir::BufferId>(b));  // optimizer state and the like start at zero
    }
  }
  m.plan_zeroing(rp);
  // One thread per stream this rank uses (a second prepare() keeps the running ones).
  m.streams.resize(program.streams.size());
  for (const ir::Op& op : rp.ops) {
    auto& st = m.streams[op.stream];
    if (st) continue;
    st = std::make_unique<StreamThread>();
    StreamThread* raw = st.get();
    st->thread = std::thread(
        [this, raw, name = program.streams[op.stream], stream = static_cast<int>(op.stream)] {
          impl_->stream_loop(*raw, name, stream);
        });
  }
  return Status::success();
}

Status HostBackend::begin_iteration(std::int64_t step) {
  Impl& m = *impl_;
  m.ctx.step = step;
  const ir::RankProgram& rp = m.program->ranks[static_cast<std::size_t>(m.rank)];
  for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
    const ir::Buffer& buf = rp.buffers[b];
    const auto id = static_cast<ir::BufferId>(b);
    if (!buf.persistent) {
      m.kill(id);
      continue;
    }
    if (m.zero_each_iteration[b]) m.zero(id);
  }
  return Status::success();
}

Status HostBackend::issue(std::span<const ir::OpIndex> ops) {
  Impl& m = *impl_;
  const ir::RankProgram& rp = m.program->ranks[static_cast<std::size_t>(m.rank)];
  std::vector<ir::OpIndex> batch;
  for (ir::OpIndex index : ops) {
    const ir::Op& op = rp.ops[static_cast<std::size_t>(index)];
    const Nanos t = clock_now();
    if (op.kind == ir::OpKind::alloc || op.kind == ir::OpKind::free) {
      for (ir::BufferId b : ir::writes(rp, op)) {
        if (op.kind == ir::OpKind::alloc) {
          m.make_alive(b);
        } else {
          m.kill(b);
        }
      }
      if (op.kind == ir::OpKind::alloc) {
        for (ir::BufferId b : m.zero_on_alloc[static_cast<std::size_t>(index)])
          m.zero(b);
      }
      m.local_done.push_back({index, t, clock_now()});
    } else {
      batch.push_back(index);
    }
  }
  if (batch.empty()) return Status::success();
  StreamThread& st = *m.streams[rp.ops[static_cast<std::size_t>(batch.front())].stream];
  wait_log::issued(batch.front(), batch.size());
  {
    std::lock_guard lock(m.mu);
    st.queue.push_back(std::move(batch));
  }
  st.cv.notify_one();
  return Status::success();
}

Status HostBackend::wait(Nanos deadline, std::vector<Completion>& done) {
  Impl& m = *impl_;
  done.insert(done.end(), m.local_done.begin(), m.local_done.end());
  m.local_done.clear();
  std::unique_lock lock(m.mu);
  if (done.empty()) {
    const std::chrono::steady_clock::time_point until{std::chrono::nanoseconds(deadline)};
    m.done_cv.wait_until(lock, until, [&] { return !m.finished.empty() || m.error.has_value(); });
  }
  if (m.error) return *m.error;
  done.insert(done.end(), m.finished.begin(), m.finished.end());
  m.finished.clear();
  wait_log::waited(done.size());
  return Status::success();
}

Status HostBackend::end_iteration() {
  return Status::success();
}

double HostBackend::take_loss_sum() {
  std::lock_guard lock(impl_->mu);
  return std::exchange(impl_->loss_sum, 0.0);
}

std::uint64_t HostBackend::peak_bytes() const {
  return impl_->peak_bytes;
}

std::span<const float> HostBackend::buffer_data(ir::BufferId buffer) const {
  const auto u = static_cast<std::size_t>(buffer);
  if (u >= impl_->data.size() || !impl_->alive[u]) return {};
  return {impl_->data[u].p.get(), impl_->data[u].n};
}

}  // namespace tawpipe::exec::host
