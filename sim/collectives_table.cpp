#include "sim/collectives_table.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "common/ir/builder.h"
#include "common/strings.h"
#include "sim/simulator.h"

namespace tawpipe::sim {
namespace {

Expected<std::uint64_t> parse_size(std::string_view text) {
  std::string_view s = text;
  std::uint64_t mult = 1;
  if (!s.empty()) {
    const char c = s.back();
    if (c == 'K' || c == 'k') mult = 1ull << 10;
    if (c == 'M' || c == 'm') mult = 1ull << 20;
    if (c == 'G' || c == 'g') mult = 1ull << 30;
    if (mult != 1) s.remove_suffix(1);
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    return make_error("bad size '" + std::string(s) + "' (expected e.g. 8, 64K, 1M, 16G)");
  // Cap at 1 TiB: far beyond any message a collective benchmark uses, and overflow-safe.
  if (v > (1ull << 40) / mult)
    return make_error("size '" + std::string(text) + "' too large (at most 1024G)");
  return v * mult;
}

ir::Program build_program(const topo::Topology& topology, const CollectiveTableRequest& req,
                          std::uint64_t bytes) {
  ir::Header h;
  h.schedule = "collectives";
  h.options["op"] = req.op;
  h.dtype = "fp32";
  h.topology = topology.name();
  h.topology_hash = topology.content_hash();
  const std::int32_t n = req.ranks;
  for (std::int32_t r = 0; r < n; ++r)
    h.placement.push_back(r);
  ir::ProgramBuilder b(h, n);
  std::vector<ir::Rank> members;
  for (std::int32_t r = 0; r < n; ++r)
    members.push_back(r);
  const ir::CommId world = b.communicator("world", members);
  for (std::int32_t r = 0; r < n; ++r) {
    const ir::BufferId buf =
        b.buffer(r, "buf", Bytes(bytes), ir::BufferRole::workspace, /*persistent=*/true);
    if (req.op == "sendrecv") {
      const ir::BufferId rbuf =
          b.buffer(r, "rbuf", Bytes(bytes), ir::BufferRole::workspace, /*persistent=*/true);
      const std::int32_t group = b.new_group();
      b.send(r, 0, (r + 1) % n, world, Bytes(bytes), buf, {}, group);
      b.recv(r, 0, (r + n - 1) % n, world, Bytes(bytes), rbuf, {}, group);
      continue;
    }
    ir::CollectiveKind kind{};
    ir::from_name(req.op, &kind);
    const bool rooted = kind == ir::CollectiveKind::broadcast || kind == ir::CollectiveKind::reduce;
    b.collective(r, 0, kind, world, rooted ? 0 : ir::kNone, Bytes(bytes), buf, buf);
  }
  return std::move(b).finish();
}

double bus_factor(const std::string& op, double n) {
  if (op == "all_reduce") return 2.0 * (n - 1.0) / n;
  if (op == "all_gather" || op == "reduce_scatter") return (n - 1.0) / n;
  return 1.0;
}

}  // namespace

const std::vector<std::string>& collective_table_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter",
                                               "broadcast",  "reduce",     "sendrecv"};
  return ops;
}

Expected<CollectiveTableRequest> parse_size_range(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos)
    return make_error("bad size range '" + std::string(text) + "' (expected MIN:MAX, e.g. 8:16G)");
  auto lo = parse_size(text.substr(0, colon));
  if (!lo.ok()) return lo.error();
  auto hi = parse_size(text.substr(colon + 1));
  if (!hi.ok()) return hi.error();
  if (*lo == 0 || *lo > *hi)
    return make_error("bad size range '" + std::string(text) + "' (need 0 < MIN <= MAX)");
  CollectiveTableRequest r;
  r.min_bytes = *lo;
  r.max_bytes = *hi;
  return r;
}

Expected<std::vector<CollectiveRow>> collectives_table(const topo::Topology& topology,
                                                       const CollectiveTableRequest& request,
                                                       const profile::Profile* profile) {
  const auto& ops = collective_table_ops();
  if (std::find(ops.begin(), ops.end(), request.op) == ops.end())
    return make_error("unknown collective '" + request.op + "'" + did_you_mean(request.op, ops));
  CollectiveTableRequest req = request;
  if (req.ranks == 0) req.ranks = topology.num_gpus();
  if (req.ranks < 2 || req.ranks > topology.num_gpus())
    return make_error("--ranks " + std::to_string(req.ranks) + " out of range [2, " +
                      std::to_string(topology.num_gpus()) + "]");
  if (req.min_bytes == 0 || req.min_bytes > req.max_bytes) return make_error("bad size range");
  SimOptions options;
  options.verify = true;            // tawsim collectives: verified before simulating
  options.verify_dataflow = false;  // untyped benchmark buffers (SimOptions::verify_dataflow)
  if (profile != nullptr) options.profile = *profile;
  options.nccl_algo = req.all_reduce_algo;
  options.nccl = req.nccl;
  std::vector<CollectiveRow> rows;
  for (std::uint64_t size = req.min_bytes; size <= req.max_bytes; size *= 2) {
    const ir::Program program = build_program(topology, req, size);
    auto out = run_simulation(program, topology, options);
    if (!out.ok()) return out.error();
    CollectiveRow row;
    row.size_bytes = size;
    row.count = size / 4;
    row.time = out->report.iteration_time;
    row.algo = out->tree_all_reduces > 0 ? AllReduceAlgo::tree : AllReduceAlgo::ring;
    row.proto = out->last_protocol;
    row.channels = out->last_channels;
    const double s = row.time.seconds();
    row.algbw_gb_per_s = s > 0.0 ? static_cast<double>(size) / s / 1e9 : 0.0;
    row.busbw_gb_per_s = row.algbw_gb_per_s * bus_factor(req.op, req.ranks);
    rows.push_back(row);
    if (size > UINT64_MAX / 2) break;
  }
  return rows;
}

std::string format_collectives_table(const topo::Topology& topology,
                                     const CollectiveTableRequest& request,
                                     const std::vector<CollectiveRow>& rows) {
  const std::int32_t n = request.ranks == 0 ? topology.num_gpus() : request.ranks;
  const bool sum =
      request.op == "all_reduce" || request.op == "reduce_scatter" || request.op == "reduce";
  const bool rooted = request.op == "broadcast" || request.op == "reduce";
  std::string out = "# tawsim collectives: " + request.op + " on " + topology.name() + ", " +
                    std::to_string(n) + " ranks (predicted, flow-level model)\n#\n";
  const bool algo = request.op == "all_reduce";
  out += "#       size         count      type   redop    root     time   algbw   busbw";
  out += algo ? "   proto  nch  algo\n" : "   proto  nch\n";
  out += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
  char line[160];
  for (const CollectiveRow& r : rows) {
    const double us = r.time.microseconds();
    std::snprintf(line, sizeof line, "%12llu  %12llu  %8s  %6s  %6d  %7.*f  %6.2f  %6.2f",
                  static_cast<unsigned long long>(r.size_bytes),
                  static_cast<unsigned long long>(r.count), "float", sum ? "sum" : "none",
                  rooted ? 0 : -1, us < 10000.0 ? 2 : 0, us, r.algbw_gb_per_s, r.busbw_gb_per_s);
    out += line;
    std::snprintf(line, sizeof line, "  %6s  %3d", nccl::name(r.proto), r.channels);
    out += line;
    if (algo) out += std::string("  ") + name(r.algo);
    out += "\n";
  }
  return out;
}

}  // namespace tawpipe::sim
