// tawsim: the simulator's command line. Dispatches to a sub-command (sim/cli/); user errors end
// there as one line on stderr and exit status 2 (design.md).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "verify") {
      args.erase(args.begin());
      return tawpipe::cli::verify_command(args);
    }
    if (!args.empty() && args.front() == "compare") {
      args.erase(args.begin());
      return tawpipe::cli::compare_command(args);
    }
    return tawpipe::cli::main_command(args);
  } catch (const std::exception& e) {
    // Library code reports user errors as values; reaching this is a tawpipe bug.
    std::fprintf(stderr, "tawsim: internal error: %s\n", e.what());
    return 70;
  }
}
