#!/usr/bin/python3
"""scripts/ordering.py: scripts/validate-host's ordering verdicts (issue 13, acceptance 2)."""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
from ordering import (median_ci, pair_verdict, percentile_interval, summary,  # noqa: E402
                      twin_classes, twin_gap, twin_name, twin_value)

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


# median_ci: n = 10 -> k = 2 (P(Binomial(10, 1/2) < 2) = 11/1024 <= 2.5 % < P(< 3) = 56/1024).
med, lo, hi, cover = median_ci([9, 1, 8, 2, 7, 3, 6, 4, 5, 10])
check("median_ci n=10", (med, lo, hi, round(cover, 4)), (5.5, 2, 9, round(1 - 22 / 1024, 4)))
# At ~83 %: k = 3 (P(< 3) = 56/1024 <= 8.3 % < P(< 4) = 176/1024).
check("median_ci n=10 at 83 %", median_ci(list(range(1, 11)), 0.834)[1:3], (3, 8))
# n = 5: no 95 % interval; min..max with its coverage 1 - 2/32.
check("median_ci n=5", median_ci([3, 1, 2, 5, 4]), (3, 1, 5, 1 - 2 / 32))
check("percentile_interval", percentile_interval(list(range(200))[::-1]), (5, 194))
check("percentile_interval 83 %", percentile_interval(list(range(200)), 0.834), (16, 183))


def measured(center, spread=1.0, n=20):
    """n paired gaps around `center`, evenly spread over +-spread."""
    return [center + spread * (2 * i / (n - 1) - 1) for i in range(n)]


def predicted(lo, hi, n=200):
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


# A predicted order (interval above 0) against resolved and unresolved measurements.
order = predicted(0.5, 2.0)
check("ordered, same", pair_verdict(False, order, measured(2.0))[1], "same")
check("ordered, swapped", pair_verdict(False, order, measured(-2.0))[1], "swapped")
check("ordered, noise", pair_verdict(False, order, measured(0.0))[1], "noise")
check("ordered, few sub-rounds", pair_verdict(False, order, measured(2.0, n=5))[1], "noise")
# A predicted tie (interval contains 0): missed when the ~83 % intervals do not overlap. The
# lead's example: a predicted [-0.5, +1.0] against a measured -4.8 % (its 95 % interval reaching
# -0.4, overlapping the predicted one) is a miss.
tie = predicted(-0.5, 1.0)
check("tie, inside", pair_verdict(False, tie, measured(0.5))[1], "tie-ok")
check("tie, overlapping at 83 %", pair_verdict(False, tie, measured(1.2))[1], "tie-ok")
check("tie, apart", pair_verdict(False, tie, measured(3.0))[1], "tie-miss")
# Ten sub-rounds: median -4.8, ~95 % interval [-10.8, -0.4], ~83 % [-8, -2].
lead = [-12, -10.8, -8, -6, -5, -4.6, -3, -2, -0.4, 1.0]
check("lead's example: intervals", (median_ci(lead)[:3], median_ci(lead, 0.834)[1:3]),
      ((-4.8, -10.8, -0.4), (-8, -2)))
check("lead's example: 95 % intervals overlap", median_ci(lead)[2] > -0.5, True)
check("lead's example", pair_verdict(False, tie, lead)[1], "tie-miss")
check("tie, few sub-rounds", pair_verdict(False, tie, measured(5.0, n=3))[1], "tie-ok")
check("tie at 0", pair_verdict(False, [0.0] * 100 + predicted(0.0, 1.0, 100), measured(0.5))[1],
      "tie-ok")
check("tie text", "measured median +3.0% against the predicted [-0.5, +1.0]" in
      pair_verdict(False, tie, measured(3.0))[0], True)
# The same program: consistent when the measured interval contains 0.
check("same program", pair_verdict(True, [0.0], measured(0.0)),
      ("a tie by construction (the same program): consistent (the interval contains 0)", "tie"))
check("same program, biased", pair_verdict(True, [0.0], measured(3.0))[0].endswith(
    "the interval excludes 0: a bias of the measurement of this size"), True)

check("summary yes", summary(["same", "tie-ok", "tie"]).split(":")[0],
      "YES for the 1 of 2 adjacent pairs the prediction orders, each measured in that order (the "
      "prediction orders 1 of 2 adjacent pairs")
check("summary no (swapped)", summary(["same", "swapped"]).split(":")[0], "NO")
check("summary no (tie missed)", summary(["same", "tie-miss"]).split(":")[0], "NO")
check("summary not resolved", summary(["same", "noise", "tie-ok"]).split(":")[0],
      "NOT RESOLVED")
check("summary nothing ordered", summary(["tie-ok", "tie-ok", "tie"]).split(":")[0],
      "NOTHING TO COMPARE")
check("summary counts", summary(["same", "same", "tie-ok", "tie-miss", "tie"]).split("(")[-1],
      "the prediction orders 2 of 4 adjacent pairs: 2 measured in that order, 0 swapped, 0 within "
      "noise; 2 predicted ties: 1 consistent, 1 missed; 1 ties by construction)")

# Ties are not transitive: adjacent pairs all consistent, yet another pair missed or swapped.
check("summary other pair missed", summary(["same", "tie-ok"], ["tie-miss"]).split(":")[0], "NO")
check("summary other pair swapped", summary(["same", "tie-ok"], ["swapped"]).split(":")[0], "NO")
check("summary other pair in noise", summary(["same", "tie-ok"], ["noise"]).split(":")[0],
      "NOT RESOLVED")
check("summary others consistent", summary(["same", "tie-ok"], ["same", "tie-ok"]).split("(")[-1],
      "the prediction orders 1 of 2 adjacent pairs: 1 measured in that order, 0 swapped, 0 within "
      "noise; 1 predicted ties: 1 consistent, 0 missed; 0 ties by construction; the 2 other pairs: "
      "2 consistent, 0 swapped, 0 predicted ties missed, 0 within noise)")

# Twins (equal programs) are one program against the others: the closure of the pairs, in the
# methods' order; a group's value is its members' mean, None unless all have one.
methods = ["t", "t[g=off]", "w", "t[o=off]", "f"]
check("twin classes", twin_classes(methods, {("t[g=off]", "t")}),
      [("t", "t[g=off]"), ("w",), ("t[o=off]",), ("f",)])
check("twin classes transitive", twin_classes(methods, {("t", "t[g=off]"), ("f", "t[g=off]")}),
      [("t", "t[g=off]", "f"), ("w",), ("t[o=off]",)])
check("no twins", twin_classes(methods, set()), [(m,) for m in methods])
check("twins of another layout's methods", twin_classes(["a", "b"], {("a", "x")}), [("a",), ("b",)])
check("twin name", (twin_name(("w",)), twin_name(("t", "t[g=off]"))), ("w", "{t, t[g=off]}"))
check("twin value", twin_value({"t": 100.0, "t[g=off]": 104.0, "w": 1.0}, ("t", "t[g=off]")), 102.0)
check("twin value missing", twin_value({"t": 100.0}, ("t", "t[g=off]")), None)
check("twin gap", twin_gap({"t": 100.0, "t[g=off]": 104.0, "w": 112.2}, ("t", "t[g=off]"), ("w",)),
      (112.2 - 102.0) / 102.0 * 100)
check("twin gap missing", twin_gap({"t": 100.0, "w": 110.0}, ("t", "t[g=off]"), ("w",)), None)

for f in failures:
    print("FAIL:", f)
print("PASS" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
