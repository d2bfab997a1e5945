/// \file
/// Weighted max-min fair sharing of resources among variables, solved by progressive filling.
///
/// This module knows nothing about GPUs, links or collectives; it is modelled on SimGrid's
/// `src/kernel/lmm/` solver. The network model maps links (capacity x efficiency, bytes/s per
/// direction) to constraints and flows or rings to variables, but any "rate-sharing" resource
/// fits.
///
/// ## The system
///
/// A system holds
///  - constraints i with capacity C_i >= 0 (a rate: bytes/s for links);
///  - variables j with a weight w_j > 0 (default 1) and a bound b_j in [0, +inf] (default +inf);
///  - elements (i, j) with coefficient a_ij > 0, meaning "variable j uses constraint i, a_ij units
///    of i per unit of j's rate". Adding the same pair twice is equivalent to one element with
///    the summed coefficient.
///
/// A ring collective over P ranks is ONE variable with one element (coefficient 1) on each of
/// its P directed edges: every edge carries the same bytes, so the slowest (or most shared) edge
/// paces the whole ring, and the solver work is O(P) instead of O(P^2) flows.
///
/// A rate vector x is feasible when
///     sum_j a_ij x_j <= C_i   for every constraint i,      0 <= x_j <= b_j   for every j.
///
/// ## Weighted max-min fairness
///
/// Write x_j = w_j * l_j; l_j is j's "level". A feasible x is weighted max-min fair when no level
/// can be raised without lowering a level that is already smaller or equal. Equivalently (the
/// bottleneck characterisation, tested by the property test), every variable j either sits at
/// its bound (x_j = b_j), or has a bottleneck: a constraint i with a_ij > 0 that is saturated
/// (sum_k a_ik x_k = C_i) and on which j's level is maximal (l_j >= l_k for every k on i).
/// Such an allocation exists and is unique; for w = 1 and a = 1 it is the classic max-min fair
/// allocation of Bertsekas & Gallager, "Data Networks", section 6.5.2.
///
/// ## Progressive filling
///
/// Raise one common level L for all unfixed variables, starting from 0. For constraint i let
///     R_i = C_i - sum_{j fixed} a_ij x_j          (capacity left by fixed variables)
///     U_i = sum_{j unfixed} a_ij w_j              (how fast unfixed variables consume it)
/// Constraint i saturates when L reaches  L_i = R_i / U_i;  an unfixed bounded variable j
/// reaches its bound when L reaches  b_j / w_j.  Repeat until every variable is fixed:
///   1. L* = the smallest of all L_i (over constraints with unfixed variables) and b_j / w_j
///      (over unfixed variables);
///   2. if it is a bound, fix that variable at x_j = b_j; if it is a constraint, fix every
///      unfixed variable on it at x_j = w_j * L*;
///   3. update R and U of the constraints those variables use.
/// Fixing a variable at a level L* <= L_i never lowers L_i (R_i >= U_i L* implies
/// (R_i - a w L*) / (U_i - a w) >= R_i / U_i), so levels are found in non-decreasing order.
///
/// Implementation: a binary min-heap of (L_i, constraint) and (b_j / w_j, variable) keys. Since
/// keys only grow, a stale key is a lower bound and is refreshed lazily: when an outdated entry
/// reaches the top it is re-pushed with its current key, instead of pushing on every update.
/// Cost per solve: O((V + E) + (C + B + S) log(C + B)) for V variables, E elements, C
/// constraints, B bounded variables and S stale re-pushes (S <= number of fixing steps x C in
/// theory, typically a small multiple of C).
///
/// ## Incremental solving
///
/// Variables interact only through shared constraints. Adding or removing a variable, an
/// element, a bound or a capacity marks the touched constraints (or the lone variable) dirty.
/// `solve()` collects the connected components of the dirty items (constraint <-> variable
/// graph, by breadth-first search), re-runs progressive filling on those components only, and
/// returns the variables whose rate changed, so the network model reschedules only their
/// completion events. Everything is stored in flat vectors with index free lists; ids of removed
/// items are reused.
///
/// ## Numerical care
///
/// All arithmetic is double precision. Let eps = `kRelativeEpsilon` (1e-12).
///  - A constraint whose remaining capacity R_i is <= eps * C_i is saturated at the current
///    level (its unfixed variables are fixed there) instead of yielding a level from a residue
///    that is pure rounding noise; this mirrors SimGrid's `sg_maxmin_precision` rule.
///  - Keys within a relative eps of the current level are snapped to it, so variables tied at
///    one bottleneck get bitwise-equal rates and rates never decrease with rounding.
///  - R_i and U_i are updated by subtraction, which loses relative precision once most of a
///    constraint's variables are fixed; they are recomputed exactly from the constraint's
///    elements whenever its unfixed count halves (amortised O(degree) per constraint).
/// Rates are thus exact to a small multiple of machine epsilon times the number of steps, far
/// inside the 1e-9 the tests demand.
///
/// ## Special cases
///  - A variable with no elements gets its bound, or +infinity if unbounded.
///  - A constraint of capacity 0 gives its variables rate 0.
///
/// Thread safety: none; one system per simulation. No global state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace tawpipe::sim {

/// Names a constraint of one `MaxMinSystem`. Reused after `remove_constraint`.
struct ConstraintId {
  static constexpr std::uint32_t kInvalid = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t index = kInvalid;

  constexpr bool valid() const { return index != kInvalid; }
  friend constexpr auto operator<=>(const ConstraintId&, const ConstraintId&) = default;
};

/// Names a variable of one `MaxMinSystem`. Reused after `remove_variable`.
struct VariableId {
  static constexpr std::uint32_t kInvalid = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t index = kInvalid;

  constexpr bool valid() const { return index != kInvalid; }
  friend constexpr auto operator<=>(const VariableId&, const VariableId&) = default;
};

/// "No bound": the variable is limited by its constraints only.
inline constexpr double kNoBound = std::numeric_limits<double>::infinity();

/// What the last `solve()` did, for tests, benchmarks and profiling.
struct SolveStats {
  std::size_t components = 0;   ///< connected components re-solved
  std::size_t variables = 0;    ///< variables whose rate was recomputed
  std::size_t constraints = 0;  ///< constraints in those components
  std::size_t elements = 0;     ///< elements in those components
  std::size_t changed = 0;      ///< variables whose rate changed (the size of solve()'s result)
};

/// A max-min fair sharing system, solved incrementally. See the file comment for the maths.
///
/// Rates and capacities share one unit chosen by the caller (bytes/s in the network model).
/// Preconditions are checked with assert: violating them is a bug in the caller.
class MaxMinSystem {
 public:
  /// Relative tolerance of the saturation and tie rules (see "Numerical care").
  static constexpr double kRelativeEpsilon = 1e-12;
  /// Relative margin by which a constraint's capacity must exceed the summed bounds of its
  /// variables to be left out of progressive filling (it can then never fix a rate).
  static constexpr double kDemandMargin = 1e-9;

  // --- Constraints ---------------------------------------------------------------------------

  /// Adds a constraint of `capacity` (finite, >= 0). O(1) amortised.
  ConstraintId add_constraint(double capacity);

  /// Changes a constraint's capacity (finite, >= 0); its component is re-solved next time.
  void set_capacity(ConstraintId c, double capacity);

  /// Removes a constraint. Precondition: no variable uses it any more. Its id may be reused.
  void remove_constraint(ConstraintId c);

  /// The capacity given to `add_constraint`/`set_capacity`.
  double capacity(ConstraintId c) const;

  /// sum_j a_ij x_j with the rates of the last solve: the constraint's used capacity. O(degree).
  double usage(ConstraintId c) const;

  /// Number of elements on the constraint (its variables, counting repeated pairs).
  std::size_t degree(ConstraintId c) const;

  /// True if some solve since the constraint was added fixed a variable's rate at it (it was
  /// saturated and the variable's share was the largest on it). A constraint that never was a
  /// bottleneck can be dropped from every solve so far without changing any rate
  /// (sim/symmetry/symmetry.h relies on this).
  bool was_bottleneck(ConstraintId c) const;

  /// True if some solve fixed an unmarked variable's rate at the constraint while a marked
  /// variable (`set_marked`) used it.
  bool fixed_unmarked_beside_marked(ConstraintId c) const;

  /// True if some solve fixed rates at the constraint while two or more marked variables used it.
  bool fixed_beside_marked_pair(ConstraintId c) const;

  // --- Variables -----------------------------------------------------------------------------

  /// Adds a variable of `weight` (finite, > 0) and `bound` (>= 0, `kNoBound` for none), with no
  /// elements yet. Its rate is 0 until the next `solve()`, which reports it as changed.
  VariableId add_variable(double weight = 1.0, double bound = kNoBound);

  /// Makes variable `v` use constraint `c` with `coefficient` (finite, > 0). Adding an existing
  /// pair again adds to its coefficient. O(1) amortised.
  void expand(VariableId v, ConstraintId c, double coefficient = 1.0);

  /// Changes a variable's bound (>= 0, `kNoBound` for none).
  void set_bound(VariableId v, double bound);

  /// Changes a variable's weight (finite, > 0).
  void set_weight(VariableId v, double weight);

  /// Marks a variable (a new one is unmarked). A mark changes no rate; it only feeds the
  /// constraints' records `fixed_unmarked_beside_marked` and `fixed_beside_marked_pair` (replica
  /// symmetry marks the cross-replica collectives, sim/symmetry/symmetry.h).
  void set_marked(VariableId v, bool marked);

  /// Removes a variable and its elements; the constraints it used are re-solved next time.
  /// O(its degree). Its id may be reused.
  void remove_variable(VariableId v);

  double weight(VariableId v) const;
  double bound(VariableId v) const;

  /// The rate from the last `solve()` (0 for a variable added since). Unit: capacity's unit.
  double rate(VariableId v) const;

  /// Number of elements of the variable.
  std::size_t degree(VariableId v) const;

  // --- Solving -------------------------------------------------------------------------------

  /// Re-solves the components touched since the last solve and returns the variables whose rate
  /// changed (bitwise), plus every variable added since, sorted by id. The span is valid until
  /// the next non-const call. Returns an empty span when nothing is dirty.
  std::span<const VariableId> solve();

  /// Marks everything dirty so that the next `solve()` recomputes the whole system.
  void invalidate_all();

  /// True if a change is waiting for `solve()`.
  bool dirty() const { return !dirty_constraints_.empty() || !dirty_variables_.empty(); }

  /// Statistics of the last `solve()`.
  const SolveStats& last_solve_stats() const { return stats_; }

  std::size_t constraint_count() const { return constraints_.size() - free_constraints_.size(); }
  std::size_t variable_count() const { return variables_.size() - free_variables_.size(); }

 private:
  /// Element as seen from its variable.
  struct VarElement {
    std::uint32_t constraint;
    std::uint32_t position;  ///< index in the constraint's `entries`
    double coefficient;
  };
  /// Element as seen from its constraint (the coefficient is duplicated to avoid an indirection
  /// in the solver's inner loops).
  struct CnstEntry {
    std::uint32_t variable;
    std::uint32_t slot;  ///< index in the variable's `elements`
    double coefficient;
  };
  struct Constraint {
    double capacity = 0.0;
    std::vector<CnstEntry> entries;
    // Solver scratch, meaningful during a solve of the constraint's component.
    double remaining = 0.0;      ///< R_i
    double unfixed_usage = 0.0;  ///< U_i
    double demand = 0.0;         ///< sum_j a_ij b_j over the component's variables (fill)
    std::uint32_t unfixed = 0;   ///< unfixed elements on it
    std::uint32_t exact_at = 0;  ///< `unfixed` when R_i and U_i were last recomputed exactly
    std::uint32_t version = 0;   ///< bumped when R_i or U_i change, to spot stale heap keys
    std::uint32_t visit = 0;     ///< BFS epoch stamp
    bool live = false;
    bool dirty = false;
    bool bottleneck = false;  ///< fixed a variable's rate in some solve (see was_bottleneck)
    bool unmarked_beside_marked = false;  ///< see fixed_unmarked_beside_marked
    bool beside_marked_pair = false;      ///< see fixed_beside_marked_pair
  };
  struct Variable {
    double weight = 1.0;
    double bound = kNoBound;
    double rate = 0.0;
    std::vector<VarElement> elements;
    std::uint32_t visit = 0;
    bool live = false;
    bool dirty = false;
    bool fresh = false;   ///< added since the last solve
    bool fixed = false;   ///< solver scratch
    bool marked = false;  ///< set_marked
  };
  /// A heap key: the level at which a constraint saturates or a variable reaches its bound.
  struct HeapKey {
    double level;
    std::uint32_t index;
    std::uint32_t version;  ///< constraints only
    bool is_bound;          ///< true: a variable's bound; false: a constraint
  };
  /// The heap's order (a function object, so that the std heap algorithms inline it).
  struct HeapAfter {
    bool operator()(const HeapKey& a, const HeapKey& b) const;
  };

  Constraint& cnst(ConstraintId c);
  const Constraint& cnst(ConstraintId c) const;
  Variable& var(VariableId v);
  const Variable& var(VariableId v) const;
  void mark_dirty(std::uint32_t constraint);
  void mark_dirty_variable(std::uint32_t variable);
  void collect_component_from_constraint(std::uint32_t constraint);
  void collect_component_from_variable(std::uint32_t variable);
  void visit_variable(std::uint32_t variable);
  void fill();
  void fix_variable(std::uint32_t variable, double rate);
  double current_key(Constraint& c, double level);
  void recompute_exact(Constraint& c);

  std::vector<Constraint> constraints_;
  std::vector<Variable> variables_;
  std::vector<std::uint32_t> free_constraints_;
  std::vector<std::uint32_t> free_variables_;
  std::vector<std::uint32_t> dirty_constraints_;
  std::vector<std::uint32_t> dirty_variables_;

  // Scratch reused across solves so that steady-state solving does not allocate.
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> bfs_stack_;
  std::vector<std::uint32_t> component_constraints_;
  std::vector<std::uint32_t> component_variables_;
  std::vector<double> previous_rates_;
  std::vector<HeapKey> heap_;
  std::vector<VariableId> changed_;
  SolveStats stats_;
};

}  // namespace tawpipe::sim
