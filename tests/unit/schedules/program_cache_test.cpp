// ProgramCache (schedules/program_cache.h): a cached program equals a freshly generated one, the
// cache answers equal inputs that differ only in the topology's name and hash, and it never
// answers a different input.
#include <gtest/gtest.h>

#include "schedules/program_cache.h"
#include "schedules/workload.h"

namespace tawpipe::schedules {
namespace {

Workload small_workload(const std::string& nic) {
  WorkloadSpec spec;
  spec.sets = {"train.micro_batches=3", "train.global_batch=0", "train.seq_len=1024",
               "inter_node.nic.bandwidth=" + nic};
  auto w = resolve_workload(spec);
  EXPECT_TRUE(w.ok()) << w.error().to_string();
  w->threads = 1;
  return std::move(*w);
}

TEST(ProgramCache, SharesProgramsOfEqualInputsAcrossTopologyParameters) {
  const auto cache = std::make_shared<ProgramCache>();
  Workload a = small_workload("100Gb/s");
  Workload b = small_workload("25Gb/s");
  ASSERT_NE(a.topology.content_hash(), b.topology.content_hash());
  a.programs = cache;
  b.programs = cache;
  const ScheduleVariant v{"weipipe", {}, "weipipe"};
  auto pa = shared_program(a, v);
  ASSERT_TRUE(pa.ok());
  auto pb = shared_program(b, v);
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(pa->get(), pb->get());  // one program, generated once
  EXPECT_EQ(cache->misses(), 1u);
  EXPECT_EQ(cache->hits(), 1u);
  // Equal to what the generator gives for b, up to the topology fields of the header.
  auto fresh = build_program(b, v);
  ASSERT_TRUE(fresh.ok());
  ir::Program shared = **pb;
  EXPECT_EQ(shared.header.topology_hash, a.topology.content_hash());
  shared.header.topology_hash = fresh->header.topology_hash;
  EXPECT_TRUE(shared == *fresh);
}

TEST(ProgramCache, DifferentInputsGetDifferentPrograms) {
  const auto cache = std::make_shared<ProgramCache>();
  Workload a = small_workload("100Gb/s");
  a.programs = cache;
  Workload more = a;
  more.train.micro_batches = 4;
  const ScheduleVariant v{"tawpipe", {}, "tawpipe"};
  const ScheduleVariant v2{"tawpipe", {{"overlap", "off"}}, "tawpipe[overlap=off]"};
  auto p1 = shared_program(a, v);
  auto p2 = shared_program(more, v);
  auto p3 = shared_program(a, v2);
  auto p4 = shared_program(a, ScheduleVariant{"fsdp", {}, "fsdp"});
  ASSERT_TRUE(p1.ok() && p2.ok() && p3.ok() && p4.ok());
  EXPECT_NE(p1->get(), p2->get());
  EXPECT_NE(p1->get(), p3->get());
  EXPECT_NE(p1->get(), p4->get());
  EXPECT_EQ(cache->misses(), 4u);
  EXPECT_EQ((*p2)->header.micro_batches, 4);
}

TEST(ProgramCache, DropsTheOldestBeyondItsCapacity) {
  Workload a = small_workload("100Gb/s");
  a.programs = std::make_shared<ProgramCache>(1);  // smaller than any program: nothing kept
  const ScheduleVariant v{"fsdp", {}, "fsdp"};
  auto p1 = shared_program(a, v);
  auto p2 = shared_program(a, v);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_NE(p1->get(), p2->get());
  EXPECT_TRUE(**p1 == **p2);
  EXPECT_EQ(a.programs->misses(), 2u);
}

}  // namespace
}  // namespace tawpipe::schedules
