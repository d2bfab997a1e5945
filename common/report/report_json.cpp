// Report JSON I/O (schema: report.h and docs in this file). Writing: one top-level key per
// line, one rank/link/op-class/op record per line, numbers in nlohmann's shortest round-trip
// form, so write -> read -> write is byte-identical. Reading: nlohmann DOM walked with a key
// path; errors are located in the text by the IR reader's scanner (common/ir/json_scan.h).
//
// Layout:
//   {"format":"tawpipe-report","format_version":1,"kind":..,"producer":..,"header":{IR header},
//    "ranks":N,"iteration_time_ps":..,"tokens_per_iteration":..,"tokens_per_second":..,
//    "model_flops":..,"hardware_flops":..,"peak_flops_per_second":..,"mfu":..,"hfu":..,
//    "rank_stats":[{"compute_ps","exposed_comm_ps","idle_ps","comm_sum_ps","peak_memory_bytes",
//                   "memory_capacity_bytes","oom","intra_node_bytes_sent",
//                   "inter_node_bytes_sent", optional "peak_memory":{"weights","gradients",
//                   "optimizer","activations","buffers","workspace","nccl","reserve"},
//                   optional "start_offset_ps" (measured, ranks on one clock)}],
//    "links":[{"name","link_class","inter_node","capacity_bytes_per_second","bytes","busy_ps",
//              "utilisation"}],
//    "op_classes":[{"name","count","total_ps","bytes","flops", optional "cpu_ps" and then
//                   "preemptions" (report.h OpClassTotals)}],
//    "profile":..,  "kernel_classes":[{"name","time_ps","share","flops","bytes","kernels"}],
//    "ops":[[rank, op, start_ps, end_ps], ...]}: an op record may go on with its core time,
//          cpu_ps, and after it the measured preemptions (report.h OpRecord):
//          [rank, op, start_ps, end_ps, cpu_ps] or [..., cpu_ps, preemptions]
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/io.h"
#include "common/ir/json_reader.h"
#include "common/report/report.h"
#include "common/strings.h"

namespace tawpipe::report {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// Non-finite doubles have no JSON form; the simulator never produces them, a measured report
// might (division by zero), so they are written as 0 rather than breaking the file.
double finite(double v) {
  return std::isfinite(v) ? v : 0.0;
}

ojson header_json(const ir::Header& h) {
  ojson j;
  j["schedule"] = h.schedule;
  ojson opts = ojson::object();
  for (const auto& [k, v] : h.options)
    opts[k] = v;
  j["options"] = opts;
  j["model"] = h.model;
  j["layers"] = h.layers;
  j["model_params"] = h.model_params;
  j["seq_len"] = h.seq_len;
  j["micro_batch_size"] = h.micro_batch_size;
  j["micro_batches"] = h.micro_batches;
  j["global_batch"] = h.global_batch;
  j["dtype"] = h.dtype;
  j["recompute"] = h.recompute;
  j["topology"] = h.topology;
  j["topology_hash"] = h.topology_hash;
  j["placement"] = h.placement;
  return j;
}

using ir::detail::ReadFailure;

class Reader : public ir::detail::JsonReader {
 public:
  using JsonReader::JsonReader;

  SimTime time(const json& v) {
    return SimTime::ps(integer(v, 0, std::numeric_limits<std::int64_t>::max()));
  }
  // Field helpers: `f(obj, "k", reader)` with the path pointing at the field.
  template <class F>
  auto field(const json& obj, const char* k, F read) {
    auto s = key(k);
    return read(obj.at(k));
  }

  Report report(const json& root);
};

Report Reader::report(const json& root) {
  known_keys(root, {"format",
                    "format_version",
                    "kind",
                    "producer",
                    "header",
                    "ranks",
                    "iteration_time_ps",
                    "tokens_per_iteration",
                    "tokens_per_second",
                    "model_flops",
                    "hardware_flops",
                    "peak_flops_per_second",
                    "mfu",
                    "hfu",
                    "rank_stats",
                    "links",
                    "op_classes",
                    "profile",
                    "kernel_classes",
                    "ops"});
  const auto str = [&](const json& v) { return string(v); };
  const auto num = [&](const json& v) { return real(v); };
  const auto tim = [&](const json& v) { return time(v); };
  Report r;
  if (field(root, "format", str) != "tawpipe-report") {
    auto s = key("format");
    fail("not a tawpipe report (format must be \"tawpipe-report\")");
  }
  r.format_version = static_cast<int>(
      field(root, "format_version", [&](const json& v) { return integer(v, 0, 1000000); }));
  if (r.format_version != kReportFormatVersion) {
    auto s = key("format_version");
    fail("unsupported report format_version " + std::to_string(r.format_version) +
         " (this tawpipe reads " + std::to_string(kReportFormatVersion) + ")");
  }
  r.kind = field(root, "kind", str);
  r.producer = field(root, "producer", str);
  {
    auto s = key("header");
    r.header = header(root.at("header"));
  }
  r.ranks = static_cast<std::int32_t>(
      field(root, "ranks", [&](const json& v) { return integer(v, 0, 1 << 30); }));
  r.iteration_time = field(root, "iteration_time_ps", tim);
  r.tokens_per_iteration = field(root, "tokens_per_iteration", num);
  r.tokens_per_second = field(root, "tokens_per_second", num);
  r.model_flops = field(root, "model_flops", num);
  r.hardware_flops = field(root, "hardware_flops", num);
  r.peak_flops_per_second = field(root, "peak_flops_per_second", num);
  r.mfu = field(root, "mfu", num);
  r.hfu = field(root, "hfu", num);
  {
    auto s = key("rank_stats");
    const json& a = array(root.at("rank_stats"));
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto s2 = index(i);
      const json& o = a[i];
      known_keys(o, {"compute_ps", "exposed_comm_ps", "idle_ps", "comm_sum_ps", "peak_memory_bytes",
                     "memory_capacity_bytes", "oom", "intra_node_bytes_sent",
                     "inter_node_bytes_sent", "peak_memory", "start_offset_ps"});
      RankStats st;
      if (o.contains("peak_memory")) {  // optional: predicted reports only
        auto s3 = key("peak_memory");
        const json& m = o.at("peak_memory");
        exact_keys(m, {"weights", "gradients", "optimizer", "activations", "buffers", "workspace",
                       "nccl", "reserve"});
        for (std::size_t k = 0; k < std::size(kMemoryBytesFields); ++k)
          memory_field(st.peak_memory, k) =
              field(m, kMemoryBytesFields[k], [&](const json& v) { return u64(v); });
      }
      st.compute = field(o, "compute_ps", tim);
      st.exposed_comm = field(o, "exposed_comm_ps", tim);
      st.idle = field(o, "idle_ps", tim);
      st.comm_sum = field(o, "comm_sum_ps", tim);
      st.peak_memory_bytes = field(o, "peak_memory_bytes", [&](const json& v) { return u64(v); });
      st.memory_capacity_bytes =
          field(o, "memory_capacity_bytes", [&](const json& v) { return u64(v); });
      st.oom = field(o, "oom", [&](const json& v) { return boolean(v); });
      st.intra_node_bytes_sent = field(o, "intra_node_bytes_sent", num);
      st.inter_node_bytes_sent = field(o, "inter_node_bytes_sent", num);
      if (o.contains("start_offset_ps"))  // optional: measured reports of ranks on one clock
        st.start_offset = field(o, "start_offset_ps", tim);
      r.rank_stats.push_back(st);
    }
  }
  {
    auto s = key("links");
    const json& a = array(root.at("links"));
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto s2 = index(i);
      const json& o = a[i];
      exact_keys(o, {"name", "link_class", "inter_node", "capacity_bytes_per_second", "bytes",
                     "busy_ps", "utilisation"});
      LinkStats l;
      l.name = field(o, "name", str);
      l.link_class = field(o, "link_class", str);
      l.inter_node = field(o, "inter_node", [&](const json& v) { return boolean(v); });
      l.capacity_bytes_per_second = field(o, "capacity_bytes_per_second", num);
      l.bytes = field(o, "bytes", num);
      l.busy = field(o, "busy_ps", tim);
      l.utilisation = field(o, "utilisation", num);
      r.links.push_back(std::move(l));
    }
  }
  {
    auto s = key("op_classes");
    const json& a = array(root.at("op_classes"));
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto s2 = index(i);
      const json& o = a[i];
      if (o.is_object() && o.contains("preemptions")) {
        exact_keys(o, {"name", "count", "total_ps", "bytes", "flops", "cpu_ps", "preemptions"});
      } else if (o.is_object() && o.contains("cpu_ps")) {
        exact_keys(o, {"name", "count", "total_ps", "bytes", "flops", "cpu_ps"});
      } else {
        exact_keys(o, {"name", "count", "total_ps", "bytes", "flops"});
      }
      OpClassTotals t;
      t.name = field(o, "name", str);
      t.count = field(o, "count", [&](const json& v) {
        return integer(v, 0, std::numeric_limits<std::int64_t>::max());
      });
      t.total = field(o, "total_ps", tim);
      t.bytes = field(o, "bytes", num);
      t.flops = field(o, "flops", num);
      if (o.contains("cpu_ps")) t.cpu = field(o, "cpu_ps", tim);
      if (o.contains("preemptions")) {
        t.preemptions = field(o, "preemptions", [&](const json& v) {
          return integer(v, 0, std::numeric_limits<std::int64_t>::max());
        });
      }
      r.op_classes.push_back(std::move(t));
    }
  }
  if (root.contains("profile")) r.profile = field(root, "profile", str);
  if (root.contains("kernel_classes")) {
    auto s = key("kernel_classes");
    const json& a = array(root.at("kernel_classes"));
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto s2 = index(i);
      const json& o = a[i];
      exact_keys(o, {"name", "time_ps", "share", "flops", "bytes", "kernels"});
      KernelClassTotals t;
      t.name = field(o, "name", str);
      t.time = field(o, "time_ps", tim);
      t.share = field(o, "share", num);
      t.flops = field(o, "flops", num);
      t.bytes = field(o, "bytes", num);
      t.kernels = field(o, "kernels", [&](const json& v) {
        return integer(v, 0, std::numeric_limits<std::int64_t>::max());
      });
      r.kernel_classes.push_back(std::move(t));
    }
  }
  {
    auto s = key("ops");
    const json& a = array(root.at("ops"));
    r.ops.reserve(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto s2 = index(i);
      const json& row = array(a[i]);
      if (row.size() < 4 || row.size() > 6)
        fail("an op record is [rank, op, start_ps, end_ps] and optionally cpu_ps, preemptions");
      OpRecord rec;
      {
        auto s3 = index(0);
        rec.rank = static_cast<ir::Rank>(integer(row[0], 0, r.ranks - 1));
      }
      {
        auto s3 = index(1);
        rec.op =
            static_cast<ir::OpIndex>(integer(row[1], 0, std::numeric_limits<std::int32_t>::max()));
      }
      {
        auto s3 = index(2);
        rec.start = time(row[2]);
      }
      {
        auto s3 = index(3);
        rec.end = time(row[3]);
        if (rec.end < rec.start) fail("op ends before it starts");
      }
      if (row.size() > 4) {
        auto s3 = index(4);
        rec.cpu = time(row[4]);
      }
      if (row.size() > 5) {
        auto s3 = index(5);
        rec.preemptions = integer(row[5], 0, std::numeric_limits<std::int64_t>::max());
      }
      r.ops.push_back(rec);
    }
  }
  return r;
}

}  // namespace

void write_report_json(const Report& r, std::ostream& out) {
  const auto line = [&](const char* k, const ojson& v, bool last = false) {
    out << ojson(k).dump() << ':' << v.dump() << (last ? "\n" : ",\n");
  };
  out << "{\"format\":\"tawpipe-report\",\n";
  line("format_version", r.format_version);
  line("kind", r.kind);
  line("producer", r.producer);
  line("header", header_json(r.header));
  line("ranks", r.ranks);
  line("iteration_time_ps", r.iteration_time.picoseconds());
  line("tokens_per_iteration", finite(r.tokens_per_iteration));
  line("tokens_per_second", finite(r.tokens_per_second));
  line("model_flops", finite(r.model_flops));
  line("hardware_flops", finite(r.hardware_flops));
  line("peak_flops_per_second", finite(r.peak_flops_per_second));
  line("mfu", finite(r.mfu));
  line("hfu", finite(r.hfu));
  const auto rows = [&](const char* k, std::size_t n, auto row, bool last = false) {
    out << ojson(k).dump() << ":[";
    for (std::size_t i = 0; i < n; ++i)
      out << (i == 0 ? "\n" : ",\n") << row(i).dump();
    out << (last ? "]\n" : "],\n");
  };
  rows("rank_stats", r.rank_stats.size(), [&](std::size_t i) {
    const RankStats& s = r.rank_stats[i];
    ojson o;
    o["compute_ps"] = s.compute.picoseconds();
    o["exposed_comm_ps"] = s.exposed_comm.picoseconds();
    o["idle_ps"] = s.idle.picoseconds();
    o["comm_sum_ps"] = s.comm_sum.picoseconds();
    o["peak_memory_bytes"] = s.peak_memory_bytes;
    o["memory_capacity_bytes"] = s.memory_capacity_bytes;
    o["oom"] = s.oom;
    o["intra_node_bytes_sent"] = finite(s.intra_node_bytes_sent);
    o["inter_node_bytes_sent"] = finite(s.inter_node_bytes_sent);
    if (s.peak_memory.total() > 0) {
      ojson m;
      for (std::size_t k = 0; k < std::size(kMemoryBytesFields); ++k)
        m[kMemoryBytesFields[k]] = memory_field(s.peak_memory, k);
      o["peak_memory"] = std::move(m);
    }
    if (s.start_offset) o["start_offset_ps"] = s.start_offset->picoseconds();
    return o;
  });
  rows("links", r.links.size(), [&](std::size_t i) {
    const LinkStats& l = r.links[i];
    ojson o;
    o["name"] = l.name;
    o["link_class"] = l.link_class;
    o["inter_node"] = l.inter_node;
    o["capacity_bytes_per_second"] = finite(l.capacity_bytes_per_second);
    o["bytes"] = finite(l.bytes);
    o["busy_ps"] = l.busy.picoseconds();
    o["utilisation"] = finite(l.utilisation);
    return o;
  });
  rows("op_classes", r.op_classes.size(), [&](std::size_t i) {
    const OpClassTotals& t = r.op_classes[i];
    ojson o;
    o["name"] = t.name;
    o["count"] = t.count;
    o["total_ps"] = t.total.picoseconds();
    o["bytes"] = finite(t.bytes);
    o["flops"] = finite(t.flops);
    if (t.cpu) {
      o["cpu_ps"] = t.cpu->picoseconds();
      if (t.preemptions >= 0) o["preemptions"] = t.preemptions;
    }
    return o;
  });
  line("profile", r.profile);
  rows("kernel_classes", r.kernel_classes.size(), [&](std::size_t i) {
    const KernelClassTotals& t = r.kernel_classes[i];
    ojson o;
    o["name"] = t.name;
    o["time_ps"] = t.time.picoseconds();
    o["share"] = finite(t.share);
    o["flops"] = finite(t.flops);
    o["bytes"] = finite(t.bytes);
    o["kernels"] = t.kernels;
    return o;
  });
  out << "\"ops\":[";
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    const OpRecord& o = r.ops[i];
    out << (i == 0 ? "\n[" : ",\n[") << o.rank << ',' << o.op << ',' << o.start.picoseconds() << ','
        << o.end.picoseconds();
    if (o.cpu) {
      out << ',' << o.cpu->picoseconds();
      if (o.preemptions >= 0) out << ',' << o.preemptions;
    }
    out << ']';
  }
  out << "]}\n";
}

Expected<Report> read_report_json(std::string_view text, std::string_view file_name) {
  try {
    Reader reader(text, file_name);
    return reader.report(reader.parse());
  } catch (const ReadFailure& f) {
    return f.error;
  } catch (const std::exception& e) {  // e.g. bad_alloc on absurd input: still a value
    Error err = make_error(std::string("cannot read report: ") + e.what());
    err.file = std::string(file_name);
    return err;
  }
}

Expected<Report> read_report_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return text.error();
  return read_report_json(*text, path);
}

}  // namespace tawpipe::report
