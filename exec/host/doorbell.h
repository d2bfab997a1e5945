/// \file
/// Doorbells: wake-ups between the MPI processes of one host, so that a communication thread
/// waiting for a point-to-point message sleeps until a peer has done something that can complete
/// it, instead of waking on a timer to test MPI.
///
/// Why: Open MPI's shared-memory transport (btl/vader) has no blocking progress, so a wait must
/// test, and every test of a sleeping thread is a wake-up that preempts the compute thread of its
/// core. bench_overlap (tests/bench) measured the timer schedule of common/host_wait.h at 5.2
/// wake-ups and ~105 us of the sending thread's CPU time per 4 MiB message, and the compute
/// beside it 40 % slower (1.37x the longer of compute and send, quiet 2-vCPU VM). A message
/// needs one test after its completion is possible; a bell rung by the peer at that moment gives
/// exactly that one.
///
/// Protocol: each rank of the host owns kDoorbellSlots counters in a shared-memory window
/// (MPI_Win_allocate_shared over MPI_COMM_TYPE_SHARED), one per communication thread: a thread
/// waits on its slot (set_doorbell_slot; the backend's stream threads use their IR stream's id,
/// whose peers' ops are on the same stream for collectives, exec/host/host_backend.cpp, and on a
/// stream known from the program for point-to-point ops). ring(r, slot) increments that counter
/// of rank r and wakes the threads sleeping on it (a futex on the counter, skipped while none
/// sleeps); a waiter reads its counter, tests its requests, and sleeps while the counter has not
/// moved, at most host_wait::doorbell_timeout_ns (a safety net for progress no bell announces;
/// bench_overlap counts how often it fires). One counter per rank woke every waiting thread of
/// the rank for every ring: FSDP's all-gather and reduce-scatter threads, waiting at once, woke
/// for each other's messages (CPU accounting of a 2x2-cpu run, tawexec's "cpu per timed step"
/// lines: 3100-5100 sleeps per step of the two threads on the leading ranks against 1300-1500
/// the simulator counts). Who rings whom follows Open MPI's ob1 protocol over vader with
/// single-copy CMA (btl_vader_single_copy_mechanism = cma, the default here): posting a send
/// rings the receiver (the eager message or rendezvous header has arrived to be matched);
/// posting a receive rings the sender (a matched rendezvous is copied by the receiver inside the
/// call and acknowledged); completing a receive rings the sender (the acknowledgement, FIN, is
/// sent before the receive completes). Collectives of libnbc progress in rounds no bell
/// announces: their waits keep the timer schedule (exec/host/mpi_ops.cpp wait_all).
///
/// The doorbells are one process-wide object, as MPI itself is: install_doorbells() after
/// MPI_Init (tawexec, bench_overlap); MPI_Finalize frees them. Without them every wait uses the
/// timer schedule.
#pragma once

#include <cstdint>

#include <mpi.h>

#include "common/error.h"

namespace tawpipe::exec::host {

/// Creates the doorbells of MPI_COMM_WORLD's ranks (collective over MPI_COMM_WORLD) and makes
/// them the process's until MPI_Finalize (or uninstall_doorbells). Call before any thread
/// waits. Errors: MPI's (e.g. no shared-memory window support); the process then has none and
/// waits on timers.
Status install_doorbells();

/// Frees the doorbells (collective over MPI_COMM_WORLD; MPI_Finalize calls it). No-op when none
/// are installed.
void uninstall_doorbells();

/// World rank of rank `rank` of `comm`, cached on the communicator (an MPI attribute, freed with
/// it); -1 when `rank` is not a rank of `comm` (MPI_PROC_NULL, MPI_ANY_SOURCE).
int world_rank_of(MPI_Comm comm, int rank);

/// Whether world rank `world` has a doorbell this process can ring (installed, same host).
bool can_ring(int world);

/// Doorbells per rank: a thread's slot is taken modulo this.
inline constexpr int kDoorbellSlots = 16;

/// The calling thread's doorbell slot from now on (modulo kDoorbellSlots; threads start at 0).
void set_doorbell_slot(int slot);

/// The calling thread's doorbell slot.
int doorbell_slot();

/// Rings doorbell `slot` of world rank `world`; no-op when !can_ring(world).
void ring(int world, int slot);

/// The calling thread's doorbell counter (read it before testing, pass it to
/// sleep_on_doorbell).
std::uint32_t doorbell_count();

/// Sleeps until the calling thread's counter differs from `seen` or `timeout_ns` passed; true
/// when rung (or the counter already moved), false on timeout. Precondition: doorbells
/// installed.
bool sleep_on_doorbell(std::uint32_t seen, std::int64_t timeout_ns);

/// Timeouts of sleep_on_doorbell in this process so far (bench_overlap reports them).
std::uint64_t doorbell_timeouts();

}  // namespace tawpipe::exec::host
