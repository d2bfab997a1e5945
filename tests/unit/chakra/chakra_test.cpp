// Chakra export round trip (issue 16): every rank's file is read back with the parser generated
// from common/chakra/et_def.proto and compared with the IR it came from: one GlobalMetadata of
// schema version 0.0.4, one node per op that is not alloc/free, node types, FLOPs, bytes,
// collective types, communicators and P2P tags, and the dependency graph: op a must precede op b
// in the Chakra graph exactly when it does in the IR (through stream order and deps, alloc/free
// ops included), compared as transitive closures over the exported ops.
#include <gtest/gtest.h>

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/chakra/export.h"
#include "common/model/presets.h"
#include "et_def.pb.h"  // generated from common/chakra/et_def.proto
#include "schedules/schedule.h"

namespace tawpipe::chakra {
namespace {

namespace pb = ChakraProtoMsg;

struct Trace {
  pb::GlobalMetadata meta;
  std::vector<pb::Node> nodes;
};

Trace read_trace(const std::string& path) {
  Trace t;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  google::protobuf::io::IstreamInputStream stream(&in);
  bool eof = false;
  EXPECT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&t.meta, &stream, &eof));
  while (true) {
    pb::Node n;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &stream, &eof)) break;
    t.nodes.push_back(std::move(n));
  }
  EXPECT_TRUE(eof) << path << ": trailing bytes that are not a node";
  return t;
}

ir::Program program(const char* schedule) {
  schedules::ScheduleInput in;
  in.node_of_rank = schedules::uniform_nodes(2, 2);
  in.model = *model::preset("tiny");
  in.train.seq_len = 64;
  in.train.micro_batch_size = 1;
  in.train.micro_batches = 2;
  in.train.global_batch = 0;
  auto p = schedules::generate(schedule, in);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return *p;
}

const pb::AttributeProto* find_attr(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

/// closure[i][j]: op j is reachable from op i (j after i) through `preds`.
std::vector<std::vector<bool>> closure(const std::vector<std::vector<std::int64_t>>& preds) {
  const std::size_t n = preds.size();
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));  // before[b][a]: a < b
  for (std::size_t b = 0; b < n; ++b) {
    for (std::int64_t a : preds[b]) {
      const auto as = static_cast<std::size_t>(a);
      before[b][as] = true;
      for (std::size_t k = 0; k < n; ++k)
        if (before[as][k]) before[b][k] = true;
    }
  }
  return before;
}

void round_trip(const char* schedule) {
  SCOPED_TRACE(schedule);
  const ir::Program p = program(schedule);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tawpipe_chakra_" + std::string(schedule)))
          .string();
  std::filesystem::remove_all(dir);
  auto written = write_chakra(p, dir, [](ir::Rank, const ir::Op&) { return std::uint64_t{7}; });
  ASSERT_TRUE(written.ok()) << written.error().message;
  ASSERT_EQ(written->size(), static_cast<std::size_t>(p.num_ranks()));
  // P2P tags seen per (from, to, comm) on each side, in order.
  std::map<std::tuple<int, int, int>, std::vector<std::int32_t>> send_tags, recv_tags;
  for (ir::Rank r = 0; r < p.num_ranks(); ++r) {
    const ir::RankProgram& rp = p.ranks[static_cast<std::size_t>(r)];
    const Trace t = read_trace(dir + "/" + rank_file_name(p, r));
    EXPECT_EQ(t.meta.version(), "0.0.4");
    const RankSummary& sum = (*written)[static_cast<std::size_t>(r)];
    std::int64_t exported = 0, ctrl = 0, data = 0;
    for (const ir::Op& op : rp.ops)
      exported += op.kind != ir::OpKind::alloc && op.kind != ir::OpKind::free;
    ASSERT_EQ(static_cast<std::int64_t>(t.nodes.size()), exported);
    EXPECT_EQ(sum.nodes, exported);
    // IR precedence: stream predecessor + deps over all ops.
    const std::size_t n = rp.ops.size();
    std::vector<std::vector<std::int64_t>> ir_preds(n), et_preds(n);
    std::vector<std::int64_t> last(p.streams.size(), -1);
    for (std::size_t i = 0; i < n; ++i) {
      const ir::Op& op = rp.ops[i];
      if (last[op.stream] >= 0) ir_preds[i].push_back(last[op.stream]);
      for (ir::OpIndex d : ir::deps(rp, op))
        ir_preds[i].push_back(d);
      last[op.stream] = static_cast<std::int64_t>(i);
    }
    std::vector<bool> is_node(n, false);
    for (const pb::Node& node : t.nodes) {
      ASSERT_LT(node.id(), n);
      const ir::Op& op = rp.ops[node.id()];
      is_node[node.id()] = true;
      for (auto d : node.ctrl_deps())
        et_preds[node.id()].push_back(static_cast<std::int64_t>(d));
      for (auto d : node.data_deps())
        et_preds[node.id()].push_back(static_cast<std::int64_t>(d));
      ctrl += node.ctrl_deps_size();
      data += node.data_deps_size();
      switch (op.kind) {
        case ir::OpKind::compute: {
          EXPECT_EQ(node.type(), pb::COMP_NODE);
          const ir::Cost& c = p.costs[static_cast<std::size_t>(op.cost)];
          const double flops = c.flops[0] + c.flops[1] + c.flops[2];
          const double bytes = c.bytes[0] + c.bytes[1] + c.bytes[2];
          ASSERT_NE(find_attr(node, "num_ops"), nullptr);
          EXPECT_EQ(find_attr(node, "num_ops")->int64_val(), static_cast<std::int64_t>(flops));
          EXPECT_EQ(find_attr(node, "tensor_size")->uint64_val(),
                    static_cast<std::uint64_t>(bytes));
          EXPECT_EQ(find_attr(node, "tawpipe.op")->string_val(), ir::name(op.compute));
          EXPECT_EQ(node.duration_micros(), 7u);
          break;
        }
        case ir::OpKind::send:
        case ir::OpKind::recv: {
          const bool send = op.kind == ir::OpKind::send;
          EXPECT_EQ(node.type(), send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
          EXPECT_EQ(find_attr(node, "comm_size")->int64_val(), static_cast<std::int64_t>(op.bytes));
          const int src = find_attr(node, "comm_src")->int32_val();
          const int dst = find_attr(node, "comm_dst")->int32_val();
          EXPECT_EQ(send ? src : dst, r);
          EXPECT_EQ(send ? dst : src, op.peer);
          (send ? send_tags : recv_tags)[{src, dst, op.comm}].push_back(
              find_attr(node, "comm_tag")->int32_val());
          break;
        }
        case ir::OpKind::collective: {
          EXPECT_EQ(node.type(), pb::COMM_COLL_NODE);
          EXPECT_EQ(find_attr(node, "comm_size")->int64_val(), static_cast<std::int64_t>(op.bytes));
          EXPECT_EQ(find_attr(node, "pg_name")->string_val(), std::to_string(op.comm));
          const auto type =
              static_cast<pb::CollectiveCommType>(find_attr(node, "comm_type")->int64_val());
          EXPECT_EQ(pb::CollectiveCommType_Name(type),
                    op.collective == ir::CollectiveKind::all_reduce   ? "ALL_REDUCE"
                    : op.collective == ir::CollectiveKind::broadcast  ? "BROADCAST"
                    : op.collective == ir::CollectiveKind::reduce     ? "REDUCE"
                    : op.collective == ir::CollectiveKind::all_gather ? "ALL_GATHER"
                                                                      : "REDUCE_SCATTER");
          break;
        }
        default:
          EXPECT_EQ(node.type(), pb::COMP_NODE);
      }
    }
    EXPECT_EQ(sum.ctrl_edges, ctrl);
    EXPECT_EQ(sum.data_edges, data);
    const auto want = closure(ir_preds);
    const auto have = closure(et_preds);
    for (std::size_t b = 0; b < n; ++b) {
      if (!is_node[b]) continue;
      for (std::size_t a = 0; a < n; ++a) {
        if (!is_node[a]) continue;
        EXPECT_EQ(have[b][a], want[b][a]) << "rank " << r << ": op " << a << " before op " << b;
      }
    }
  }
  EXPECT_EQ(send_tags, recv_tags);
  EXPECT_TRUE(std::filesystem::exists(dir + "/comm_group.json"));
  std::filesystem::remove_all(dir);
}

TEST(Chakra, RoundTripTawpipe) {
  round_trip("tawpipe");
}

TEST(Chakra, RoundTripFsdpAndZeroBubble) {
  round_trip("fsdp");
  round_trip("zb1");
}

}  // namespace
}  // namespace tawpipe::chakra
