#include "exec/host/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <ctime>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "exec/host/mpi_util.h"

namespace tawpipe::exec::host {
namespace {

/// One bell of a rank, kBellBytes apart in its segment of the shared window (kDoorbellSlots
/// bells, so two bells never share a cache line). MPI aligns a segment only to the futex word's
/// 4 bytes, not to a cache line: no alignas.
constexpr MPI_Aint kBellBytes = 64;
struct Bell {
  std::atomic<std::uint32_t> count{0};
  std::atomic<std::uint32_t> sleepers{0};
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

struct Doorbells {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Win win = MPI_WIN_NULL;
  std::vector<Bell*> by_world;  ///< slot 0 of each rank; null for ranks of other hosts
  Bell* mine = nullptr;         ///< slot 0 of this rank
  std::atomic<std::uint64_t> timeouts{0};
};

/// Written once by install_doorbells (before any stream thread exists), read by every thread.
Doorbells* g_bells = nullptr;

/// The calling thread's slot (set_doorbell_slot).
thread_local int t_slot = 0;

Bell* slot_of(Bell* slot0, int slot) {
  return reinterpret_cast<Bell*>(reinterpret_cast<char*>(slot0) + kBellBytes * slot);
}

long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value, const timespec* t) {
  // Shared (not FUTEX_PRIVATE_FLAG): the word lives in memory mapped by several processes.
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op, value, t, nullptr, 0);
}

int delete_world_map(MPI_Comm, int, void* value, void*) {
  delete static_cast<std::vector<int>*>(value);
  return MPI_SUCCESS;
}

int world_map_keyval() {
  // Created once, on first use (thread-safe static initialisation); MPI frees each map with
  // its communicator.
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_world_map, &k, nullptr);
    return k;
  }();
  return keyval;
}

}  // namespace

Status install_doorbells() {
  if (g_bells != nullptr) return Status::success();
  auto bells = std::make_unique<Doorbells>();
  TAWPIPE_MPI(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &bells->node));
  void* base = nullptr;
  static_assert(sizeof(Bell) <= kBellBytes && alignof(Bell) <= 4);
  TAWPIPE_MPI(MPI_Win_allocate_shared(kBellBytes * kDoorbellSlots, 1, MPI_INFO_NULL, bells->node,
                                      &base, &bells->win));
  int world = 0, local = 0;
  TAWPIPE_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  TAWPIPE_MPI(MPI_Comm_size(bells->node, &local));
  bells->by_world.assign(static_cast<std::size_t>(world), nullptr);
  bells->mine = static_cast<Bell*>(base);
  for (int k = 0; k < kDoorbellSlots; ++k)
    new (slot_of(bells->mine, k)) Bell;
  TAWPIPE_MPI(MPI_Barrier(bells->node));  // every bell constructed before anyone rings
  MPI_Group world_group, node_group;
  TAWPIPE_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  MpiGroup world_owner(world_group);
  TAWPIPE_MPI(MPI_Comm_group(bells->node, &node_group));
  MpiGroup node_owner(node_group);
  for (int r = 0; r < local; ++r) {
    MPI_Aint size = 0;
    int disp = 0;
    void* ptr = nullptr;
    TAWPIPE_MPI(MPI_Win_shared_query(bells->win, r, &size, &disp, &ptr));
    int w = MPI_UNDEFINED;
    TAWPIPE_MPI(MPI_Group_translate_ranks(node_group, 1, &r, world_group, &w));
    if (w >= 0 && w < world) bells->by_world[static_cast<std::size_t>(w)] = static_cast<Bell*>(ptr);
  }
  g_bells = bells.release();
  // MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI still works: the doorbells
  // go then, whichever path ends the program.
  int keyval = MPI_KEYVAL_INVALID;
  TAWPIPE_MPI(MPI_Comm_create_keyval(
      MPI_COMM_NULL_COPY_FN,
      [](MPI_Comm, int, void*, void*) {
        uninstall_doorbells();
        return MPI_SUCCESS;
      },
      &keyval, nullptr));
  TAWPIPE_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr));
  return Status::success();
}

void uninstall_doorbells() {
  if (g_bells == nullptr) return;
  MPI_Barrier(g_bells->node);  // nobody rings a freed bell
  MPI_Win_free(&g_bells->win);
  MPI_Comm_free(&g_bells->node);
  delete g_bells;
  g_bells = nullptr;
}

int world_rank_of(MPI_Comm comm, int rank) {
  if (rank < 0) return -1;
  void* value = nullptr;
  int found = 0;
  const int keyval = world_map_keyval();
  // One lock for the lookup and the first build: without it, two stream threads building the
  // map of one communicator at once would have the second MPI_Comm_set_attr free (delete_world_map)
  // the map the first is about to read.
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  MPI_Comm_get_attr(comm, keyval, &value, &found);
  if (!found) {
    MPI_Group group, world_group;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int n = 0;
    MPI_Group_size(group, &n);
    std::vector<int> local(static_cast<std::size_t>(n));
    auto map = std::make_unique<std::vector<int>>(static_cast<std::size_t>(n), -1);
    for (int i = 0; i < n; ++i)
      local[static_cast<std::size_t>(i)] = i;
    MPI_Group_translate_ranks(group, n, local.data(), world_group, map->data());
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    value = map.get();
    if (MPI_Comm_set_attr(comm, keyval, map.get()) == MPI_SUCCESS) map.release();
  }
  const auto* map = static_cast<const std::vector<int>*>(value);
  const auto u = static_cast<std::size_t>(rank);
  if (map == nullptr || u >= map->size()) return -1;
  const int w = (*map)[u];
  return w == MPI_UNDEFINED ? -1 : w;
}

bool can_ring(int world) {
  return g_bells != nullptr && world >= 0 &&
         static_cast<std::size_t>(world) < g_bells->by_world.size() &&
         g_bells->by_world[static_cast<std::size_t>(world)] != nullptr;
}

void set_doorbell_slot(int slot) {
  t_slot = ((slot % kDoorbellSlots) + kDoorbellSlots) % kDoorbellSlots;
}

int doorbell_slot() {
  return t_slot;
}

void ring(int world, int slot) {
  if (!can_ring(world)) return;
  Bell* b = slot_of(g_bells->by_world[static_cast<std::size_t>(world)], slot);
  // The increment is ordered before the sleeper check (seq_cst); a sleeper registers before it
  // rechecks the count in FUTEX_WAIT, so either it sees the new count or this sees it.
  b->count.fetch_add(1);
  if (b->sleepers.load() > 0) futex(&b->count, FUTEX_WAKE, INT_MAX, nullptr);
}

std::uint32_t doorbell_count() {
  return slot_of(g_bells->mine, t_slot)->count.load();
}

bool sleep_on_doorbell(std::uint32_t seen, std::int64_t timeout_ns) {
  Bell* b = slot_of(g_bells->mine, t_slot);
  b->sleepers.fetch_add(1);
  const timespec t{static_cast<time_t>(timeout_ns / 1'000'000'000),
                   static_cast<long>(timeout_ns % 1'000'000'000)};
  const long rc = b->count.load() == seen ? futex(&b->count, FUTEX_WAIT, seen, &t) : 0;
  const int err = errno;
  b->sleepers.fetch_sub(1);
  if (rc != 0 && err == ETIMEDOUT) {
    g_bells->timeouts.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

std::uint64_t doorbell_timeouts() {
  return g_bells == nullptr ? 0 : g_bells->timeouts.load(std::memory_order_relaxed);
}

}  // namespace tawpipe::exec::host
