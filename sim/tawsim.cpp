// tawsim: the simulator's command line. Dispatches to a sub-command (sim/cli/); user errors end
// there as one line on stderr and exit status 2 (design.md).
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "sim/cli/cli.h"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    using Command = int (*)(const std::vector<std::string>&);
    const std::pair<const char*, Command> commands[] = {
        {"verify", tawpipe::cli::verify_command},
        {"compare", tawpipe::cli::compare_command},
        {"collectives", tawpipe::cli::collectives_command},
    };
    for (const auto& [name, command] : commands) {
      if (!args.empty() && args.front() == name) {
        args.erase(args.begin());
        return command(args);
      }
    }
    return tawpipe::cli::main_command(args);
  } catch (const std::exception& e) {
    // Library code reports user errors as values; reaching this is a tawpipe bug.
    std::fprintf(stderr, "tawsim: internal error: %s\n", e.what());
    return 70;
  }
}
