#include "sim/solver/maxmin.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace tawpipe::sim {

namespace {
constexpr std::uint32_t kNoMark = 0xffffffffu;  ///< fill(): no marked variable seen
}  // namespace

// --- Accessors ---------------------------------------------------------------------------------

MaxMinSystem::Constraint& MaxMinSystem::cnst(ConstraintId c) {
  assert(c.index < constraints_.size() && constraints_[c.index].live);
  return constraints_[c.index];
}
const MaxMinSystem::Constraint& MaxMinSystem::cnst(ConstraintId c) const {
  assert(c.index < constraints_.size() && constraints_[c.index].live);
  return constraints_[c.index];
}
MaxMinSystem::Variable& MaxMinSystem::var(VariableId v) {
  assert(v.index < variables_.size() && variables_[v.index].live);
  return variables_[v.index];
}
const MaxMinSystem::Variable& MaxMinSystem::var(VariableId v) const {
  assert(v.index < variables_.size() && variables_[v.index].live);
  return variables_[v.index];
}

double MaxMinSystem::capacity(ConstraintId c) const {
  return cnst(c).capacity;
}
std::size_t MaxMinSystem::degree(ConstraintId c) const {
  return cnst(c).entries.size();
}
double MaxMinSystem::weight(VariableId v) const {
  return var(v).weight;
}
double MaxMinSystem::bound(VariableId v) const {
  return var(v).bound;
}
double MaxMinSystem::rate(VariableId v) const {
  return var(v).rate;
}
std::size_t MaxMinSystem::degree(VariableId v) const {
  return var(v).elements.size();
}

double MaxMinSystem::usage(ConstraintId c) const {
  double used = 0.0;
  for (const CnstEntry& e : cnst(c).entries)
    used += e.coefficient * variables_[e.variable].rate;
  return used;
}

// --- Building ----------------------------------------------------------------------------------

ConstraintId MaxMinSystem::add_constraint(double capacity) {
  assert(std::isfinite(capacity) && capacity >= 0.0);
  std::uint32_t index;
  if (!free_constraints_.empty()) {
    index = free_constraints_.back();
    free_constraints_.pop_back();
  } else {
    assert(constraints_.size() < ConstraintId::kInvalid);
    index = static_cast<std::uint32_t>(constraints_.size());
    constraints_.emplace_back();
  }
  Constraint& k = constraints_[index];
  k.capacity = capacity;
  k.entries.clear();
  k.live = true;
  k.bottleneck = false;
  k.unmarked_beside_marked = false;
  k.beside_marked_pair = false;
  // `dirty` is kept: a reused slot may still sit in dirty_constraints_, and the flag prevents
  // listing it twice. A constraint without variables needs no solving, so it is not marked.
  return ConstraintId{index};
}

bool MaxMinSystem::was_bottleneck(ConstraintId c) const {
  return constraints_[c.index].bottleneck;
}

bool MaxMinSystem::fixed_unmarked_beside_marked(ConstraintId c) const {
  return constraints_[c.index].unmarked_beside_marked;
}

bool MaxMinSystem::fixed_beside_marked_pair(ConstraintId c) const {
  return constraints_[c.index].beside_marked_pair;
}

void MaxMinSystem::set_capacity(ConstraintId c, double capacity) {
  assert(std::isfinite(capacity) && capacity >= 0.0);
  cnst(c).capacity = capacity;
  mark_dirty(c.index);
}

void MaxMinSystem::remove_constraint(ConstraintId c) {
  Constraint& k = cnst(c);
  assert(k.entries.empty() && "remove the constraint's variables first");
  k.live = false;
  free_constraints_.push_back(c.index);
}

VariableId MaxMinSystem::add_variable(double weight, double bound) {
  assert(std::isfinite(weight) && weight > 0.0);
  assert(bound >= 0.0);  // also rejects NaN
  std::uint32_t index;
  if (!free_variables_.empty()) {
    index = free_variables_.back();
    free_variables_.pop_back();
  } else {
    assert(variables_.size() < VariableId::kInvalid);
    index = static_cast<std::uint32_t>(variables_.size());
    variables_.emplace_back();
  }
  Variable& x = variables_[index];
  x.weight = weight;
  x.bound = bound;
  x.rate = 0.0;
  x.elements.clear();
  x.live = true;
  x.fresh = true;
  x.marked = false;
  mark_dirty_variable(index);
  return VariableId{index};
}

void MaxMinSystem::expand(VariableId v, ConstraintId c, double coefficient) {
  assert(std::isfinite(coefficient) && coefficient > 0.0);
  Variable& x = var(v);
  Constraint& k = cnst(c);
  const auto slot = static_cast<std::uint32_t>(x.elements.size());
  const auto position = static_cast<std::uint32_t>(k.entries.size());
  x.elements.push_back(VarElement{c.index, position, coefficient});
  k.entries.push_back(CnstEntry{v.index, slot, coefficient});
  mark_dirty(c.index);
}

void MaxMinSystem::set_bound(VariableId v, double bound) {
  assert(bound >= 0.0);
  var(v).bound = bound;
  mark_dirty_variable(v.index);
}

void MaxMinSystem::set_weight(VariableId v, double weight) {
  assert(std::isfinite(weight) && weight > 0.0);
  var(v).weight = weight;
  mark_dirty_variable(v.index);
}

void MaxMinSystem::set_marked(VariableId v, bool marked) {
  var(v).marked = marked;
}

void MaxMinSystem::remove_variable(VariableId v) {
  Variable& x = var(v);
  // Index loop and fresh reads: removing one element can move another element of this same
  // variable inside the constraint's entry list (repeated pairs), updating its `position`.
  for (std::size_t s = 0; s < x.elements.size(); ++s) {
    const VarElement e = x.elements[s];
    Constraint& k = constraints_[e.constraint];
    const CnstEntry last = k.entries.back();
    if (e.position != k.entries.size() - 1) {
      k.entries[e.position] = last;
      variables_[last.variable].elements[last.slot].position = e.position;
    }
    k.entries.pop_back();
    mark_dirty(e.constraint);
  }
  x.elements.clear();
  x.live = false;
  x.fresh = false;
  free_variables_.push_back(v.index);
}

void MaxMinSystem::mark_dirty(std::uint32_t constraint) {
  Constraint& k = constraints_[constraint];
  if (k.dirty) return;
  k.dirty = true;
  dirty_constraints_.push_back(constraint);
}

void MaxMinSystem::mark_dirty_variable(std::uint32_t variable) {
  Variable& x = variables_[variable];
  if (x.dirty) return;
  x.dirty = true;
  dirty_variables_.push_back(variable);
}

void MaxMinSystem::invalidate_all() {
  for (std::uint32_t i = 0; i < constraints_.size(); ++i) {
    if (constraints_[i].live) mark_dirty(i);
  }
  for (std::uint32_t j = 0; j < variables_.size(); ++j) {
    if (variables_[j].live) mark_dirty_variable(j);
  }
}

// --- Solving -----------------------------------------------------------------------------------

std::span<const VariableId> MaxMinSystem::solve() {
  changed_.clear();
  stats_ = SolveStats{};
  if (!dirty()) return {};

  if (++epoch_ == 0) {  // stamps wrapped: reset them so no stale stamp equals the new epoch
    for (Constraint& k : constraints_)
      k.visit = 0;
    for (Variable& x : variables_)
      x.visit = 0;
    epoch_ = 1;
  }
  component_constraints_.clear();
  component_variables_.clear();
  // Seeds are processed in the order they were dirtied, so the component lists, and with them
  // every floating-point summation order, are a function of the call sequence only.
  for (const std::uint32_t c : dirty_constraints_) {
    Constraint& k = constraints_[c];
    k.dirty = false;
    if (!k.live || k.visit == epoch_) continue;
    collect_component_from_constraint(c);
    ++stats_.components;
  }
  for (const std::uint32_t v : dirty_variables_) {
    Variable& x = variables_[v];
    x.dirty = false;
    if (!x.live || x.visit == epoch_) continue;
    collect_component_from_variable(v);
    ++stats_.components;
  }
  dirty_constraints_.clear();
  dirty_variables_.clear();

  previous_rates_.clear();
  for (const std::uint32_t v : component_variables_) {
    previous_rates_.push_back(variables_[v].rate);
  }
  fill();

  for (std::size_t i = 0; i < component_variables_.size(); ++i) {
    Variable& x = variables_[component_variables_[i]];
    if (x.fresh || x.rate != previous_rates_[i])
      changed_.push_back(VariableId{component_variables_[i]});
    x.fresh = false;
  }
  std::sort(changed_.begin(), changed_.end());

  stats_.variables = component_variables_.size();
  stats_.constraints = component_constraints_.size();
  stats_.changed = changed_.size();
  return changed_;
}

void MaxMinSystem::collect_component_from_constraint(std::uint32_t constraint) {
  constraints_[constraint].visit = epoch_;
  component_constraints_.push_back(constraint);
  bfs_stack_.push_back(constraint);
  while (!bfs_stack_.empty()) {
    const std::uint32_t c = bfs_stack_.back();
    bfs_stack_.pop_back();
    for (const CnstEntry& e : constraints_[c].entries)
      visit_variable(e.variable);
  }
}

void MaxMinSystem::collect_component_from_variable(std::uint32_t variable) {
  visit_variable(variable);
  while (!bfs_stack_.empty()) {
    const std::uint32_t c = bfs_stack_.back();
    bfs_stack_.pop_back();
    for (const CnstEntry& e : constraints_[c].entries)
      visit_variable(e.variable);
  }
}

void MaxMinSystem::visit_variable(std::uint32_t variable) {
  Variable& x = variables_[variable];
  if (x.visit == epoch_) return;
  x.visit = epoch_;
  component_variables_.push_back(variable);
  stats_.elements += x.elements.size();
  for (const VarElement& e : x.elements) {
    Constraint& k = constraints_[e.constraint];
    if (k.visit == epoch_) continue;
    k.visit = epoch_;
    component_constraints_.push_back(e.constraint);
    bfs_stack_.push_back(e.constraint);
  }
}

inline bool MaxMinSystem::HeapAfter::operator()(const HeapKey& a, const HeapKey& b) const {
  // Min-heap on level; at equal levels bounds first (a variable at its bound then gets exactly
  // its bound), then by index, so the pop order never depends on how the heap was built.
  if (a.level != b.level) return a.level > b.level;
  if (a.is_bound != b.is_bound) return !a.is_bound;
  return a.index > b.index;
}

void MaxMinSystem::recompute_exact(Constraint& k) {
  double fixed_use = 0.0;
  double unfixed_usage = 0.0;
  for (const CnstEntry& e : k.entries) {
    const Variable& x = variables_[e.variable];
    if (x.fixed) {
      fixed_use += e.coefficient * x.rate;
    } else {
      unfixed_usage += e.coefficient * x.weight;
    }
  }
  k.remaining = k.capacity - fixed_use;
  k.unfixed_usage = unfixed_usage;
  k.exact_at = k.unfixed;
}

double MaxMinSystem::current_key(Constraint& k, double level) {
  // Subtraction drift in U_i grows as the unfixed set shrinks; refresh exactly when it halved.
  if (2 * k.unfixed <= k.exact_at) recompute_exact(k);
  // A residue within rounding noise of zero means "saturated now", not a new, meaningless level.
  if (k.remaining <= kRelativeEpsilon * k.capacity) return level;
  return std::max(level, k.remaining / k.unfixed_usage);
}

void MaxMinSystem::fix_variable(std::uint32_t variable, double rate) {
  Variable& x = variables_[variable];
  x.fixed = true;
  x.rate = rate;
  for (const VarElement& e : x.elements) {
    Constraint& k = constraints_[e.constraint];
    k.remaining -= e.coefficient * rate;
    k.unfixed_usage -= e.coefficient * x.weight;
    --k.unfixed;
    ++k.version;
  }
}

void MaxMinSystem::fill() {
  for (const std::uint32_t c : component_constraints_) {
    Constraint& k = constraints_[c];
    k.remaining = k.capacity;
    k.unfixed_usage = 0.0;
    k.demand = 0.0;
    k.unfixed = 0;
    k.version = 0;
  }
  for (const std::uint32_t v : component_variables_) {
    Variable& x = variables_[v];
    x.fixed = false;
    for (const VarElement& e : x.elements) {
      Constraint& k = constraints_[e.constraint];
      k.unfixed_usage += e.coefficient * x.weight;
      k.demand += e.coefficient * x.bound;  // +infinity if a variable is unbounded
      ++k.unfixed;
    }
  }

  heap_.clear();
  for (const std::uint32_t c : component_constraints_) {
    Constraint& k = constraints_[c];
    k.exact_at = k.unfixed;
    // A constraint whose capacity exceeds what its variables can take at their bounds never
    // fixes a rate: while j1..jn are unfixed, R_i >= C_i - sum_fixed a b >= sum_unfixed a b
    // (1 + margin), so L_i = R_i / U_i > min_unfixed b_j / w_j (a mediant), and that bound's
    // key pops first and fixes j. Left out of the heap it changes no rate, no bottleneck flag
    // and no level; the margin (far above the rounding of R_i and L_i) keeps that true in
    // floating point. At 1024 GPUs most links carry a few bounded NCCL transfers well below
    // their capacity: the heap shrinks several-fold.
    if (k.unfixed > 0 && !(k.capacity > 0.0 && k.capacity >= k.demand * (1.0 + kDemandMargin)))
      heap_.push_back(HeapKey{current_key(k, 0.0), c, k.version, false});
  }
  for (const std::uint32_t v : component_variables_) {
    Variable& x = variables_[v];
    if (x.elements.empty()) {
      x.fixed = true;
      x.rate = x.bound;  // +infinity when unbounded: nothing limits it
    } else if (x.bound != kNoBound) {
      heap_.push_back(HeapKey{x.bound / x.weight, v, 0, true});
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), HeapAfter{});

  double level = 0.0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), HeapAfter{});
    const HeapKey key = heap_.back();
    heap_.pop_back();

    if (key.is_bound) {
      Variable& x = variables_[key.index];
      if (x.fixed) continue;
      if (key.level > level * (1.0 + kRelativeEpsilon)) level = key.level;
      fix_variable(key.index, x.bound);
      continue;
    }

    Constraint& k = constraints_[key.index];
    if (k.unfixed == 0) continue;
    if (key.version != k.version) {
      // Keys only grow, so this stale key was a lower bound; re-queue with the current one.
      heap_.push_back(HeapKey{current_key(k, level), key.index, k.version, false});
      std::push_heap(heap_.begin(), heap_.end(), HeapAfter{});
      continue;
    }
    if (key.level > level * (1.0 + kRelativeEpsilon)) level = key.level;
    k.bottleneck = true;
    // Marks: the first marked variable seen, and whether another one (a pair) uses it too
    // (a variable may have several entries on one constraint).
    std::uint32_t marked = kNoMark;
    bool pair = false;
    bool fixed_unmarked = false;
    for (const CnstEntry& e : k.entries) {
      Variable& x = variables_[e.variable];
      if (x.marked) {
        pair = pair || (marked != kNoMark && marked != e.variable);
        marked = e.variable;
      }
      if (!x.fixed) {
        fixed_unmarked = fixed_unmarked || !x.marked;
        fix_variable(e.variable, x.weight * level);
      }
    }
    k.unmarked_beside_marked = k.unmarked_beside_marked || (marked != kNoMark && fixed_unmarked);
    k.beside_marked_pair = k.beside_marked_pair || pair;
  }
}

}  // namespace tawpipe::sim
