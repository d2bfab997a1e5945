// Property tests of the max-min solver on seeded random systems:
//  1. its rates equal those of a brute-force progressive-filling reference written here,
//     independently and as plainly as possible, to a relative difference <= 1e-9;
//  2. every solution is feasible and max-min fair by the bottleneck characterisation (each
//     variable is at its bound or has a saturated constraint on which its level is maximal);
//  3. after random incremental edits (add/remove variables, capacity and bound changes), the
//     incrementally re-solved rates still equal the reference, and every variable whose rate
//     changed is reported by solve().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/solver/maxmin.h"
#include "tests/unit/sim/test_rng.h"

namespace tawpipe::sim {
namespace {

using testing::TestRng;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRelTol = 1e-9;

struct Element {
  std::size_t constraint;
  double coefficient;
};
struct Var {
  double weight = 1.0;
  double bound = kInf;
  std::vector<Element> elements;
  bool live = true;
};
/// A system as plain data, the input of the reference and of the fairness check.
struct Instance {
  std::vector<double> capacity;
  std::vector<Var> vars;
};

// --- Reference: progressive filling recomputed from scratch at every step ----------------------
//
// Each round recomputes, for every constraint, the capacity left by fixed variables (R) and the
// weighted coefficient sum of unfixed ones (U); the next level is the smallest R/U or bound/weight;
// everything reaching it within a relative 1e-12 is fixed. O(rounds x elements), no incremental
// state, no heap: slow and obviously correct.
std::vector<double> reference_rates(const Instance& in) {
  const std::size_t n = in.vars.size();
  std::vector<double> x(n, 0.0);
  std::vector<bool> fixed(n, false);
  for (std::size_t j = 0; j < n; ++j) {
    if (!in.vars[j].live) {
      fixed[j] = true;  // absent: contributes nothing
    } else if (in.vars[j].elements.empty()) {
      x[j] = in.vars[j].bound;
      fixed[j] = true;
    }
  }
  const double tie = 1.0 + 1e-12;
  double level = 0.0;
  while (std::find(fixed.begin(), fixed.end(), false) != fixed.end()) {
    std::vector<double> remaining(in.capacity);
    std::vector<double> usage(in.capacity.size(), 0.0);
    for (std::size_t j = 0; j < n; ++j) {
      if (!in.vars[j].live) continue;
      for (const Element& e : in.vars[j].elements) {
        if (fixed[j]) {
          remaining[e.constraint] -= e.coefficient * x[j];
        } else {
          usage[e.constraint] += e.coefficient * in.vars[j].weight;
        }
      }
    }
    double best = kInf;
    std::vector<double> saturation(in.capacity.size(), kInf);
    for (std::size_t i = 0; i < in.capacity.size(); ++i) {
      if (usage[i] > 0.0) {
        saturation[i] = std::max(remaining[i], 0.0) / usage[i];
        best = std::min(best, saturation[i]);
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (!fixed[j]) best = std::min(best, in.vars[j].bound / in.vars[j].weight);
    }
    level = std::max(level, best);
    for (std::size_t j = 0; j < n; ++j) {
      if (!fixed[j] && in.vars[j].bound / in.vars[j].weight <= level * tie) {
        x[j] = in.vars[j].bound;
        fixed[j] = true;
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (fixed[j]) continue;
      for (const Element& e : in.vars[j].elements) {
        if (saturation[e.constraint] <= level * tie) {
          x[j] = in.vars[j].weight * level;
          fixed[j] = true;
          break;
        }
      }
    }
  }
  return x;
}

bool close(double a, double b) {
  if (a == b) return true;  // includes +inf == +inf
  return std::abs(a - b) <= kRelTol * std::max(std::abs(a), std::abs(b));
}

// --- Fairness: feasibility plus a bottleneck for every variable not at its bound --------------
std::string check_max_min_fair(const Instance& in, const std::vector<double>& x) {
  std::vector<double> used(in.capacity.size(), 0.0);
  std::vector<double> max_level(in.capacity.size(), 0.0);
  for (std::size_t j = 0; j < in.vars.size(); ++j) {
    const Var& v = in.vars[j];
    if (!v.live) continue;
    if (!(x[j] >= 0.0) || x[j] > v.bound * (1 + kRelTol)) {
      return "variable " + std::to_string(j) + " outside [0, bound]";
    }
    for (const Element& e : v.elements) {
      used[e.constraint] += e.coefficient * x[j];
      max_level[e.constraint] = std::max(max_level[e.constraint], x[j] / v.weight);
    }
  }
  for (std::size_t i = 0; i < in.capacity.size(); ++i) {
    if (used[i] > in.capacity[i] * (1 + kRelTol)) {
      return "constraint " + std::to_string(i) + " over capacity";
    }
  }
  for (std::size_t j = 0; j < in.vars.size(); ++j) {
    const Var& v = in.vars[j];
    if (!v.live) continue;
    if (close(x[j], v.bound)) continue;
    bool has_bottleneck = false;
    for (const Element& e : v.elements) {
      const bool saturated = used[e.constraint] >= in.capacity[e.constraint] * (1 - kRelTol);
      const bool maximal = x[j] / v.weight >= max_level[e.constraint] * (1 - kRelTol);
      has_bottleneck = has_bottleneck || (saturated && maximal);
    }
    if (!has_bottleneck) return "variable " + std::to_string(j) + " has no bottleneck";
  }
  return {};
}

// --- Random instances ---------------------------------------------------------------------------

// Mixes "nice" values (integer capacities, unit weights and coefficients: many exact ties) with
// arbitrary reals, and includes bounds (some zero), zero capacities, variables without
// elements, and repeated (variable, constraint) pairs.
double random_capacity(TestRng& rng, bool nice) {
  if (rng.chance(0.02)) return 0.0;
  return nice ? static_cast<double>(1 + rng.below(8)) : rng.uniform(0.5, 100.0);
}

Var random_var(TestRng& rng, std::size_t constraints, bool nice) {
  Var v;
  v.weight = (nice || rng.chance(0.5)) ? 1.0 : rng.uniform(0.25, 4.0);
  if (rng.chance(0.3)) {
    v.bound = rng.chance(0.05) ? 0.0
              : nice           ? static_cast<double>(1 + rng.below(6)) / 2.0
                               : rng.uniform(0.0, 60.0);
  }
  const std::uint32_t degree =
      rng.chance(0.03)
          ? 0
          : 1 + rng.below(static_cast<std::uint32_t>(std::min<std::size_t>(constraints, 6)));
  for (std::uint32_t k = 0; k < degree; ++k) {
    const double coefficient = (nice || rng.chance(0.5)) ? 1.0 : rng.uniform(0.1, 10.0);
    v.elements.push_back({rng.below(static_cast<std::uint32_t>(constraints)), coefficient});
  }
  return v;
}

Instance random_instance(TestRng& rng) {
  Instance in;
  const bool nice = rng.chance(0.4);
  const std::size_t constraints = 1 + rng.below(12);
  const std::size_t vars = 1 + rng.below(24);
  for (std::size_t i = 0; i < constraints; ++i)
    in.capacity.push_back(random_capacity(rng, nice));
  for (std::size_t j = 0; j < vars; ++j)
    in.vars.push_back(random_var(rng, constraints, nice));
  return in;
}

void expect_matches_reference(const Instance& in, const std::vector<double>& rates,
                              const std::string& what) {
  const std::vector<double> expected = reference_rates(in);
  for (std::size_t j = 0; j < in.vars.size(); ++j) {
    if (!in.vars[j].live) continue;
    ASSERT_TRUE(close(rates[j], expected[j]))
        << what << ": variable " << j << " solver " << rates[j] << " reference " << expected[j];
  }
  ASSERT_EQ(check_max_min_fair(in, expected), "") << what << " (reference)";
  ASSERT_EQ(check_max_min_fair(in, rates), "") << what << " (solver)";
}

TEST(MaxMinProperty, RandomInstancesMatchReferenceAndAreFair) {
  TestRng rng(20240611);
  constexpr int kInstances = 3000;
  for (int t = 0; t < kInstances; ++t) {
    const Instance in = random_instance(rng);
    MaxMinSystem s;
    std::vector<ConstraintId> c;
    for (const double cap : in.capacity)
      c.push_back(s.add_constraint(cap));
    std::vector<VariableId> v;
    for (const Var& var : in.vars) {
      v.push_back(s.add_variable(var.weight, var.bound));
      for (const Element& e : var.elements)
        s.expand(v.back(), c[e.constraint], e.coefficient);
    }
    // Every variable is new, so every one is reported.
    ASSERT_EQ(s.solve().size(), in.vars.size());
    std::vector<double> rates;
    for (const VariableId id : v)
      rates.push_back(s.rate(id));
    expect_matches_reference(in, rates, "instance " + std::to_string(t));
  }
}

// Random edit sequences on one long-lived system, mirrored in an `Instance`. After each batch
// of edits: rates equal the reference for the current instance, and every variable whose rate
// moved since the previous solve is in solve()'s result.
TEST(MaxMinProperty, IncrementalEditsMatchReference) {
  TestRng rng(7);
  int checked = 0;
  for (int sequence = 0; sequence < 100; ++sequence) {
    Instance in = random_instance(rng);
    const bool nice = rng.chance(0.4);
    MaxMinSystem s;
    std::vector<ConstraintId> c;
    for (const double cap : in.capacity)
      c.push_back(s.add_constraint(cap));
    std::vector<VariableId> id;  // instance variable j <-> solver variable id[j]
    auto add = [&](std::size_t j) {
      const Var& var = in.vars[j];
      id[j] = s.add_variable(var.weight, var.bound);
      for (const Element& e : var.elements)
        s.expand(id[j], c[e.constraint], e.coefficient);
    };
    id.resize(in.vars.size());
    for (std::size_t j = 0; j < in.vars.size(); ++j)
      add(j);
    s.solve();
    std::vector<double> previous(in.vars.size(), 0.0);
    for (std::size_t j = 0; j < in.vars.size(); ++j)
      previous[j] = s.rate(id[j]);

    for (int step = 0; step < 25; ++step) {
      const std::uint32_t edits = 1 + rng.below(3);
      std::set<std::size_t> added;
      for (std::uint32_t e = 0; e < edits; ++e) {
        const std::uint32_t op = rng.below(10);
        std::vector<std::size_t> live;
        for (std::size_t j = 0; j < in.vars.size(); ++j) {
          if (in.vars[j].live) live.push_back(j);
        }
        if (op < 4 || live.empty()) {  // add a variable
          in.vars.push_back(random_var(rng, in.capacity.size(), nice));
          id.emplace_back();
          previous.push_back(0.0);
          add(in.vars.size() - 1);
          added.insert(in.vars.size() - 1);
        } else if (op < 7) {  // remove one
          const std::size_t j = live[rng.below(static_cast<std::uint32_t>(live.size()))];
          s.remove_variable(id[j]);
          in.vars[j].live = false;
        } else if (op < 8) {  // change a capacity
          const std::size_t i = rng.below(static_cast<std::uint32_t>(in.capacity.size()));
          in.capacity[i] = random_capacity(rng, nice);
          s.set_capacity(c[i], in.capacity[i]);
        } else if (op < 9) {  // change a bound
          const std::size_t j = live[rng.below(static_cast<std::uint32_t>(live.size()))];
          in.vars[j].bound = rng.chance(0.3) ? kInf : rng.uniform(0.0, 30.0);
          s.set_bound(id[j], in.vars[j].bound);
        } else {  // add a constraint and a variable using it and an existing constraint
          in.capacity.push_back(random_capacity(rng, nice));
          c.push_back(s.add_constraint(in.capacity.back()));
          Var v;
          v.elements = {{in.capacity.size() - 1, 1.0},
                        {rng.below(static_cast<std::uint32_t>(in.capacity.size())), 2.0}};
          in.vars.push_back(v);
          id.emplace_back();
          previous.push_back(0.0);
          add(in.vars.size() - 1);
          added.insert(in.vars.size() - 1);
        }
      }
      const std::span<const VariableId> changed = s.solve();
      const std::set<VariableId> reported(changed.begin(), changed.end());
      std::vector<double> rates(in.vars.size(), 0.0);
      for (std::size_t j = 0; j < in.vars.size(); ++j) {
        if (!in.vars[j].live) continue;
        rates[j] = s.rate(id[j]);
        if (added.count(j) != 0 || rates[j] != previous[j]) {
          ASSERT_TRUE(reported.count(id[j]) != 0) << "sequence " << sequence << " step " << step
                                                  << ": variable " << j << " not reported";
        }
        previous[j] = rates[j];
      }
      ASSERT_LE(s.last_solve_stats().variables, s.variable_count());
      expect_matches_reference(
          in, rates, "sequence " + std::to_string(sequence) + " step " + std::to_string(step));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2500);
}

}  // namespace
}  // namespace tawpipe::sim
