#include "exec/host/mpi_ops.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "exec/host/doorbell.h"
#include "exec/host/mpi_util.h"
#include "exec/host/wait_log.h"

namespace tawpipe::exec::host {
namespace {

int to_int(std::uint64_t v) {
  return static_cast<int>(std::min<std::uint64_t>(v, 0x7fffffff));
}

/// Open MPI's idle yields (mpi_ops.h IdleYields): the library's switch and flag, looked up at
/// run time (null with another MPI, or an Open MPI without them: nothing is switched).
struct OpalYield {
  bool (*set)(bool) = nullptr;
  const bool* flag = nullptr;
  bool configured = false;  ///< the flag at the first use (mpi_yield_when_idle)
  std::mutex mu;
  int waits = 0, blocking = 0;  ///< active wait_all calls and blocking collectives
};

OpalYield& opal_yield() {
  static OpalYield y;
  static std::once_flag once;
  std::call_once(once, [] {
    y.set =
        reinterpret_cast<bool (*)(bool)>(dlsym(RTLD_DEFAULT, "opal_progress_set_yield_when_idle"));
    y.flag = static_cast<const bool*>(dlsym(RTLD_DEFAULT, "opal_progress_yield_when_idle"));
    if (y.flag == nullptr) y.set = nullptr;
    y.configured = y.flag != nullptr && *y.flag;
  });
  return y;
}

/// Sets the flag for the current counts (mu held): the configured yields while a blocking
/// collective runs or no wait does, none while only waits run.
void apply_yield_locked(OpalYield& y) {
  if (y.set == nullptr || !y.configured) return;
  const bool want = y.blocking > 0 || y.waits == 0;
  if (*y.flag != want) y.set(want);
}

}  // namespace

IdleYields::IdleYields(Kind kind) : kind_(kind) {
  OpalYield& y = opal_yield();
  const std::lock_guard lock(y.mu);
  ++(kind_ == Kind::off_while_waiting ? y.waits : y.blocking);
  apply_yield_locked(y);
}

IdleYields::~IdleYields() {
  OpalYield& y = opal_yield();
  const std::lock_guard lock(y.mu);
  --(kind_ == Kind::off_while_waiting ? y.waits : y.blocking);
  apply_yield_locked(y);
}

bool mpi_idle_yields() {
  const OpalYield& y = opal_yield();
  return y.flag != nullptr && *y.flag;
}

Status post_collective(const CollectiveArgs& a, PostedOp& out) {
  const bool in_place = a.send == a.recv;
  const int count = to_int(a.bytes / 4);  // floats
  MPI_Request* req = &out.request;
  switch (a.kind) {
    case ir::CollectiveKind::broadcast:
      if (a.root == a.me && !in_place) std::memcpy(a.recv, a.send, a.bytes);
      TAWPIPE_MPI(MPI_Ibcast(a.recv, to_int(a.bytes), MPI_BYTE, a.root, a.comm, req));
      return Status::success();
    case ir::CollectiveKind::reduce: {
      const void* sbuf = (a.root == a.me && in_place) ? MPI_IN_PLACE : a.send;
      TAWPIPE_MPI(MPI_Ireduce(sbuf, a.recv, count, MPI_FLOAT, MPI_SUM, a.root, a.comm, req));
      return Status::success();
    }
    case ir::CollectiveKind::all_reduce: {
      const void* sbuf = in_place ? MPI_IN_PLACE : a.send;
      TAWPIPE_MPI(MPI_Iallreduce(sbuf, a.recv, count, MPI_FLOAT, MPI_SUM, a.comm, req));
      return Status::success();
    }
    case ir::CollectiveKind::all_gather: {
      const int piece = count / a.size;
      const void* sbuf = in_place ? MPI_IN_PLACE : a.send;
      TAWPIPE_MPI(MPI_Iallgather(sbuf, piece, MPI_FLOAT, a.recv, piece, MPI_FLOAT, a.comm, req));
      return Status::success();
    }
    case ir::CollectiveKind::reduce_scatter: {
      const int piece = count / a.size;
      float* dst = a.recv;
      if (in_place) {
        out.staged = static_cast<std::size_t>(piece);
        out.staging = make_aligned_floats(out.staged);
        out.copy_to = a.recv;
        dst = out.staging.get();
      }
      TAWPIPE_MPI(MPI_Ireduce_scatter_block(a.send, dst, piece, MPI_FLOAT, MPI_SUM, a.comm, req));
      return Status::success();
    }
  }
  return make_error("unknown collective kind");
}

Status run_collective(const CollectiveArgs& a) {
  const IdleYields yields(IdleYields::Kind::on_while_blocking);
  const bool in_place = a.send == a.recv;
  const int count = to_int(a.bytes / 4);  // floats
  switch (a.kind) {
    case ir::CollectiveKind::broadcast:
      if (a.root == a.me && !in_place) std::memcpy(a.recv, a.send, a.bytes);
      TAWPIPE_MPI(MPI_Bcast(a.recv, to_int(a.bytes), MPI_BYTE, a.root, a.comm));
      return Status::success();
    case ir::CollectiveKind::reduce: {
      const void* sbuf = (a.root == a.me && in_place) ? MPI_IN_PLACE : a.send;
      TAWPIPE_MPI(MPI_Reduce(sbuf, a.recv, count, MPI_FLOAT, MPI_SUM, a.root, a.comm));
      return Status::success();
    }
    case ir::CollectiveKind::all_reduce: {
      const void* sbuf = in_place ? MPI_IN_PLACE : a.send;
      TAWPIPE_MPI(MPI_Allreduce(sbuf, a.recv, count, MPI_FLOAT, MPI_SUM, a.comm));
      return Status::success();
    }
    case ir::CollectiveKind::all_gather: {
      const int piece = count / a.size;
      const void* sbuf = in_place ? MPI_IN_PLACE : a.send;
      TAWPIPE_MPI(MPI_Allgather(sbuf, piece, MPI_FLOAT, a.recv, piece, MPI_FLOAT, a.comm));
      return Status::success();
    }
    case ir::CollectiveKind::reduce_scatter: {
      const int piece = count / a.size;
      if (in_place) {
        thread_local AlignedVector staging;  // MPI's output, kept across calls (no faults)
        staging.resize(static_cast<std::size_t>(piece));
        TAWPIPE_MPI(
            MPI_Reduce_scatter_block(a.send, staging.data(), piece, MPI_FLOAT, MPI_SUM, a.comm));
        std::copy(staging.begin(), staging.end(), a.recv);
      } else {
        TAWPIPE_MPI(MPI_Reduce_scatter_block(a.send, a.recv, piece, MPI_FLOAT, MPI_SUM, a.comm));
      }
      return Status::success();
    }
  }
  return make_error("unknown collective kind");
}

bool nonblocking_alone(ir::CollectiveKind kind) {
  return kind == ir::CollectiveKind::broadcast;
}

namespace {

/// struct sched_attr of sched_setattr(2); glibc has no wrapper.
struct SchedAttr {
  std::uint32_t size = 0, policy = 0;
  std::uint64_t flags = 0;
  std::int32_t nice = 0;
  std::uint32_t priority = 0;
  std::uint64_t runtime = 0, deadline = 0, period = 0;
};

/// sched_setattr(2) with sched_runtime = `slice_ns` (0: the default slice) for this thread.
bool request_slice(std::uint64_t slice_ns) {
  SchedAttr attr;
  attr.size = sizeof attr;
  attr.policy = SCHED_OTHER;
  attr.nice = getpriority(PRIO_PROCESS, 0);  // keep the thread's nice value
  attr.runtime = slice_ns;
  return syscall(SYS_sched_setattr, 0, &attr, 0U) == 0;
}

}  // namespace

bool request_comm_slice(bool on) {
  return request_slice(on ? kCommSliceNs : 0);
}

bool request_compute_slice() {
  return request_slice(kComputeSliceNs);
}

FifoWhileWaiting::FifoWhileWaiting() {
  static_assert(sizeof(SchedAttr) == sizeof prev_);
  SchedAttr prev;
  prev.size = sizeof prev;
  if (syscall(SYS_sched_getattr, 0, &prev, sizeof prev, 0U) != 0) return;
  if (prev.policy == SCHED_FIFO) return;  // a nested wait: already real-time
  std::memcpy(prev_, &prev, sizeof prev);
  SchedAttr fifo;
  fifo.size = sizeof fifo;
  fifo.policy = SCHED_FIFO;
  fifo.priority = 1;
  active_ = syscall(SYS_sched_setattr, 0, &fifo, 0U) == 0;
}

FifoWhileWaiting::~FifoWhileWaiting() {
  if (active_) syscall(SYS_sched_setattr, 0, prev_, 0U);
}

Status post_p2p(bool is_send, void* data, std::uint64_t bytes, int peer, int tag, MPI_Comm comm,
                PostedOp& out, int peer_slot) {
  if (is_send) {
    TAWPIPE_MPI(MPI_Isend(data, to_int(bytes), MPI_BYTE, peer, tag, comm, &out.request));
  } else {
    TAWPIPE_MPI(MPI_Irecv(data, to_int(bytes), MPI_BYTE, peer, tag, comm, &out.request));
  }
  out.is_recv = !is_send;
  out.bytes = bytes;
  out.peer_world = world_rank_of(comm, peer);
  out.peer_slot = peer_slot;
  if (wait_log::on()) {
    int self = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &self);
    out.log_op = wait_log::post(is_send, self, out.peer_world, tag, bytes, peer_slot);
    wait_log::ring(out.peer_world, peer_slot,
                   is_send ? wait_log::Why::post_send : wait_log::Why::post_recv);
  }
  ring(out.peer_world, peer_slot);
  return Status::success();
}

namespace {

/// The wait log's (exec/host/wait_log.h) count of this process's threads inside a test of
/// wait_all, and of tests ended so far: whether a thread's test ran while another's did.
/// Open MPI's shared-memory transport lets one thread progress at a time (btl/vader: a thread
/// that finds another inside returns at once), so such a test may not have progressed at all.
std::atomic<int> g_testing{0};
std::atomic<std::uint64_t> g_tests_ended{0};

/// One MPI_Testsome of wait_all; with the wait log on, `alone` false when another thread of the
/// process was inside one at any moment of it.
int test_some(std::vector<MPI_Request>& requests, std::vector<int>& indices, int& outcount,
              bool& alone) {
  if (!wait_log::on())
    return MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &outcount,
                        indices.data(), MPI_STATUSES_IGNORE);
  const std::uint64_t ended = g_tests_ended.load();
  const int before = g_testing.fetch_add(1);
  const int rc = MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &outcount,
                              indices.data(), MPI_STATUSES_IGNORE);
  const int after = g_testing.fetch_sub(1);
  const std::uint64_t ended_now = g_tests_ended.fetch_add(1);
  alone = before == 0 && after == 1 && ended_now == ended;
  return rc;
}

thread_local std::uint64_t t_wait_sleeps = 0;
std::atomic<std::uint64_t> g_timer_sleeps{0}, g_doorbell_sleeps{0};
}  // namespace

WaitSleeps wait_sleeps_of_process() {
  return {g_timer_sleeps.load(std::memory_order_relaxed),
          g_doorbell_sleeps.load(std::memory_order_relaxed)};
}

std::uint64_t wait_sleeps_on_this_thread() {
  return t_wait_sleeps;
}

Status wait_all(std::span<PostedOp> ops, const std::function<void(std::size_t)>& on_done,
                const std::atomic<bool>* stop) {
  std::vector<MPI_Request> requests(ops.size());
  std::vector<std::size_t> slot(ops.size());  // requests[i] belongs to ops[slot[i]]
  for (std::size_t i = 0; i < ops.size(); ++i) {
    requests[i] = ops[i].request;
    slot[i] = i;
  }
  std::vector<int> indices(ops.size());
  const wait_log::Stamp log_begin = wait_log::stamp();
  const std::uint64_t sleeps_before = t_wait_sleeps;
  auto log_end = [&] {
    if (!wait_log::on()) return;
    std::uint64_t bytes = 0;
    for (const PostedOp& op : ops)
      bytes += op.bytes;
    wait_log::wait_end(log_begin, ops.size(), bytes, t_wait_sleeps - sleeps_before);
  };
  const FifoWhileWaiting fifo;
  const IdleYields no_yields(IdleYields::Kind::off_while_waiting);
  // Pending ops without a doorbell (libnbc collectives, peers of other hosts): timer schedule.
  std::size_t unrung = 0;
  for (const PostedOp& op : ops)
    unrung += !can_ring(op.peer_world);
  int polls = 0;
  std::int64_t sleep_ns = kFirstSleepNs;
  auto since = std::chrono::steady_clock::now();  // the last completion (or the start)
  while (!requests.empty()) {
    // Read before testing: a ring after the test moves it, and the sleep below returns at once.
    const std::uint32_t seen = unrung == 0 ? doorbell_count() : 0;
    // Open MPI's MPI_Testsome checks the requests, then progresses when none is complete, and
    // returns without checking again: what its progress completed (a receive's whole copy) is
    // only seen by the next test, after a sleep. So a test that finds nothing tests once more.
    int outcount = 0;
    bool alone = true;
    for (int pass = 0; pass < 2 && outcount == 0; ++pass) {
      bool this_alone = true;
      TAWPIPE_MPI(test_some(requests, indices, outcount, this_alone));
      alone = alone && this_alone;
    }
    const bool some = outcount > 0 && outcount != MPI_UNDEFINED;
    wait_log::tested(some ? outcount : 0);
    if (some) {
      for (int k = 0; k < outcount; ++k) {
        PostedOp& op = ops[slot[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)])]];
        op.request = MPI_REQUEST_NULL;
        if (op.copy_to != nullptr) std::copy_n(op.staging.get(), op.staged, op.copy_to);
        if (wait_log::on()) wait_log::complete(op.log_op);
        if (op.is_recv) {
          ring(op.peer_world, op.peer_slot);  // its acknowledgement (FIN) is on the way
          wait_log::ring(op.peer_world, op.peer_slot, wait_log::Why::recv_done);
        }
        unrung -= !can_ring(op.peer_world);
        on_done(static_cast<std::size_t>(&op - ops.data()));
      }
      std::size_t w = 0;
      for (std::size_t r = 0; r < requests.size(); ++r) {
        if (requests[r] == MPI_REQUEST_NULL) continue;
        requests[w] = requests[r];
        slot[w] = slot[r];
        ++w;
      }
      requests.resize(w);
      polls = 0;
      sleep_ns = kFirstSleepNs;
      since = std::chrono::steady_clock::now();
      continue;
    }
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      log_end();
      return Status::success();
    }
    if (polls < kSpinPolls) {
      ++polls;  // test again at once: a message about to land costs no sleep
    } else if (unrung == 0) {
      // Every pending op is announced by a peer's bell: the peer rings this thread's slot
      // (exec/host/doorbell.h), so rings for the process's other waiting threads do not wake
      // this one. MPI progress is per process, so another thread's test may complete this
      // thread's op, but only after a ring to this slot made it completable: the woken thread
      // finds it complete (MPI_Testsome checks before it progresses); the threads of a rank run
      // under SCHED_FIFO on one core, one after another. What no bell announces is left to the
      // timeout (host_wait::doorbell_timeout_ns). One exception: Open MPI's shared-memory
      // transport progresses on one thread at a time (btl/vader returns at once from a thread
      // that finds another inside), so a test beside another thread's may not progress, and
      // that thread may complete this one's op after the ring was read. The wait log
      // (exec/host/wait_log.h) records such tests ("overlapped"); quiet 2x2-cpu runs of FSDP,
      // WeiPipe, TawPipe and 1F1B (session 14) had no timeout that ended a wait for an op
      // whose bell had rung during the sleep, or whose bell never came.
      const std::int64_t waited_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - since)
                                         .count();
      const std::int64_t timeout_ns = host_wait::doorbell_timeout_ns(waited_ns);
      const wait_log::Stamp begin = wait_log::stamp();
      const bool rung = sleep_on_doorbell(seen, timeout_ns);
      if (wait_log::on()) {
        wait_log::sleep(begin, wait_log::stamp(),
                        rung ? wait_log::How::bell : wait_log::How::timeout, timeout_ns,
                        requests.size(), ops[slot[0]].log_op, alone);
      }
      ++t_wait_sleeps;
      g_doorbell_sleeps.fetch_add(1, std::memory_order_relaxed);
    } else {
      const wait_log::Stamp begin = wait_log::stamp();
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
      if (wait_log::on()) {
        wait_log::sleep(begin, wait_log::stamp(), wait_log::How::timer, sleep_ns, requests.size(),
                        ops[slot[0]].log_op, alone);
      }
      ++t_wait_sleeps;
      g_timer_sleeps.fetch_add(1, std::memory_order_relaxed);
      const std::int64_t waited_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - since)
                                         .count();
      sleep_ns = host_wait::next_sleep_ns(sleep_ns, waited_ns);
    }
  }
  log_end();
  return Status::success();
}

namespace {

/// Tag of the direct collectives' messages. Their communicator carries only the collectives of
/// one stream, in program order, so one tag cannot mismatch (libnbc and coll/tuned use their
/// own tag space).
constexpr int kDirectTag = 1;

/// Posts one message of `floats` floats (send or receive) into `ops`.
Status post_floats(bool is_send, float* data, std::size_t floats, int peer, MPI_Comm comm,
                   std::vector<PostedOp>& ops) {
  ops.emplace_back();
  // The peers' threads that run this collective carry the same IR stream (their MPI
  // communicator is that stream's, exec/host/host_backend.h), so they wait on this slot too.
  return post_p2p(is_send, data, 4 * static_cast<std::uint64_t>(floats), peer, kDirectTag, comm,
                  ops.back(), doorbell_slot());
}

Status wait_every(std::vector<PostedOp>& ops) {
  return wait_all(
      ops, [](std::size_t) {}, nullptr);
}

/// Scratch for the pieces received from the other members, kept per thread across calls.
float* scratch(std::size_t floats) {
  thread_local AlignedVector s;
  if (s.size() < floats) s.resize(floats);
  return s.data();
}

}  // namespace

bool direct_alone(const CollectiveArgs& a) {
  const std::uint64_t floats = a.bytes / 4;
  switch (a.kind) {
    case ir::CollectiveKind::reduce:
      return a.size > 1;
    case ir::CollectiveKind::all_gather:
    case ir::CollectiveKind::reduce_scatter:
    case ir::CollectiveKind::all_reduce:
      return a.size > 1 && floats % static_cast<std::uint64_t>(a.size) == 0;
    default:
      return false;
  }
}

Status run_alone(const CollectiveArgs& a) {
  if (direct_alone(a)) return run_direct(a);
  if (a.kind == ir::CollectiveKind::all_gather) {  // uneven: libnbc, waited for by sleeping
    std::vector<PostedOp> ops(1);
    TAWPIPE_TRY(post_collective(a, ops[0]));
    return wait_every(ops);
  }
  return run_collective(a);
}

Status run_direct(const CollectiveArgs& a) {
  const auto n = static_cast<std::size_t>(a.bytes / 4);
  const auto p = static_cast<std::size_t>(a.size);
  const auto me = static_cast<std::size_t>(a.me);
  std::vector<PostedOp> ops;
  ops.reserve(2 * p);
  if (a.kind == ir::CollectiveKind::all_gather) {
    // Every member sends its piece to every other and receives theirs into place.
    const std::size_t piece = n / p;
    float* own = a.recv + me * piece;
    if (a.send != a.recv) std::copy_n(a.send, piece, own);
    for (std::size_t r = 0; r < p; ++r) {
      if (r == me) continue;
      TAWPIPE_TRY(post_floats(false, a.recv + r * piece, piece, static_cast<int>(r), a.comm, ops));
      TAWPIPE_TRY(post_floats(true, own, piece, static_cast<int>(r), a.comm, ops));
    }
    return wait_every(ops);
  }
  if (a.kind == ir::CollectiveKind::reduce) {
    // Every member sends its buffer to the root, which sums them in member order.
    const bool root = a.me == a.root;
    if (!root) {
      TAWPIPE_TRY(post_floats(true, const_cast<float*>(a.send), n, a.root, a.comm, ops));
      return wait_every(ops);
    }
    float* in = scratch(n * p);
    for (std::size_t r = 0; r < p; ++r) {
      if (r != me) TAWPIPE_TRY(post_floats(false, in + r * n, n, static_cast<int>(r), a.comm, ops));
    }
    TAWPIPE_TRY(wait_every(ops));
    if (a.send != a.recv) std::copy_n(a.send, n, a.recv);
    for (std::size_t r = 0; r < p; ++r) {
      if (r == me) continue;
      const float* x = in + r * n;
      for (std::size_t i = 0; i < n; ++i)
        a.recv[i] += x[i];
    }
    return Status::success();
  }
  // Reduce-scatter: member j receives piece j of every other member's buffer and sums it into
  // its own piece (written to the start of recv; in place, the piece is read before it is
  // overwritten, element by element). All-reduce: that, then every member sends its summed
  // piece to every other.
  const std::size_t piece = n / p;
  float* in = scratch(piece * p);
  for (std::size_t r = 0; r < p; ++r) {
    if (r == me) continue;
    TAWPIPE_TRY(post_floats(false, in + r * piece, piece, static_cast<int>(r), a.comm, ops));
    TAWPIPE_TRY(post_floats(true, const_cast<float*>(a.send) + r * piece, piece,
                            static_cast<int>(r), a.comm, ops));
  }
  TAWPIPE_TRY(wait_every(ops));
  const bool all = a.kind == ir::CollectiveKind::all_reduce;
  float* out = all ? a.recv + me * piece : a.recv;  // where this member's summed piece goes
  const float* own = a.send + me * piece;
  for (std::size_t i = 0; i < piece; ++i) {
    float v = own[i];
    for (std::size_t r = 0; r < p; ++r)
      if (r != me) v += in[r * piece + i];
    out[i] = v;
  }
  if (!all) return Status::success();
  ops.clear();
  for (std::size_t r = 0; r < p; ++r) {
    if (r == me) continue;
    TAWPIPE_TRY(post_floats(false, a.recv + r * piece, piece, static_cast<int>(r), a.comm, ops));
    TAWPIPE_TRY(post_floats(true, out, piece, static_cast<int>(r), a.comm, ops));
  }
  return wait_every(ops);
}

}  // namespace tawpipe::exec::host
