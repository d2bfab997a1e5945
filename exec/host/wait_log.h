/// \file
/// The host backend's wait log: every post, ring, sleep and completion of the point-to-point and
/// collective waits (exec/host/mpi_ops.h wait_all), with CLOCK_MONOTONIC times, so that a run
/// shows how each sleep ended (a bell, a timeout, a timer), whether the op completed at the test
/// right after it, and how long before that the peer had posted or completed its side
/// (scripts/wait-log joins the ranks' files).
///
/// Off unless the environment sets TAWPIPE_WAIT_LOG=PREFIX: each process then writes
/// PREFIX.<world rank>.tsv when it exits (records kept in memory per thread until then). When
/// off, each hook is one test of a constant-initialised bool.
///
/// Lines (tab-separated; times in ns of CLOCK_MONOTONIC, common to the processes of a host):
///   P  t slot op send|recv self_world peer_world tag bytes peer_slot   a posted p2p op
///   R  t slot target_world target_slot why                              a ring (why: post_send,
///                                                                        post_recv, recv_done)
///   S  t_begin t_end slot bell|timeout|timer requested_ns pending first_op completed_next
///      cpu_begin cpu_end alone|overlapped                                one sleep of wait_all,
///      completed_next: ops the test right after it completed (-1: the wait returned first);
///      cpu_*: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) at the sleep's begin and end;
///      overlapped: the tests before the sleep ran while another thread of the process tested
///   C  t slot op                                                        an op completed
///   W  t_begin t_end slot ops bytes cpu_begin cpu_end sleeps             one wait_all: its ops,
///      their bytes (p2p; 0 for collectives of libnbc), the thread's CPU time at its begin/end
///   B  t_begin t_end slot first_op_index ops cpu_begin cpu_end          one batch of a stream
///      thread (exec/host/host_backend.cpp): IR op index of its first op, its ops, CPU time
///   I  t first_op_index ops                                             the interpreter issued
///                                                                        a batch
///   D  t completions                                                     the interpreter's wait
///                                                                        returned
///                                                                        (HostBackend::wait)
/// `op` numbers the process's posted ops from 1 (0: a collective of libnbc, no P line).
#pragma once

#include <cstdint>

namespace tawpipe::exec::host::wait_log {

namespace detail {
extern const bool g_on;
}

/// Whether TAWPIPE_WAIT_LOG is set (read once at start-up).
inline bool on() {
  return detail::g_on;
}

/// Records a posted point-to-point op; returns its op number (0 when off).
std::uint64_t post(bool is_send, int self_world, int peer_world, int tag, std::uint64_t bytes,
                   int peer_slot);

/// Why a ring was sent (doorbell.h: who rings whom).
enum class Why : std::uint8_t { post_send, post_recv, recv_done };
void ring(int target_world, int target_slot, Why why);

/// How a sleep of wait_all ended.
enum class How : std::uint8_t { bell, timeout, timer };
/// Records one sleep; its completed_next is filled by the next tested() of this thread.
struct Stamp {
  std::int64_t t = 0, cpu = 0;
};
/// now_ns() and thread_cpu_ns() (zeros when off).
Stamp stamp();
void sleep(Stamp begin, Stamp end, How how, std::int64_t requested_ns, std::size_t pending,
           std::uint64_t first_op, bool tested_alone);
/// The test after the thread's last sleep completed `completed` ops.
void tested(int completed);
/// The wait returned (its last sleep, if not yet tested, keeps completed_next -1); `begin`: the
/// stamp() at its start.
void wait_end(Stamp begin, std::size_t ops, std::uint64_t bytes, std::uint64_t sleeps);
void complete(std::uint64_t op);
/// The interpreter issued a batch to a stream thread / its wait for completions returned.
void issued(std::int64_t first_op_index, std::size_t ops);
void waited(std::size_t completions);
/// A stream thread's batch ended (`begin`: the stamp() at its start).
void batch(Stamp begin, std::int64_t first_op_index, std::size_t ops);

/// CLOCK_MONOTONIC now (ns).
std::int64_t now_ns();
/// The calling thread's CPU time (ns).
std::int64_t thread_cpu_ns();

}  // namespace tawpipe::exec::host::wait_log
