"""scripts/validate-host's ordering verdicts: a measured paired gap against a predicted one.

A pair (a, b) is adjacent in the predicted order (a predicted faster). The prediction gives the
gap (b - a) / a with an interval [plo, phi] (the pooled profile's bootstrap interval, or the
range over calibrations); the measurement gives the median paired gap with its ~95 % interval
[lo, hi] of coverage `cover` (median_ci).
"""
import math
import statistics


def median_ci(xs):
    """The median and a distribution-free confidence interval for it: the k-th smallest and
    k-th largest values, k the largest with P(Binomial(n, 1/2) < k) <= 2.5 %; its coverage."""
    xs, n = sorted(xs), len(xs)
    tail, k = 0.0, 0
    while True:
        p = tail + math.comb(n, k) / 2 ** n
        if p > 0.025 or k + 1 > n // 2:
            break
        tail, k = p, k + 1
    if k == 0:  # too few values for a 95 % interval: min..max, with its (lower) coverage
        return statistics.median(xs), xs[0], xs[-1], 1 - 2 / 2 ** n
    return statistics.median(xs), xs[k - 1], xs[n - k], 1 - 2 * tail


def percentile_interval(xs, level=0.95):
    """The central `level` interval of a sample (bootstrap replicates): its order statistics."""
    xs = sorted(xs)
    tail = (1 - level) / 2
    return xs[int(tail * len(xs))], xs[max(0, math.ceil((1 - tail) * len(xs)) - 1)]


def pair_verdict(same_program, plo, phi, lo, hi, cover):
    """(verdict text, kind); kind: tie (by construction), tie-ok / tie-miss (a predicted tie and
    the measurement consistent with it or outside its interval), noise, same, swapped."""
    if same_program:
        ok = lo <= 0 <= hi or cover < 0.95
        return ("a tie by construction (the same program): " +
                ("consistent (the interval contains 0)" if ok
                 else "the interval excludes 0: a bias of the measurement of this size"), "tie")
    if plo <= 0:
        # The calibrations' noise moves the predicted gap across 0: no predicted order. The
        # measurement can still show that the model misses the pair: a resolved measured gap
        # outside the predicted interval.
        text = "predicted tie (the predicted interval contains 0)"
        if cover >= 0.95 and (lo > phi or hi < plo):
            return (text + "; the measured gap lies outside the predicted interval: the model "
                    "misses this pair by more than the calibrations' noise", "tie-miss")
        return text + "; the measured gap is consistent with it", "tie-ok"
    if cover < 0.95:
        return "within noise (too few sub-rounds for a 95 % interval)", "noise"
    if lo > 0:
        return "same order (resolved)", "same"
    if hi < 0:
        return "SWAPPED (resolved)", "swapped"
    return "within noise", "noise"


def summary(kinds):
    """The answer to "measured ordering = predicted ordering?" from the pairs' kinds."""
    n = {k: kinds.count(k) for k in ("same", "swapped", "noise", "tie", "tie-ok", "tie-miss")}
    if n["swapped"] or n["tie-miss"]:
        head = "NO: the measured ordering differs from the predicted one"
    elif n["noise"]:
        head = ("NOT RESOLVED: no pair is swapped, but some that the prediction orders are within "
                "the measurement's noise")
    elif n["same"] == 0:
        head = ("NOTHING TO COMPARE: the prediction orders no adjacent pair beyond its "
                "calibrations' noise")
    else:
        head = ("YES: every pair the prediction orders is measured in that order" +
                (", and every predicted tie is consistent with the measurement"
                 if n["tie-ok"] else ""))
    return (f"{head} ({n['same']} pairs in the predicted order, {n['swapped']} swapped, "
            f"{n['noise']} within noise; predicted ties: {n['tie-ok']} consistent, "
            f"{n['tie-miss']} measured outside the predicted interval; {n['tie']} ties by "
            "construction)")
