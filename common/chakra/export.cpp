#include "common/chakra/export.h"

#include <google/protobuf/util/delimited_message_util.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "et_def.pb.h"  // generated from common/chakra/et_def.proto

namespace tawpipe::chakra {
namespace {

namespace pb = ChakraProtoMsg;
using ir::OpKind;

void attr(pb::Node& n, const char* name, std::int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void attr32(pb::Node& n, const char* name, std::int32_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int32_val(v);
}
void attr_u64(pb::Node& n, const char* name, std::uint64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_uint64_val(v);
}
void attr_str(pb::Node& n, const char* name, const std::string& v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}
void attr_bool(pb::Node& n, const char* name, bool v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}

pb::CollectiveCommType comm_type(ir::CollectiveKind k) {
  switch (k) {
    case ir::CollectiveKind::broadcast:
      return pb::BROADCAST;
    case ir::CollectiveKind::reduce:
      return pb::REDUCE;
    case ir::CollectiveKind::all_reduce:
      return pb::ALL_REDUCE;
    case ir::CollectiveKind::all_gather:
      return pb::ALL_GATHER;
    case ir::CollectiveKind::reduce_scatter:
      return pb::REDUCE_SCATTER;
  }
  return pb::ALL_REDUCE;
}

bool exported(const ir::Op& op) {
  return op.kind != OpKind::alloc && op.kind != OpKind::free;
}

}  // namespace

std::string rank_file_name(const ir::Program& program, ir::Rank rank) {
  std::string base = program.header.schedule.empty() ? "program" : program.header.schedule;
  for (char& c : base) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return base + "." + std::to_string(rank) + ".et";
}

Expected<std::vector<RankSummary>> write_chakra(const ir::Program& program, const std::string& dir,
                                                const DurationFn& duration) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(dir + ": cannot create the directory: " + ec.message());

  // Tags: the k-th message from a to b on communicator c, numbered alike on both sides.
  std::map<std::tuple<ir::Rank, ir::Rank, ir::CommId>, std::int32_t> sent, received;
  const auto ncomms = static_cast<std::int32_t>(program.communicators.size());
  const auto tag = [&](auto& counters, ir::Rank from, ir::Rank to, ir::CommId comm) {
    return counters[{from, to, comm}]++ * std::max(ncomms, 1) + comm;
  };

  std::vector<RankSummary> out;
  for (ir::Rank r = 0; r < program.num_ranks(); ++r) {
    const ir::RankProgram& rp = program.ranks[static_cast<std::size_t>(r)];
    // Exported predecessors of op i through skipped (alloc/free) ops: ctrl (stream) and data.
    std::vector<std::vector<ir::OpIndex>> ctrl(rp.ops.size()), data(rp.ops.size());
    std::vector<ir::OpIndex> stream_last(program.streams.size(), ir::kNone);
    const auto resolve = [&](ir::OpIndex j, std::vector<ir::OpIndex>& into) {
      const auto& src = rp.ops[static_cast<std::size_t>(j)];
      if (exported(src)) {
        into.push_back(j);
        return;
      }
      for (ir::OpIndex k : ctrl[static_cast<std::size_t>(j)])
        into.push_back(k);
      for (ir::OpIndex k : data[static_cast<std::size_t>(j)])
        into.push_back(k);
    };
    const auto dedup = [](std::vector<ir::OpIndex>& v) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    };
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      const ir::Op& op = rp.ops[i];
      if (stream_last[op.stream] != ir::kNone) resolve(stream_last[op.stream], ctrl[i]);
      for (ir::OpIndex d : ir::deps(rp, op))
        resolve(d, data[i]);
      dedup(ctrl[i]);
      dedup(data[i]);
      // A data edge already implied by the stream order is kept as data (it is an explicit
      // event in the IR); drop it from ctrl so each edge appears once.
      std::vector<ir::OpIndex> only_ctrl;
      std::set_difference(ctrl[i].begin(), ctrl[i].end(), data[i].begin(), data[i].end(),
                          std::back_inserter(only_ctrl));
      ctrl[i] = std::move(only_ctrl);
      stream_last[op.stream] = static_cast<ir::OpIndex>(i);
    }

    RankSummary sum;
    sum.file = rank_file_name(program, r);
    const std::string path = (std::filesystem::path(dir) / sum.file).string();
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    if (!file) return make_error(path + ": cannot open for writing");
    pb::GlobalMetadata meta;
    meta.set_version(kSchemaVersion);
    {
      auto* a = meta.add_attr();
      a->set_name("producer");
      a->set_string_val("tawsim (tawpipe IR format " +
                        std::to_string(program.header.format_version) + "), schedule " +
                        program.header.schedule + ", model " + program.header.model + ", rank " +
                        std::to_string(r));
    }
    if (!google::protobuf::util::SerializeDelimitedToOstream(meta, &file))
      return make_error(path + ": write failed");
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      const ir::Op& op = rp.ops[i];
      if (!exported(op)) continue;
      pb::Node n;
      n.set_id(i);
      for (ir::OpIndex k : ctrl[i])
        n.add_ctrl_deps(static_cast<std::uint64_t>(k));
      for (ir::OpIndex k : data[i])
        n.add_data_deps(static_cast<std::uint64_t>(k));
      sum.ctrl_edges += n.ctrl_deps_size();
      sum.data_edges += n.data_deps_size();
      std::string kind = ir::name(op.kind);
      switch (op.kind) {
        case OpKind::compute:
        case OpKind::copy: {
          n.set_type(pb::COMP_NODE);
          double flops = 0.0, bytes = 2.0 * static_cast<double>(op.bytes);
          if (op.kind == OpKind::compute) {
            kind = ir::name(op.compute);
            bytes = 0.0;
            if (op.cost != ir::kNone) {
              const ir::Cost& c = program.costs[static_cast<std::size_t>(op.cost)];
              for (std::size_t k = 0; k < ir::kOpClassCount; ++k) {
                flops += c.flops[k];
                bytes += c.bytes[k];
              }
            }
          }
          attr(n, "num_ops", static_cast<std::int64_t>(flops));
          attr_u64(n, "tensor_size", static_cast<std::uint64_t>(bytes));
          attr_bool(n, "is_cpu_op", false);
          if (duration) n.set_duration_micros(duration(r, op));
          if (op.kind == OpKind::compute) {
            auto* a = n.add_attr();
            a->set_name("tawpipe.layers");
            a->mutable_int32_list()->add_values(op.layer_begin);
            a->mutable_int32_list()->add_values(op.layer_end);
            attr32(n, "tawpipe.sample", op.sample);
          }
          break;
        }
        case OpKind::send:
        case OpKind::recv: {
          const bool send = op.kind == OpKind::send;
          n.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
          const ir::Rank src = send ? r : op.peer, dst = send ? op.peer : r;
          attr32(n, "comm_src", src);
          attr32(n, "comm_dst", dst);
          attr32(n, "comm_tag", tag(send ? sent : received, src, dst, op.comm));
          attr(n, "comm_size", static_cast<std::int64_t>(op.bytes));
          break;
        }
        case OpKind::collective:
          n.set_type(pb::COMM_COLL_NODE);
          kind = ir::name(op.collective);
          attr(n, "comm_type", comm_type(op.collective));
          attr(n, "comm_size", static_cast<std::int64_t>(op.bytes));
          attr_str(n, "pg_name", std::to_string(op.comm));
          if (op.collective == ir::CollectiveKind::broadcast ||
              op.collective == ir::CollectiveKind::reduce) {
            attr32(n, "root", op.peer);
          }
          attr_bool(n, "is_cpu_op", false);
          break;
        case OpKind::alloc:
        case OpKind::free:
          break;
      }
      n.set_name(kind + "#" + std::to_string(i));
      attr_str(n, "tawpipe.op", kind);
      if (!google::protobuf::util::SerializeDelimitedToOstream(n, &file))
        return make_error(path + ": write failed");
      ++sum.nodes;
    }
    file.close();
    if (!file) return make_error(path + ": write failed");
    out.push_back(std::move(sum));
  }

  // ASTRA-sim's communicator-group configuration: process-group name -> member ranks.
  const std::string groups = (std::filesystem::path(dir) / "comm_group.json").string();
  std::ofstream g(groups, std::ios::trunc);
  if (!g) return make_error(groups + ": cannot open for writing");
  g << "{";
  for (std::size_t c = 0; c < program.communicators.size(); ++c) {
    g << (c ? ",\n " : "\n ") << '"' << c << "\": [";
    const auto& members = program.communicators[c].members;
    for (std::size_t k = 0; k < members.size(); ++k)
      g << (k ? ", " : "") << members[k];
    g << "]";
  }
  g << "\n}\n";
  g.close();
  if (!g) return make_error(groups + ": write failed");
  return out;
}

}  // namespace tawpipe::chakra
