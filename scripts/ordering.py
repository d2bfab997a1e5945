"""scripts/validate-host's ordering verdicts: a measured paired gap against a predicted one.

Methods whose programs are equal (twins: TawPipe and TawPipe[grouping=off] on one host) are a
tie by construction, checked as such; against the other methods they are one program, whose
step in a sub-round is the mean of the twins' steps (twin_classes, twin_value), so a pair with a
third method is judged once, on both measurements, rather than twice on each alone.

A pair (a, b) is adjacent in the predicted order (a predicted faster). The prediction gives the
gap (b - a) / a with an interval [plo, phi] (the pooled profile's bootstrap interval, or the
range over calibrations); the measurement gives the median paired gap with its ~95 % interval
[lo, hi] of coverage `cover` (median_ci).
"""
import math
import statistics


# Two intervals at this level that do not overlap: about a 5 % test of the difference of the
# two quantities (for intervals of similar widths; Goldstein & Healy 1995, Payton et al. 2003),
# as strong as the ~95 % interval against 0 that decides a predicted order.
TIE_LEVEL = 0.834


def median_ci(xs, level=0.95):
    """The median and a distribution-free confidence interval for it: the k-th smallest and
    k-th largest values, k the largest with P(Binomial(n, 1/2) < k) <= (1 - level) / 2; its
    coverage (below `level` when there are too few values for such an interval)."""
    xs, n = sorted(xs), len(xs)
    tail, k = 0.0, 0
    while True:
        p = tail + math.comb(n, k) / 2 ** n
        if p > (1 - level) / 2 or k + 1 > n // 2:
            break
        tail, k = p, k + 1
    if k == 0:  # too few values for the interval: min..max, with its (lower) coverage
        return statistics.median(xs), xs[0], xs[-1], 1 - 2 / 2 ** n
    return statistics.median(xs), xs[k - 1], xs[n - k], 1 - 2 * tail


def percentile_interval(xs, level=0.95):
    """The central `level` interval of a sample (bootstrap replicates): its order statistics."""
    xs = sorted(xs)
    tail = (1 - level) / 2
    return xs[int(tail * len(xs))], xs[max(0, math.ceil((1 - tail) * len(xs)) - 1)]


def pair_verdict(same_program, predicted, measured):
    """(verdict text, kind) of one pair. predicted: samples of the predicted gap (bootstrap
    replicates of the pooled prediction, or the calibrations' own gaps); measured: the paired
    gaps of the sub-rounds. Kinds: tie (by construction), same, swapped, noise (a predicted
    order against the measured ~95 % interval), tie-ok / tie-miss (a predicted tie, its ~95 %
    interval containing 0, against the measurement: missed when the ~83 % intervals of the two
    do not overlap)."""
    med, lo, hi, cover = median_ci(measured)
    plo, phi = percentile_interval(predicted)
    if same_program:
        ok = lo <= 0 <= hi or cover < 0.95
        return ("a tie by construction (the same program): " +
                ("consistent (the interval contains 0)" if ok
                 else "the interval excludes 0: a bias of the measurement of this size"), "tie")
    if plo <= 0:
        # The calibrations' noise moves the predicted gap across 0: no predicted order. The
        # measurement can still show that the model misses the pair.
        _, mlo, mhi, mcover = median_ci(measured, TIE_LEVEL)
        tlo, thi = percentile_interval(predicted, TIE_LEVEL)
        text = (f"predicted tie (its interval contains 0); measured median {med:+.1f}% against "
                f"the predicted [{plo:+.1f}, {phi:+.1f}]; ~83 % intervals: measured [{mlo:+.1f}, "
                f"{mhi:+.1f}], predicted [{tlo:+.1f}, {thi:+.1f}]")
        if mcover >= TIE_LEVEL and (mlo > thi or mhi < tlo):
            return (text + ": apart, the model misses this pair by more than the calibrations' "
                    "noise", "tie-miss")
        return text + (": they overlap, consistent" if mcover >= TIE_LEVEL
                       else ": too few sub-rounds to tell"), "tie-ok"
    if cover < 0.95:
        return "within noise (too few sub-rounds for a 95 % interval)", "noise"
    if lo > 0:
        return "same order (resolved)", "same"
    if hi < 0:
        return "SWAPPED (resolved)", "swapped"
    return "within noise", "noise"


def twin_classes(methods, same):
    """The methods grouped by program: `same` holds the pairs (a, b) whose IRs are equal (a tie
    by construction; validate-host's same.tsv), and the groups are their transitive closure, each
    a tuple in the order of `methods`, the groups in the order of their first member."""
    group = {m: {m} for m in methods}
    for a, b in same:
        if a in group and b in group and group[a] is not group[b]:
            merged = group[a] | group[b]
            for m in merged:
                group[m] = merged
    out, seen = [], set()
    for m in methods:
        if m not in seen:
            out.append(tuple(x for x in methods if x in group[m]))
            seen |= group[m]
    return out


def twin_name(cls):
    """A group's name in the verdicts: its method, or its members in braces."""
    return cls[0] if len(cls) == 1 else "{" + ", ".join(cls) + "}"


def twin_value(values, cls):
    """A group's value from its members' (a dict method -> number): their mean, the same program
    measured (or predicted) once per member; None unless every member has one."""
    if any(m not in values for m in cls):
        return None
    return sum(values[m] for m in cls) / len(cls)


def twin_gap(values, a, b):
    """The gap (b - a) / a in % between two groups' values (twin_value), or None unless both
    have one."""
    va, vb = twin_value(values, a), twin_value(values, b)
    return None if va is None or vb is None else (vb - va) / va * 100


def summary(kinds, others=None):
    """The answer to "measured ordering = predicted ordering?" from the pairs' kinds: it names
    how many adjacent pairs the prediction orders at all, so that a YES over predicted ties is
    not read as a full ordering. `others`: the kinds of the non-adjacent pairs. Ties are not
    transitive (a ~ b and b ~ c say nothing of a against c), so with predicted ties the
    adjacent pairs alone do not decide the ordering: every other pair must be consistent too."""
    kinds_of = ("same", "swapped", "noise", "tie", "tie-ok", "tie-miss")
    n = {k: kinds.count(k) for k in kinds_of}
    o = {k: list(others or []).count(k) for k in kinds_of}
    ordered = n["same"] + n["swapped"] + n["noise"]
    ties = n["tie-ok"] + n["tie-miss"]
    counts = (f"the prediction orders {ordered} of {ordered + ties} adjacent pairs: {n['same']} "
              f"measured in that order, {n['swapped']} swapped, {n['noise']} within noise; "
              f"{ties} predicted ties: {n['tie-ok']} consistent, {n['tie-miss']} missed; "
              f"{n['tie']} ties by construction")
    if others is not None:
        counts += (f"; the {len(others)} other pairs: {o['same'] + o['tie-ok'] + o['tie']} "
                   f"consistent, {o['swapped']} swapped, {o['tie-miss']} predicted ties missed, "
                   f"{o['noise']} within noise")
    if n["swapped"] or n["tie-miss"] or o["swapped"] or o["tie-miss"]:
        return f"NO: the measured ordering differs from the predicted one ({counts})"
    if n["noise"] or o["noise"]:
        return (f"NOT RESOLVED: no pair is swapped, but some that the prediction orders are "
                f"within the measurement's noise ({counts})")
    if ordered == 0:
        return ("NOTHING TO COMPARE: the prediction orders no adjacent pair beyond its "
                f"calibrations' noise ({counts})")
    return (f"YES for the {n['same']} of {ordered + ties} adjacent pairs the prediction orders, "
            f"each measured in that order ({counts})")
