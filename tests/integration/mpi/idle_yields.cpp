// idle_yields (mpirun -np 2): wait_all turns Open MPI's idle yields off while it waits
// (exec/host/mpi_ops.h IdleYields). With mpi_yield_when_idle set, as tawexec sets it, the
// library's flag must read true before a wait, false inside it (when the wait reports a
// completion) and true again after it. Reads the flag itself (dlsym), not through the backend.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <mpi.h>

#include "exec/host/doorbell.h"
#include "exec/host/mpi_ops.h"

namespace {

bool yields_now() {
  const auto* flag = static_cast<const bool*>(dlsym(RTLD_DEFAULT, "opal_progress_yield_when_idle"));
  return flag != nullptr && *flag;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tawpipe::exec::host;
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!install_doorbells().ok()) std::fprintf(stderr, "rank %d: no doorbells\n", rank);
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "rank %d: %s\n", rank, what);
      ++failures;
    }
  };
  expect(yields_now(), "Open MPI's idle yields are not on before the wait (mpi_yield_when_idle=1)");
  std::vector<char> buf(1 << 20);
  std::vector<PostedOp> ops(1);
  if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 waits
  if (post_p2p(rank == 1, buf.data(), buf.size(), 1 - rank, 0, MPI_COMM_WORLD, ops[0],
               doorbell_slot())
          .ok()) {
    bool inside = true;
    const tawpipe::Status s = wait_all(
        ops, [&](std::size_t) { inside = yields_now(); }, nullptr);
    expect(s.ok(), "wait_all failed");
    expect(!inside, "Open MPI's idle yields are on inside wait_all");
  } else {
    expect(false, "post_p2p failed");
  }
  expect(yields_now(), "Open MPI's idle yields are not back on after the wait");
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("idle yields: %s\n", all == 0 ? "PASSED" : "FAILED");
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
