#include "exec/cli_support.h"

#include <cstdlib>
#include <iostream>

#include <mpi.h>

namespace tawpipe::exec::cli {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int Command::usage_error(const std::string& message) const {
  if (world_rank() == 0) say(message);
  MPI_Finalize();
  return kExitUsage;
}

void Command::say(const std::string& message) const {
  std::cerr << name << ": " << message << "\n";
}

void Command::abort_run(const std::string& message, int exit_code) const {
  std::cerr << name << ": " << message << std::endl;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::abort();  // MPI_Abort does not return
}

void Command::abort_rank(const std::string& message, int exit_code) const {
  abort_run("rank " + std::to_string(world_rank()) + ": " + message, exit_code);
}

}  // namespace tawpipe::exec::cli
