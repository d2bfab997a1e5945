// `tawsim collectives --topology T --op OP --sizes MIN:MAX [--ranks N]`: predicted nccl-tests
// tables for one collective on the first N GPUs of a topology.
#include <boost/program_options.hpp>

#include <charconv>
#include <cstdio>
#include <iostream>

#include "common/profile/profile.h"
#include "common/strings.h"
#include "schedules/workload.h"
#include "sim/cli/cli.h"
#include "sim/cli/file_args.h"
#include "sim/collectives_table.h"

namespace po = boost::program_options;

namespace tawpipe::cli {

int collectives_command(const std::vector<std::string>& args) {
  schedules::WorkloadSpec spec;
  std::string op = "all_reduce";
  std::string sizes = "8:16G";
  std::string profile_file;
  int ranks = 0;
  std::string nccl_algo = "auto";
  std::string protocol;
  std::string channels;
  po::options_description opts("Options");
  // clang-format off
  opts.add_options()
    ("help,h", "print this help")
    ("topology,t", po::value(&spec.topology), "topology name or YAML path [3x8-a100]")
    ("op", po::value(&op), ("collective: " + join(sim::collective_table_ops(), ", ") +
                            " [all_reduce]").c_str())
    ("sizes", po::value(&sizes), "MIN:MAX bytes, doubling, K/M/G = powers of 1024 [8:16G]")
    ("ranks", po::value(&ranks), "use the first N GPUs [all]")
    ("nccl-algo", po::value(&nccl_algo), "all_reduce algorithm as NCCL_ALGO: auto (NCCL's tuner), "
                                         "ring or tree [auto]")
    ("protocol", po::value(&protocol), "protocols as NCCL_PROTO: LL, LL128, Simple, a list, or "
                                       "^LIST for all but [NCCL's tuner]")
    ("channels", po::value(&channels), "channels as NCCL_MIN/MAX_NCHANNELS: N (exactly) or MIN:MAX "
                                       "[NCCL's choice]")
    ("set", po::value(&spec.sets)->composing(), "KEY=VALUE topology override (repeatable)")
    ("profile", po::value(&profile_file), "calibration profile (tawexec calibrate)");
  // clang-format on
  std::vector<std::string> extra;
  if (auto status = parse_file_args(args, opts, "tawsim collectives",
                                    "Usage: tawsim collectives --topology T --op OP --sizes "
                                    "MIN:MAX [--ranks N] [--nccl-algo auto|ring|tree]\n"
                                    "       [--protocol LL|LL128|Simple] [--channels N|MIN:MAX]\n\n"
                                    "Predicted nccl-tests table (size, count, time, algbw, busbw) "
                                    "of one collective.\n",
                                    extra)) {
    return *status;
  }
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "tawsim collectives: %s\n", e.to_string().c_str());
    return kExitUsage;
  };
  if (!extra.empty()) return fail(make_error("unexpected argument '" + extra.front() + "'"));
  auto w = schedules::resolve_workload(spec);
  if (!w.ok()) return fail(w.error());
  auto request = sim::parse_size_range(sizes);
  if (!request.ok()) return fail(request.error().at("--sizes", 0, 0, ""));
  request->op = op;
  request->ranks = ranks;
  if (!sim::all_reduce_algo_from_name(nccl_algo, &request->all_reduce_algo))
    return fail(make_error("--nccl-algo must be auto, ring or tree, got '" + nccl_algo + "'"));
  if (!protocol.empty() && !sim::nccl::parse_protos(protocol, &request->nccl.tuner.protos))
    return fail(make_error("--protocol must list LL, LL128 or Simple (NCCL_PROTO syntax), got '" +
                           protocol + "'"));
  if (!channels.empty()) {
    const auto colon = channels.find(':');
    const std::string lo = channels.substr(0, colon);
    const std::string hi = colon == std::string::npos ? lo : channels.substr(colon + 1);
    const auto number = [](const std::string& t) {
      int v = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return ec == std::errc() && end == t.data() + t.size() && v >= 1 && v <= 32 ? v : 0;
    };
    const int a = number(lo);
    const int b = number(hi);
    if (a == 0 || b == 0 || a > b)
      return fail(make_error("--channels must be N or MIN:MAX with 1 <= MIN <= MAX <= 32, got '" +
                             channels + "'"));
    request->nccl.tuner.min_channels = a;
    request->nccl.tuner.max_channels = b;
  }
  std::optional<profile::Profile> profile;
  if (!profile_file.empty()) {
    auto p = profile::read_profile_file(profile_file);
    if (!p.ok()) return fail(p.error());
    profile = std::move(*p);
  }
  auto rows = sim::collectives_table(w->topology, *request, profile ? &*profile : nullptr);
  if (!rows.ok()) return fail(rows.error());
  std::cout << sim::format_collectives_table(w->topology, *request, *rows);
  return kExitOk;
}

}  // namespace tawpipe::cli
