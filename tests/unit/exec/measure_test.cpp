// The measured report (exec/measure.h): ranks on one clock get their iteration start offsets, which
// survive the report's JSON round trip; ranks on separate clocks get none.
#include <sstream>

#include <gtest/gtest.h>

#include "common/ir/builder.h"
#include "common/model/presets.h"
#include "common/report/report.h"
#include "exec/measure.h"

namespace tawpipe::exec {
namespace {

/// Two ranks, one accumulate each (op 0).
ir::Program two_ranks() {
  ir::ProgramBuilder b(ir::Header{}, 2);
  for (ir::Rank r = 0; r < 2; ++r) {
    const ir::BufferId x = b.buffer(r, "x", Bytes(64), ir::BufferRole::activation, true);
    b.compute(r, 0, ir::ComputeKind::accumulate, 0, 1, ir::kNone, ir::kNone, {x}, {x});
  }
  return std::move(b).finish();
}

/// Rank 0 began at 5000 ns, rank 1 at 2000 ns (the earlier one) on the same clock; each ran its
/// op from 100 to 400 ns after its own start.
Measurement measurement(bool shared_clock) {
  Measurement m;
  for (Nanos begin : {Nanos{5000}, Nanos{2000}}) {
    IterationRecord rec;
    rec.begin = begin;
    rec.end = begin + 400;
    rec.ops.push_back(OpTiming{0, 100, 400});
    m.ranks.push_back(rec);
  }
  m.mean_iteration_seconds = 400e-9;
  m.producer = "test";
  m.shared_clock = shared_clock;
  return m;
}

TEST(MeasuredReport, RanksOnOneClockGetTheirStartOffsets) {
  const ir::Program p = two_ranks();
  const auto model = model::preset("cpu-h256").value();
  const report::Report r = measured_report(p, model, measurement(true));
  ASSERT_EQ(r.rank_stats.size(), 2u);
  ASSERT_TRUE(r.rank_stats[0].start_offset.has_value());
  ASSERT_TRUE(r.rank_stats[1].start_offset.has_value());
  EXPECT_EQ(*r.rank_stats[0].start_offset, SimTime::ps(3000 * 1000));  // 5000 - 2000 ns
  EXPECT_EQ(*r.rank_stats[1].start_offset, SimTime());
  // The op records stay relative to each rank's own start.
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].start, SimTime::ps(100 * 1000));
  EXPECT_EQ(r.ops[1].start, SimTime::ps(100 * 1000));

  std::ostringstream text;
  report::write_report_json(r, text);
  EXPECT_NE(text.str().find("\"start_offset_ps\":3000000"), std::string::npos) << text.str();
  auto back = report::read_report_json(text.str(), "m.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, r);
}

TEST(MeasuredReport, RanksOnSeparateClocksGetNoOffsets) {
  const ir::Program p = two_ranks();
  const auto model = model::preset("cpu-h256").value();
  const report::Report r = measured_report(p, model, measurement(false));
  for (const report::RankStats& s : r.rank_stats)
    EXPECT_FALSE(s.start_offset.has_value());
  std::ostringstream text;
  report::write_report_json(r, text);
  EXPECT_EQ(text.str().find("start_offset_ps"), std::string::npos);
}

// The host backend's core time of an op (its thread's CPU time and preemptions, exec/backend.h
// Completion) goes into the op's record and is summed per op class; an op without it (a
// transfer, or a backend that does not measure it) has none, and a class of such ops neither.
// Both survive the JSON round trip; a record with too many fields is a located error.
TEST(MeasuredReport, OpsCarryTheirThreadsCpuTime) {
  const ir::Program p = two_ranks();
  const auto model = model::preset("cpu-h256").value();
  Measurement m = measurement(true);
  m.ranks[0].ops[0].cpu = 250;
  m.ranks[0].ops[0].preemptions = 3;
  m.ranks[1].ops[0].cpu = 150;
  m.ranks[1].ops[0].preemptions = 1;
  const report::Report r = measured_report(p, model, m);
  ASSERT_EQ(r.ops.size(), 2u);
  ASSERT_TRUE(r.ops[0].cpu.has_value());
  EXPECT_EQ(*r.ops[0].cpu, SimTime::ps(250 * 1000));
  EXPECT_EQ(r.ops[0].preemptions, 3);
  ASSERT_EQ(r.op_classes.size(), 1u);
  ASSERT_TRUE(r.op_classes[0].cpu.has_value());
  EXPECT_EQ(*r.op_classes[0].cpu, SimTime::ps(400 * 1000));
  EXPECT_EQ(r.op_classes[0].preemptions, 4);
  std::ostringstream text;
  report::write_report_json(r, text);
  EXPECT_NE(text.str().find("[0,0,100000,400000,250000,3]"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"cpu_ps\":400000,\"preemptions\":4"), std::string::npos);
  auto back = report::read_report_json(text.str(), "m.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, r);

  std::string bad = text.str();
  bad.replace(bad.find("250000,3]"), 9, "250000,3,7]");
  auto e = report::read_report_json(bad, "bad.json");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().key_path, "ops[0]");
  EXPECT_EQ(e.error().file, "bad.json");

  const report::Report none = measured_report(p, model, measurement(true));
  EXPECT_FALSE(none.ops[0].cpu.has_value());
  EXPECT_FALSE(none.op_classes[0].cpu.has_value());
  std::ostringstream plain;
  report::write_report_json(none, plain);
  EXPECT_EQ(plain.str().find("cpu_ps"), std::string::npos);
  EXPECT_NE(plain.str().find("[0,0,100000,400000]"), std::string::npos);
}

}  // namespace
}  // namespace tawpipe::exec
