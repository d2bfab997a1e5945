#include "exec/host/mpi_util.h"

namespace tawpipe::exec::host {

std::string mpi_error_string(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  std::string what = call;
  if (const auto paren = what.find('('); paren != std::string::npos) what.resize(paren);
  if (MPI_Error_string(code, text, &len) == MPI_SUCCESS) {
    return what + " failed: " + std::string(text, static_cast<std::size_t>(len));
  }
  return what + " failed with code " + std::to_string(code);
}

}  // namespace tawpipe::exec::host
