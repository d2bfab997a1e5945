// Analytical tests of the max-min solver. Each test states its system (constraints with
// capacities, variables with the constraints they use) and derives the expected rates by
// progressive filling in a comment, then asserts them.
#include "sim/solver/maxmin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tawpipe::sim {
namespace {

constexpr double kTol = 1e-12;

std::vector<VariableId> ids(std::span<const VariableId> s) {
  return {s.begin(), s.end()};
}

// C(10); x on C.  x = 10.
TEST(MaxMin, OneVariableGetsTheCapacity) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(10.0);
  const VariableId x = s.add_variable();
  s.expand(x, c);
  EXPECT_EQ(ids(s.solve()), std::vector<VariableId>{x});
  EXPECT_NEAR(s.rate(x), 10.0, kTol);
  EXPECT_NEAR(s.usage(c), 10.0, kTol);
}

// C(10); x, y on C.  Level L: 2L = 10, so x = y = 5.
TEST(MaxMin, TwoVariablesShareEqually) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(10.0);
  const VariableId x = s.add_variable();
  const VariableId y = s.add_variable();
  s.expand(x, c);
  s.expand(y, c);
  s.solve();
  EXPECT_NEAR(s.rate(x), 5.0, kTol);
  EXPECT_NEAR(s.rate(y), 5.0, kTol);
  EXPECT_EQ(s.rate(x), s.rate(y));  // tied at one bottleneck: bitwise equal
}

// C(10); x on C with bound 2, y on C.  The bound is reached at L = 2 < 5: x = 2; then C has
// 8 left for y alone: y = 8.
TEST(MaxMin, BoundBelowShareLeavesTheRestToOthers) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(10.0);
  const VariableId x = s.add_variable(1.0, 2.0);
  const VariableId y = s.add_variable();
  s.expand(x, c);
  s.expand(y, c);
  s.solve();
  EXPECT_NEAR(s.rate(x), 2.0, kTol);
  EXPECT_NEAR(s.rate(y), 8.0, kTol);
}

// C(10); x bound 7, y.  The fair share 5 is below the bound, so the bound is inactive: 5, 5.
TEST(MaxMin, BoundAboveShareIsInactive) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(10.0);
  const VariableId x = s.add_variable(1.0, 7.0);
  const VariableId y = s.add_variable();
  s.expand(x, c);
  s.expand(y, c);
  s.solve();
  EXPECT_NEAR(s.rate(x), 5.0, kTol);
  EXPECT_NEAR(s.rate(y), 5.0, kTol);
}

// The classic example. A(1), B(1); long flow L on A and B, short flow SA on A, SB on B.
// A: usage 2, saturates at L = 1/2; B likewise at 1/2. All three get 1/2.
TEST(MaxMin, ClassicLongAndShortFlowsEqualCapacities) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(1.0);
  const ConstraintId b = s.add_constraint(1.0);
  const VariableId l = s.add_variable();
  const VariableId sa = s.add_variable();
  const VariableId sb = s.add_variable();
  s.expand(l, a);
  s.expand(l, b);
  s.expand(sa, a);
  s.expand(sb, b);
  s.solve();
  EXPECT_NEAR(s.rate(l), 0.5, kTol);
  EXPECT_NEAR(s.rate(sa), 0.5, kTol);
  EXPECT_NEAR(s.rate(sb), 0.5, kTol);
}

// A(1), B(2); L on A and B; SA on A; SB1, SB2 on B.
// Saturation levels: A = 1/2 (two variables), B = 2/3 (three). A first: L = SA = 1/2.
// B then has 2 - 1/2 = 3/2 for SB1 and SB2: 3/4 each. Check B: 1/2 + 3/4 + 3/4 = 2.
TEST(MaxMin, ClassicLongAndShortFlowsUnequalCapacities) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(1.0);
  const ConstraintId b = s.add_constraint(2.0);
  const VariableId l = s.add_variable();
  const VariableId sa = s.add_variable();
  const VariableId sb1 = s.add_variable();
  const VariableId sb2 = s.add_variable();
  s.expand(l, a);
  s.expand(l, b);
  s.expand(sa, a);
  s.expand(sb1, b);
  s.expand(sb2, b);
  s.solve();
  EXPECT_NEAR(s.rate(l), 0.5, kTol);
  EXPECT_NEAR(s.rate(sa), 0.5, kTol);
  EXPECT_NEAR(s.rate(sb1), 0.75, kTol);
  EXPECT_NEAR(s.rate(sb2), 0.75, kTol);
  EXPECT_NEAR(s.usage(a), 1.0, kTol);
  EXPECT_NEAR(s.usage(b), 2.0, kTol);
}

// A(3), B(1); L on A and B; SA on A.  B saturates first at L = 1 (only L): L = 1. A then has
// 3 - 1 = 2 for SA: SA = 2. The long flow is limited elsewhere and SA takes the slack.
TEST(MaxMin, ShortFlowTakesSlackLeftByLongFlow) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(3.0);
  const ConstraintId b = s.add_constraint(1.0);
  const VariableId l = s.add_variable();
  const VariableId sa = s.add_variable();
  s.expand(l, a);
  s.expand(l, b);
  s.expand(sa, a);
  s.solve();
  EXPECT_NEAR(s.rate(l), 1.0, kTol);
  EXPECT_NEAR(s.rate(sa), 2.0, kTol);
}

// A ring over 8 edges E0..E7, capacity 10 except E5 = 4; the ring is one variable with
// coefficient 1 on every edge. Each edge saturates at L = its capacity, the smallest is E5:
// ring = 4.
TEST(MaxMin, RingIsPacedBySlowestEdge) {
  MaxMinSystem s;
  const VariableId ring = s.add_variable();
  for (int i = 0; i < 8; ++i)
    s.expand(ring, s.add_constraint(i == 5 ? 4.0 : 10.0));
  s.solve();
  EXPECT_NEAR(s.rate(ring), 4.0, kTol);
  EXPECT_EQ(s.degree(ring), 8u);
}

// Ring over E0..E7 (capacity 10 each); a p2p flow P uses E3 and a slow link S(2).
// Levels: S saturates at 2 (P alone), E3 at 5 (ring + P), other edges at 10. S first: P = 2.
// E3 then has 10 - 2 = 8 for the ring, other edges 10: ring = 8.
TEST(MaxMin, RingSharingOneEdgeWithSlowP2pFlow) {
  MaxMinSystem s;
  std::vector<ConstraintId> edges;
  const VariableId ring = s.add_variable();
  for (int i = 0; i < 8; ++i) {
    edges.push_back(s.add_constraint(10.0));
    s.expand(ring, edges.back());
  }
  const ConstraintId slow = s.add_constraint(2.0);
  const VariableId p = s.add_variable();
  s.expand(p, edges[3]);
  s.expand(p, slow);
  s.solve();
  EXPECT_NEAR(s.rate(p), 2.0, kTol);
  EXPECT_NEAR(s.rate(ring), 8.0, kTol);
}

// Same ring, P on E3 only.  E3 saturates first at L = 10/2 = 5: ring = P = 5.
TEST(MaxMin, RingSharingOneEdgeWithP2pFlow) {
  MaxMinSystem s;
  std::vector<ConstraintId> edges;
  const VariableId ring = s.add_variable();
  for (int i = 0; i < 8; ++i) {
    edges.push_back(s.add_constraint(10.0));
    s.expand(ring, edges.back());
  }
  const VariableId p = s.add_variable();
  s.expand(p, edges[3]);
  s.solve();
  EXPECT_NEAR(s.rate(p), 5.0, kTol);
  EXPECT_NEAR(s.rate(ring), 5.0, kTol);
}

// C(9); x weight 2, y weight 1.  x = 2L, y = L, 3L = 9: L = 3, x = 6, y = 3.
TEST(MaxMin, WeightsScaleShares) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(9.0);
  const VariableId x = s.add_variable(2.0);
  const VariableId y = s.add_variable(1.0);
  s.expand(x, c);
  s.expand(y, c);
  s.solve();
  EXPECT_NEAR(s.rate(x), 6.0, kTol);
  EXPECT_NEAR(s.rate(y), 3.0, kTol);
}

// C(12); x with coefficient 2, y with coefficient 1.  Both at level L: 2L + L = 12, L = 4:
// x = y = 4 (x consumes 8 of C). Coefficients change consumption, not the fair level.
TEST(MaxMin, CoefficientsScaleConsumption) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(12.0);
  const VariableId x = s.add_variable();
  const VariableId y = s.add_variable();
  s.expand(x, c, 2.0);
  s.expand(y, c, 1.0);
  s.solve();
  EXPECT_NEAR(s.rate(x), 4.0, kTol);
  EXPECT_NEAR(s.rate(y), 4.0, kTol);
  EXPECT_NEAR(s.usage(c), 12.0, kTol);
}

// C(12); x expanded twice on C (coefficient 1 + 1), y once: as above, x = y = 4.
TEST(MaxMin, RepeatedPairAddsCoefficients) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(12.0);
  const VariableId x = s.add_variable();
  const VariableId y = s.add_variable();
  s.expand(x, c);
  s.expand(x, c);
  s.expand(y, c);
  s.solve();
  EXPECT_NEAR(s.rate(x), 4.0, kTol);
  EXPECT_NEAR(s.rate(y), 4.0, kTol);
  EXPECT_EQ(s.degree(c), 3u);
  s.remove_variable(x);  // removing both of x's elements keeps C's entry list consistent
  s.solve();
  EXPECT_NEAR(s.rate(y), 12.0, kTol);
  EXPECT_EQ(s.degree(c), 1u);
}

// Z(0); x on Z: x = 0. A variable with no elements gets its bound, or +inf when unbounded.
TEST(MaxMin, DegenerateCases) {
  MaxMinSystem s;
  const ConstraintId z = s.add_constraint(0.0);
  const VariableId x = s.add_variable();
  s.expand(x, z);
  const VariableId free_bounded = s.add_variable(1.0, 3.0);
  const VariableId free_unbounded = s.add_variable();
  s.solve();
  EXPECT_EQ(s.rate(x), 0.0);
  EXPECT_EQ(s.rate(free_bounded), 3.0);
  EXPECT_TRUE(std::isinf(s.rate(free_unbounded)));
}

// C(10); x bound 0, y.  x = 0, y = 10.
TEST(MaxMin, ZeroBound) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(10.0);
  const VariableId x = s.add_variable(1.0, 0.0);
  const VariableId y = s.add_variable();
  s.expand(x, c);
  s.expand(y, c);
  s.solve();
  EXPECT_EQ(s.rate(x), 0.0);
  EXPECT_NEAR(s.rate(y), 10.0, kTol);
}

// A(10) with x (bound 3) and y (bound 4): 7 < 10, A can never saturate, so it is left out of
// progressive filling; both get their bounds and A was never a bottleneck. B(7) with u (bound
// 3), v (bound 4): exactly the bounds' sum (no margin), so B takes part: u's bound pops at 3,
// then B's key 4 ties with v's bound, which pops first: u = 3, v = 4 bitwise, and B never
// fixed a rate either.
TEST(MaxMin, ConstraintAboveItsVariablesBoundsNeverBinds) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(10.0);
  const ConstraintId b = s.add_constraint(7.0);
  const VariableId x = s.add_variable(1.0, 3.0);
  const VariableId y = s.add_variable(1.0, 4.0);
  const VariableId u = s.add_variable(1.0, 3.0);
  const VariableId v = s.add_variable(1.0, 4.0);
  s.expand(x, a);
  s.expand(y, a);
  s.expand(u, b);
  s.expand(v, b);
  s.solve();
  EXPECT_EQ(s.rate(x), 3.0);
  EXPECT_EQ(s.rate(y), 4.0);
  EXPECT_EQ(s.rate(u), 3.0);
  EXPECT_EQ(s.rate(v), 4.0);
  EXPECT_FALSE(s.was_bottleneck(a));
  EXPECT_FALSE(s.was_bottleneck(b));
  // An unbounded variable z on A brings A back: x stops at its bound 3, then y and z share the
  // remaining 7 at A (3.5 each, below y's bound 4).
  const VariableId z = s.add_variable();
  s.expand(z, a);
  s.solve();
  EXPECT_EQ(s.rate(x), 3.0);
  EXPECT_NEAR(s.rate(y), 3.5, kTol);
  EXPECT_NEAR(s.rate(z), 3.5, kTol);
  EXPECT_TRUE(s.was_bottleneck(a));
}

// Marks (replica symmetry's record of whom a constraint fixed; sim/symmetry/symmetry.h).
// Link A(10) carries a marked collective c with coefficient 4 (a repeated pair: four entries)
// and an unmarked transfer p with bound 1: p stops at its bound (level 1 < A's 10 / 5), then A
// fixes c alone at (10 - 1) / 4 = 9/4. A fixed only the marked variable: no record, although two
// variables used it. With p unbounded, A fixes both at 10 / 5 = 2: the unmarked p beside the
// marked c. A second marked variable d then shares A at 10 / 6 and sets the pair record.
TEST(MaxMin, MarksRecordWhatAConstraintFixedBesideAMarkedVariable) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(10.0);
  const VariableId c = s.add_variable();
  const VariableId p = s.add_variable(1.0, 1.0);
  s.set_marked(c, true);
  for (int i = 0; i < 4; ++i)
    s.expand(c, a);
  s.expand(p, a);
  s.solve();
  EXPECT_EQ(s.rate(p), 1.0);
  EXPECT_NEAR(s.rate(c), 9.0 / 4.0, kTol);
  EXPECT_TRUE(s.was_bottleneck(a));
  EXPECT_FALSE(s.fixed_unmarked_beside_marked(a));
  EXPECT_FALSE(s.fixed_beside_marked_pair(a));
  s.set_bound(p, kNoBound);
  s.solve();
  EXPECT_NEAR(s.rate(p), 2.0, kTol);
  EXPECT_NEAR(s.rate(c), 2.0, kTol);
  EXPECT_TRUE(s.fixed_unmarked_beside_marked(a));
  EXPECT_FALSE(s.fixed_beside_marked_pair(a));
  const VariableId d = s.add_variable();
  s.set_marked(d, true);
  s.expand(d, a);
  s.solve();
  EXPECT_NEAR(s.rate(d), 10.0 / 6.0, kTol);
  EXPECT_TRUE(s.fixed_beside_marked_pair(a));
  // An unmarked-only constraint records nothing, and a fresh constraint starts clean.
  const ConstraintId b = s.add_constraint(1.0);
  const VariableId q = s.add_variable();
  const VariableId r = s.add_variable();
  s.expand(q, b);
  s.expand(r, b);
  s.solve();
  EXPECT_TRUE(s.was_bottleneck(b));
  EXPECT_FALSE(s.fixed_unmarked_beside_marked(b));
  EXPECT_FALSE(s.fixed_beside_marked_pair(b));
}

// --- Incremental solving -----------------------------------------------------------------------

// Two independent components: A(10) with a1, a2 and B(6) with b1.
// Initially a1 = a2 = 5, b1 = 6. Adding a3 on A re-solves only A's component (1 constraint,
// 3 variables): a1 = a2 = a3 = 10/3, and b1 is neither recomputed nor reported.
TEST(MaxMinIncremental, AddingAFlowResolvesOnlyItsComponent) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(10.0);
  const ConstraintId b = s.add_constraint(6.0);
  const VariableId a1 = s.add_variable();
  const VariableId a2 = s.add_variable();
  const VariableId b1 = s.add_variable();
  s.expand(a1, a);
  s.expand(a2, a);
  s.expand(b1, b);
  s.solve();
  EXPECT_EQ(s.last_solve_stats().components, 2u);
  EXPECT_EQ(s.last_solve_stats().variables, 3u);

  const VariableId a3 = s.add_variable();
  s.expand(a3, a);
  EXPECT_TRUE(s.dirty());
  EXPECT_EQ(ids(s.solve()), (std::vector<VariableId>{a1, a2, a3}));
  EXPECT_FALSE(s.dirty());
  const SolveStats& st = s.last_solve_stats();
  EXPECT_EQ(st.components, 1u);
  EXPECT_EQ(st.variables, 3u);
  EXPECT_EQ(st.constraints, 1u);
  EXPECT_EQ(st.elements, 3u);
  EXPECT_EQ(st.changed, 3u);
  EXPECT_NEAR(s.rate(a3), 10.0 / 3.0, kTol);
  EXPECT_NEAR(s.rate(b1), 6.0, kTol);

  // Removing a3 again: a1 = a2 = 5, only they are reported.
  s.remove_variable(a3);
  EXPECT_EQ(ids(s.solve()), (std::vector<VariableId>{a1, a2}));
  EXPECT_EQ(s.last_solve_stats().variables, 2u);
  EXPECT_NEAR(s.rate(a1), 5.0, kTol);

  // Nothing dirty: nothing solved.
  EXPECT_TRUE(s.solve().empty());
  EXPECT_EQ(s.last_solve_stats().variables, 0u);
}

// Classic system A(1), B(1), L on both, SA, SB: one component. Removing L splits it into
// two components, both re-solved (seeded from A and from B): SA = SB = 1.
TEST(MaxMinIncremental, RemovingABridgeSplitsTheComponent) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(1.0);
  const ConstraintId b = s.add_constraint(1.0);
  const VariableId l = s.add_variable();
  const VariableId sa = s.add_variable();
  const VariableId sb = s.add_variable();
  s.expand(l, a);
  s.expand(l, b);
  s.expand(sa, a);
  s.expand(sb, b);
  s.solve();
  EXPECT_EQ(s.last_solve_stats().components, 1u);
  s.remove_variable(l);
  EXPECT_EQ(ids(s.solve()), (std::vector<VariableId>{sa, sb}));
  EXPECT_EQ(s.last_solve_stats().components, 2u);
  EXPECT_EQ(s.last_solve_stats().variables, 2u);
  EXPECT_NEAR(s.rate(sa), 1.0, kTol);
  EXPECT_NEAR(s.rate(sb), 1.0, kTol);
}

// C(10); x bound 1 and y bound 1: both 1 (C not saturated). Adding z bound 1: z = 1 and the
// rates of x and y do not change, so only z is reported although all three were recomputed.
TEST(MaxMinIncremental, UnchangedRatesAreNotReported) {
  MaxMinSystem s;
  const ConstraintId c = s.add_constraint(10.0);
  const VariableId x = s.add_variable(1.0, 1.0);
  const VariableId y = s.add_variable(1.0, 1.0);
  s.expand(x, c);
  s.expand(y, c);
  s.solve();
  const VariableId z = s.add_variable(1.0, 1.0);
  s.expand(z, c);
  EXPECT_EQ(ids(s.solve()), std::vector<VariableId>{z});
  EXPECT_EQ(s.last_solve_stats().variables, 3u);
}

// A(10) with x, y: 5, 5. Capacity to 4: 2, 2. Bound of x to 1: x = 1, y = 3.
TEST(MaxMinIncremental, CapacityAndBoundChanges) {
  MaxMinSystem s;
  const ConstraintId a = s.add_constraint(10.0);
  const VariableId x = s.add_variable();
  const VariableId y = s.add_variable();
  s.expand(x, a);
  s.expand(y, a);
  s.solve();
  s.set_capacity(a, 4.0);
  EXPECT_EQ(ids(s.solve()), (std::vector<VariableId>{x, y}));
  EXPECT_NEAR(s.rate(x), 2.0, kTol);
  s.set_bound(x, 1.0);
  s.solve();
  EXPECT_NEAR(s.rate(x), 1.0, kTol);
  EXPECT_NEAR(s.rate(y), 3.0, kTol);
  s.set_weight(y, 3.0);  // y's weight cannot help: x is at its bound and y takes the rest
  s.solve();
  EXPECT_NEAR(s.rate(y), 3.0, kTol);
}

// Many islands (one per "node": a constraint with 4 flows) plus churn on one island: each
// solve touches exactly that island, and the final rates equal a fresh full solve.
TEST(MaxMinIncremental, ChurnMatchesFreshSolve) {
  MaxMinSystem s;
  std::vector<ConstraintId> islands;
  std::vector<std::vector<VariableId>> flows(16);
  for (int i = 0; i < 16; ++i) {
    islands.push_back(s.add_constraint(8.0 + i));
    for (int f = 0; f < 4; ++f) {
      flows[static_cast<std::size_t>(i)].push_back(s.add_variable());
      s.expand(flows[static_cast<std::size_t>(i)].back(), islands.back());
    }
  }
  s.solve();
  EXPECT_EQ(s.last_solve_stats().components, 16u);
  for (int round = 0; round < 10; ++round) {
    auto& island = flows[5];
    s.remove_variable(island.front());
    island.erase(island.begin());
    island.push_back(s.add_variable(1.0 + round));
    s.expand(island.back(), islands[5]);
    s.solve();
    EXPECT_EQ(s.last_solve_stats().components, 1u);
    EXPECT_EQ(s.last_solve_stats().variables, 4u);
  }

  MaxMinSystem fresh;
  std::vector<std::vector<VariableId>> fresh_flows(16);
  for (std::size_t i = 0; i < 16; ++i) {
    const ConstraintId c = fresh.add_constraint(s.capacity(islands[i]));
    for (const VariableId v : flows[i]) {
      fresh_flows[i].push_back(fresh.add_variable(s.weight(v), s.bound(v)));
      fresh.expand(fresh_flows[i].back(), c);
    }
  }
  fresh.solve();
  for (std::size_t i = 0; i < 16; ++i) {
    for (std::size_t f = 0; f < flows[i].size(); ++f) {
      EXPECT_NEAR(s.rate(flows[i][f]), fresh.rate(fresh_flows[i][f]), kTol * 100);
    }
  }
}

}  // namespace
}  // namespace tawpipe::sim
