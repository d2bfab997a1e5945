#include "common/report/trace.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace tawpipe::report {
namespace {

std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump();
}

// Picoseconds as microseconds with six decimals, exactly (integer arithmetic).
std::string micros(SimTime t) {
  const std::int64_t ps = t.picoseconds();
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%lld.%06lld", ps < 0 ? "-" : "",
                static_cast<long long>((ps < 0 ? -ps : ps) / 1000000),
                static_cast<long long>((ps < 0 ? -ps : ps) % 1000000));
  return buf;
}

std::string number(double v) {
  return nlohmann::json(v).dump();
}

std::string op_args(const ir::Program& program, const OpRecord& rec) {
  const ir::Op& op =
      program.ranks[static_cast<std::size_t>(rec.rank)].ops[static_cast<std::size_t>(rec.op)];
  std::string a = "{\"op\":" + std::to_string(rec.op);
  // The op's core time (CPU runs): its thread's CPU time measured, or the core work predicted.
  if (rec.cpu) a += ",\"cpu_us\":" + micros(*rec.cpu);
  if (rec.preemptions >= 0) a += ",\"preemptions\":" + std::to_string(rec.preemptions);
  switch (op.kind) {
    case ir::OpKind::compute: {
      a += ",\"layers\":\"" + std::to_string(op.layer_begin) + ".." + std::to_string(op.layer_end) +
           "\",\"micro_batch\":" + std::to_string(op.sample);
      if (op.cost != ir::kNone) {
        const ir::Cost& c = program.costs[static_cast<std::size_t>(op.cost)];
        a += ",\"flops\":" + number(c.flops[0] + c.flops[1] + c.flops[2]) +
             ",\"bytes\":" + number(c.bytes[0] + c.bytes[1] + c.bytes[2]);
      }
      break;
    }
    case ir::OpKind::send:
    case ir::OpKind::recv:
    case ir::OpKind::collective:
      a += ",\"bytes\":" + std::to_string(op.bytes);
      if (op.peer != ir::kNone)
        a += std::string(op.kind == ir::OpKind::collective ? ",\"root\":" : ",\"peer\":") +
             std::to_string(op.peer);
      if (op.comm != ir::kNone)
        a += ",\"comm\":" +
             json_string(program.communicators[static_cast<std::size_t>(op.comm)].name);
      break;
    case ir::OpKind::copy:
      a += ",\"bytes\":" + std::to_string(op.bytes);
      break;
    default:
      break;
  }
  return a + "}";
}

const char* op_name(const ir::Op& op) {
  switch (op.kind) {
    case ir::OpKind::compute:
      return ir::name(op.compute);
    case ir::OpKind::collective:
      return ir::name(op.collective);
    default:
      return ir::name(op.kind);
  }
}

}  // namespace

void write_chrome_trace(const ir::Program& program, const Report& report,
                        const std::vector<CounterTrack>& counters, const TraceOptions& options,
                        std::ostream& out) {
  std::vector<bool> keep(program.ranks.size(), options.ranks.empty());
  for (ir::Rank r : options.ranks) {
    if (r >= 0 && static_cast<std::size_t>(r) < keep.size())
      keep[static_cast<std::size_t>(r)] = true;
  }
  std::vector<bool> present(program.ranks.size(), false);
  for (const OpRecord& rec : report.ops)
    present[static_cast<std::size_t>(rec.rank)] = true;
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  const auto event = [&](const std::string& e) {
    out << (first ? "" : ",\n") << e;
    first = false;
  };
  const auto& placement = program.header.placement;
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    if (!keep[r] || !present[r]) continue;
    const std::string pid = std::to_string(r);
    std::string pname = "rank " + pid;
    if (r < placement.size()) pname += " (gpu " + std::to_string(placement[r]) + ")";
    event("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"args\":{\"name\":" + json_string(pname) + "}}");
    event("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
          ",\"args\":{\"sort_index\":" + pid + "}}");
    for (std::size_t s = 0; s < program.streams.size(); ++s)
      event("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" +
            std::to_string(s) + ",\"args\":{\"name\":" + json_string(program.streams[s]) + "}}");
  }
  for (const OpRecord& rec : report.ops) {
    if (!keep[static_cast<std::size_t>(rec.rank)]) continue;
    const ir::Op& op =
        program.ranks[static_cast<std::size_t>(rec.rank)].ops[static_cast<std::size_t>(rec.op)];
    if (op.kind == ir::OpKind::alloc || op.kind == ir::OpKind::free) continue;
    event(std::string("{\"name\":\"") + op_name(op) +
          "\",\"ph\":\"X\",\"pid\":" + std::to_string(rec.rank) +
          ",\"tid\":" + std::to_string(op.stream) + ",\"ts\":" + micros(rec.start) +
          ",\"dur\":" + micros(rec.end - rec.start) + ",\"args\":" + op_args(program, rec) + "}");
  }
  const std::string links_pid = std::to_string(program.ranks.size());
  bool links_named = false;
  for (const CounterTrack& c : counters) {
    std::string pid = links_pid;
    if (c.rank != ir::kNone) {
      const auto r = static_cast<std::size_t>(c.rank);
      if (r >= keep.size() || !keep[r] || !present[r]) continue;
      pid = std::to_string(r);
    } else if (!links_named) {
      event("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + links_pid +
            ",\"args\":{\"name\":\"links\"}}");
      links_named = true;
    }
    const std::string head =
        "{\"name\":" + json_string(c.name) + ",\"ph\":\"C\",\"pid\":" + pid + ",\"ts\":";
    const std::string unit = json_string(c.unit.empty() ? std::string("value") : c.unit);
    for (const auto& [t, v] : c.points)
      event(head + micros(t) + ",\"args\":{" + unit + ":" + number(v) + "}}");
  }
  out << "\n]}\n";
}

}  // namespace tawpipe::report
