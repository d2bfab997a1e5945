/// \file
/// Small RAII owners and error checking for MPI. The only exec/ files that include <mpi.h> are
/// in exec/host/ (and tawexec.cpp, which starts and ends MPI).
#pragma once

#include <string>
#include <utility>

#include <mpi.h>

#include "common/error.h"

namespace tawpipe::exec::host {

/// "MPI_Isend failed: <MPI's error string>" for a non-success code.
std::string mpi_error_string(const char* call, int code);

/// Turns an MPI return code into a Status at the call site.
#define TAWPIPE_MPI(call)                                                   \
  do {                                                                      \
    const int tawpipe_mpi_rc_ = (call);                                     \
    if (tawpipe_mpi_rc_ != MPI_SUCCESS)                                     \
      return ::tawpipe::make_error(                                         \
          ::tawpipe::exec::host::mpi_error_string(#call, tawpipe_mpi_rc_)); \
  } while (0)

/// Owns a communicator created from MPI_COMM_WORLD; frees it on destruction.
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {}
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  MpiComm(MpiComm&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  MpiComm& operator=(MpiComm&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    }
    return *this;
  }
  ~MpiComm() { reset(); }
  MPI_Comm get() const { return comm_; }
  bool valid() const { return comm_ != MPI_COMM_NULL; }

 private:
  void reset() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
};

/// Owns an MPI_Group.
class MpiGroup {
 public:
  explicit MpiGroup(MPI_Group g) : group_(g) {}
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;
  ~MpiGroup() {
    if (group_ != MPI_GROUP_NULL) MPI_Group_free(&group_);
  }
  MPI_Group get() const { return group_; }

 private:
  MPI_Group group_;
};

}  // namespace tawpipe::exec::host
