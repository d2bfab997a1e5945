// `tawsim verify FILE...`: exit 0 when every program is valid, 1 when one is invalid (the reason
// on stderr), 2 when a file cannot be read or parsed.
#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>

#include "common/ir/json.h"
#include "common/ir/verifier.h"
#include "sim/cli/cli.h"
#include "sim/cli/file_args.h"

namespace po = boost::program_options;

namespace tawpipe::cli {

int verify_command(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool quiet = false;
  po::options_description opts("Options");
  opts.add_options()("help,h", "print this help")("quiet,q", po::bool_switch(&quiet),
                                                  "print nothing for valid programs");
  if (auto status = parse_file_args(
          args, opts, "tawsim verify",
          "Usage: tawsim verify [-q] FILE.ir.json...\n\n"
          "Checks that each program is well-formed: structure, send/recv and collective\n"
          "matching, deadlock freedom, and symbolic dataflow (right shards, complete\n"
          "gradients). Exit 0 valid, 1 invalid, 2 unreadable.\n",
          files)) {
    return *status;
  }
  if (files.empty()) {
    std::fprintf(stderr, "tawsim verify: no file given (usage: tawsim verify FILE...)\n");
    return kExitUsage;
  }
  int status = kExitOk;
  for (const std::string& file : files) {
    auto program = ir::read_program_file(file);
    if (!program.ok()) {
      std::fprintf(stderr, "tawsim verify: %s\n", program.error().to_string().c_str());
      return kExitUsage;
    }
    const ir::VerifyResult r = ir::verify(*program);
    if (!r.ok) {
      std::fprintf(stderr, "%s: invalid (%s): %s\n", file.c_str(), ir::name(r.stage),
                   r.message.c_str());
      for (const std::string& d : r.details)
        std::fprintf(stderr, "  %s\n", d.c_str());
      status = kExitNegative;
      continue;
    }
    if (!quiet) {
      std::cout << fmt::format("{}: valid: {} '{}' on {} ranks, {} ops\n", file,
                               program->header.schedule, program->header.model,
                               program->num_ranks(), r.stats.total_ops);
    }
  }
  return status;
}

}  // namespace tawpipe::cli
