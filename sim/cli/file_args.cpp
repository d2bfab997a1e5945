#include "sim/cli/file_args.h"

#include <cstdio>
#include <iostream>

#include "sim/cli/cli.h"

namespace po = boost::program_options;

namespace tawpipe::cli {

std::optional<int> parse_file_args(const std::vector<std::string>& args,
                                   const po::options_description& opts, const std::string& command,
                                   const std::string& usage, std::vector<std::string>& files) {
  po::options_description hidden;
  hidden.add_options()("file", po::value(&files));
  po::positional_options_description pos;
  pos.add("file", -1);
  po::options_description all;
  all.add(opts).add(hidden);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", command.c_str(), e.what(), command.c_str());
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << usage << "\n" << opts;
    return kExitOk;
  }
  return std::nullopt;
}

}  // namespace tawpipe::cli
