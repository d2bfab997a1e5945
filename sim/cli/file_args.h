/// \file
/// Argument parsing shared by the sub-commands that take `[options] FILE...`.
#pragma once

#include <boost/program_options.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tawpipe::cli {

/// Parses `args` as `opts` plus positional files into `files`. Returns an exit status when the
/// command should stop now: 0 after printing `usage` and `opts` for --help (which `opts` must
/// declare), 2 after printing a one-line error naming `command`; std::nullopt to go on.
std::optional<int> parse_file_args(const std::vector<std::string>& args,
                                   const boost::program_options::options_description& opts,
                                   const std::string& command, const std::string& usage,
                                   std::vector<std::string>& files);

}  // namespace tawpipe::cli
