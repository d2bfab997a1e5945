// Reports: determinism (two runs give byte-identical JSON), exact JSON round trip, located read
// errors, trace-event output, and sanity of the derived figures on a generated program.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "common/model/presets.h"
#include "common/report/report.h"
#include "common/report/trace.h"
#include "schedules/schedule.h"
#include "sim/simulator.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

ir::Program small_program(const std::string& method, const topo::Topology& t) {
  schedules::ScheduleInput in;
  for (int g = 0; g < t.num_gpus(); ++g)
    in.node_of_rank.push_back(t.node_of(g));
  in.model = model::preset("llama-h1024-l48").value();
  in.train.seq_len = 1024;
  in.train.global_batch = 48;
  in.topology_name = t.name();
  in.topology_hash = t.content_hash();
  auto p = schedules::generate(method, in);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().to_string());
  return *p;
}

std::string json_of(const report::Report& r) {
  std::ostringstream s;
  report::write_report_json(r, s);
  return s.str();
}

SimOptions full_options() {
  SimOptions o;
  o.model = model::preset("llama-h1024-l48").value();
  o.record_ops = true;
  o.record_link_usage = true;
  return o;
}

TEST(Report, TwoRunsAreByteIdenticalAlsoInParallelThreads) {
  const topo::Topology t = testing::shipped("3x8-a100");
  for (const std::string method : {"tawpipe", "fsdp", "1f1b"}) {
    const ir::Program p = small_program(method, t);
    auto a = simulate(p, t, full_options());
    ASSERT_TRUE(a.ok()) << method << ": " << a.error().to_string();
    std::string b_json, c_json;
    std::thread th1([&] { b_json = json_of(*simulate(p, t, full_options())); });
    std::thread th2([&] { c_json = json_of(*simulate(p, t, full_options())); });
    th1.join();
    th2.join();
    const std::string a_json = json_of(*a);
    EXPECT_EQ(a_json, b_json) << method;
    EXPECT_EQ(a_json, c_json) << method;
  }
}

TEST(Report, FiguresAreConsistent) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const ir::Program p = small_program("tawpipe", t);
  auto r = simulate(p, t, full_options());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, "predicted");
  EXPECT_EQ(r->ranks, 24);
  EXPECT_GT(r->iteration_time, SimTime());
  EXPECT_DOUBLE_EQ(r->tokens_per_iteration, 48.0 * 1024);
  EXPECT_GT(r->mfu, 0.0);
  EXPECT_LT(r->mfu, 1.0);
  EXPECT_GE(r->hfu, r->mfu);  // recomputation counts in HFU only
  EXPECT_DOUBLE_EQ(r->peak_flops_per_second, 24 * 312e12);
  for (const report::RankStats& s : r->rank_stats) {
    EXPECT_EQ(s.compute + s.exposed_comm + s.idle, r->iteration_time);
    EXPECT_GT(s.peak_memory_bytes, 0u);
    EXPECT_GT(s.intra_node_bytes_sent, 0.0);
  }
  // TawPipe keeps weights inside nodes: NVSwitch links carry more bytes than the NICs.
  double nvs = 0.0, nic = 0.0;
  for (const report::LinkStats& l : r->links) {
    (l.link_class == "nvswitch" ? nvs : nic) +=
        l.link_class == "nvswitch" || l.link_class == "nic" ? l.bytes : 0.0;
    EXPECT_LE(l.busy, r->iteration_time);
  }
  EXPECT_GT(nvs, nic);
  std::set<std::string> names;
  for (const report::OpClassTotals& c : r->op_classes)
    names.insert(c.name);
  EXPECT_TRUE(names.count("forward") && names.count("backward") && names.count("broadcast"));
  // The records hold every op.
  std::size_t ops = 0;
  for (const ir::RankProgram& rp : p.ranks)
    ops += rp.ops.size();
  EXPECT_EQ(r->ops.size(), ops);
}

TEST(Report, JsonRoundTripIsExact) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const ir::Program p = small_program("fsdp", t);
  SimOptions o = full_options();
  o.record_ranks = {0, 9};
  auto r = simulate(p, t, o);
  ASSERT_TRUE(r.ok());
  for (const report::OpRecord& rec : r->ops)
    EXPECT_TRUE(rec.rank == 0 || rec.rank == 9);
  const std::string text = json_of(*r);
  auto back = report::read_report_json(text, "r.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, *r);
  EXPECT_EQ(json_of(*back), text);
}

TEST(Report, ReadErrorsAreLocated) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 1), 1);
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(1e9)), {}, {});
  auto r = simulate(std::move(b).finish(), t, SimOptions{});
  ASSERT_TRUE(r.ok());
  std::string text = json_of(*r);
  const auto at = text.find("\"oom\":false");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "\"oom\":0");
  auto e = report::read_report_json(text, "bad.json");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().key_path, "rank_stats[0].oom");
  EXPECT_EQ(e.error().file, "bad.json");
  EXPECT_GT(e.error().line, 1);
  auto syntax = report::read_report_json("{\"format\": ", "s.json");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().line, 1);
  std::string unknown = json_of(*r);
  unknown.replace(unknown.find("\"mfu\""), 5, "\"mfuu\"");
  auto u = report::read_report_json(unknown, "u.json");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message.find("did you mean 'mfu'"), std::string::npos)
      << u.error().to_string();
}

TEST(Trace, ChromeTraceHasOneProcessPerRankAndLinkCounters) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const ir::Program p = small_program("tawpipe", t);
  auto out = run_simulation(p, t, full_options());
  ASSERT_TRUE(out.ok());
  const auto counters = link_counter_tracks(t, out->link_usage);
  EXPECT_FALSE(counters.empty());
  std::ostringstream s;
  report::write_chrome_trace(p, out->report, counters, {}, s);
  const auto j = nlohmann::json::parse(s.str());
  std::set<int> pids;
  std::size_t complete = 0, counter_events = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") pids.insert(e.at("pid").get<int>());
    if (e.at("ph") == "X") ++complete;
    if (e.at("ph") == "C") ++counter_events;
  }
  EXPECT_EQ(pids.size(), 25u);  // 24 ranks + links
  EXPECT_GT(complete, 1000u);
  EXPECT_GT(counter_events, 0u);
  // A "memory" counter track per rank, inside the rank's process; its highest value is the
  // reported peak (GiB).
  const auto memory = memory_counter_tracks(out->memory_samples);
  ASSERT_EQ(memory.size(), 24u);
  std::ostringstream sm;
  report::write_chrome_trace(p, out->report, memory, {}, sm);
  double rank5_max = 0.0;
  std::size_t memory_events = 0;
  const auto jm = nlohmann::json::parse(sm.str());  // kept alive for the loop
  for (const auto& e : jm.at("traceEvents")) {
    if (e.at("ph").get<std::string>() != "C") continue;
    ++memory_events;
    EXPECT_EQ(e.at("name").get<std::string>(), "memory");
    if (e.at("pid").get<int>() == 5)
      rank5_max = std::max(rank5_max, e.at("args").at("GiB").get<double>());
  }
  EXPECT_GE(memory_events, 24u);
  EXPECT_NEAR(rank5_max * (1ull << 30),
              static_cast<double>(out->report.rank_stats[5].peak_memory_bytes), 1.0);
  // Keep only rank 3.
  std::ostringstream s3;
  report::TraceOptions only3;
  only3.ranks = {3};
  report::write_chrome_trace(p, out->report, {}, only3, s3);
  const auto j3 = nlohmann::json::parse(s3.str());
  for (const auto& e : j3.at("traceEvents"))
    EXPECT_EQ(e.at("pid").get<int>(), 3);
}

}  // namespace
}  // namespace tawpipe::sim
