#include "schedule_test_util.h"

#include <gtest/gtest.h>

#include "common/model/presets.h"

namespace tawpipe::schedules::testing {

ScheduleInput small_input(std::int32_t nodes, std::int32_t gpus, std::int32_t layers,
                          std::int32_t micro_batches, std::int32_t dp,
                          std::map<std::string, std::string> options) {
  ScheduleInput in;
  in.node_of_rank = uniform_nodes(nodes, gpus);
  auto m = model::preset("tiny");
  EXPECT_TRUE(m.ok());
  in.model = *m;
  in.model.layers = layers;
  in.train.seq_len = 256;
  in.train.micro_batch_size = 1;
  in.train.micro_batches = micro_batches;
  in.train.global_batch = 0;
  in.dp = dp;
  in.options = std::move(options);
  in.topology_name = std::to_string(nodes) + "x" + std::to_string(gpus);
  in.topology_hash = "test";
  return in;
}

ir::Program must_generate(std::string_view method, const ScheduleInput& input) {
  auto p = generate(method, input);
  if (!p.ok()) {
    ADD_FAILURE() << method << ": " << p.error().message;
    return {};
  }
  return std::move(p).value();
}

P2pTraffic p2p_traffic(const ir::Program& p, const std::vector<std::int32_t>& node_of_rank) {
  P2pTraffic t;
  for (ir::Rank r = 0; r < p.num_ranks(); ++r) {
    for (const ir::Op& op : p.ranks[static_cast<std::size_t>(r)].ops) {
      if (op.kind != ir::OpKind::send) continue;
      ++t.messages;
      if (node_of_rank[static_cast<std::size_t>(r)] ==
          node_of_rank[static_cast<std::size_t>(op.peer)]) {
        t.intra += op.bytes;
      } else {
        t.inter += op.bytes;
      }
    }
  }
  return t;
}

ir::Program without_op(const ir::Program& p, ir::Rank rank, ir::OpIndex victim) {
  ir::Program out = p;
  ir::RankProgram& rp = out.ranks[static_cast<std::size_t>(rank)];
  const ir::RankProgram& src = p.ranks[static_cast<std::size_t>(rank)];
  rp.ops.clear();
  rp.dep_pool.clear();
  rp.buffer_pool.clear();
  for (ir::OpIndex i = 0; i < static_cast<ir::OpIndex>(src.ops.size()); ++i) {
    if (i == victim) continue;
    ir::Op op = src.ops[static_cast<std::size_t>(i)];
    const auto d = ir::deps(src, op);
    const auto r = ir::reads(src, op);
    const auto w = ir::writes(src, op);
    op.deps_offset = static_cast<std::uint32_t>(rp.dep_pool.size());
    op.deps_count = 0;
    for (ir::OpIndex dep : d) {
      if (dep == victim) continue;
      rp.dep_pool.push_back(dep > victim ? dep - 1 : dep);
      ++op.deps_count;
    }
    op.buffers_offset = static_cast<std::uint32_t>(rp.buffer_pool.size());
    rp.buffer_pool.insert(rp.buffer_pool.end(), r.begin(), r.end());
    rp.buffer_pool.insert(rp.buffer_pool.end(), w.begin(), w.end());
    rp.ops.push_back(op);
  }
  return out;
}

}  // namespace tawpipe::schedules::testing
