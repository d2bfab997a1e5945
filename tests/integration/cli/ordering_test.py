#!/usr/bin/python3
"""scripts/ordering.py: scripts/validate-host's ordering verdicts (issue 13, acceptance 2)."""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
from ordering import median_ci, pair_verdict, percentile_interval, summary  # noqa: E402

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


# median_ci: n = 10 -> k = 2 (P(Binomial(10, 1/2) < 2) = 11/1024 <= 2.5 % < P(< 3) = 56/1024).
med, lo, hi, cover = median_ci([9, 1, 8, 2, 7, 3, 6, 4, 5, 10])
check("median_ci n=10", (med, lo, hi, round(cover, 4)), (5.5, 2, 9, round(1 - 22 / 1024, 4)))
# n = 5: no 95 % interval; min..max with its coverage 1 - 2/32.
check("median_ci n=5", median_ci([3, 1, 2, 5, 4]), (3, 1, 5, 1 - 2 / 32))
check("percentile_interval", percentile_interval(list(range(200))[::-1]), (5, 194))

# A predicted order (interval above 0) against resolved and unresolved measurements.
check("ordered, same", pair_verdict(False, 0.5, 2.0, 0.2, 3.0, 0.97)[1], "same")
check("ordered, swapped", pair_verdict(False, 0.5, 2.0, -3.0, -0.2, 0.97)[1], "swapped")
check("ordered, noise", pair_verdict(False, 0.5, 2.0, -1.0, 3.0, 0.97)[1], "noise")
check("ordered, few sub-rounds", pair_verdict(False, 0.5, 2.0, 0.2, 3.0, 0.9)[1], "noise")
# A predicted tie (interval contains 0): a measured order is no contradiction unless it lies
# beyond the predicted interval.
check("tie, resolved inside", pair_verdict(False, -1.0, 2.0, 0.5, 1.5, 0.97)[1], "tie-ok")
check("tie, overlapping", pair_verdict(False, -1.0, 2.0, 1.5, 4.0, 0.97)[1], "tie-ok")
check("tie, beyond", pair_verdict(False, -1.0, 2.0, 2.5, 4.0, 0.97)[1], "tie-miss")
check("tie, below", pair_verdict(False, -1.0, 2.0, -5.0, -1.5, 0.97)[1], "tie-miss")
check("tie, few sub-rounds", pair_verdict(False, -1.0, 2.0, 2.5, 4.0, 0.9)[1], "tie-ok")
check("tie at 0", pair_verdict(False, 0.0, 1.0, 0.2, 3.0, 0.97)[1], "tie-ok")
# The same program: consistent when the measured interval contains 0.
check("same program", pair_verdict(True, 0, 0, -0.5, 0.5, 0.97),
      ("a tie by construction (the same program): consistent (the interval contains 0)", "tie"))
check("same program, biased", pair_verdict(True, 0, 0, 0.5, 1.5, 0.97)[0].endswith(
    "the interval excludes 0: a bias of the measurement of this size"), True)

check("summary yes", summary(["same", "tie-ok", "tie"]).split(":")[0], "YES")
check("summary no (swapped)", summary(["same", "swapped"]).split(":")[0], "NO")
check("summary no (tie missed)", summary(["same", "tie-miss"]).split(":")[0], "NO")
check("summary not resolved", summary(["same", "noise", "tie-ok"]).split(":")[0],
      "NOT RESOLVED")
check("summary nothing ordered", summary(["tie-ok", "tie-ok", "tie"]).split(":")[0],
      "NOTHING TO COMPARE")
check("summary counts", summary(["same", "same", "tie-ok", "tie-miss", "tie"]).split("(")[-1],
      "2 pairs in the predicted order, 0 swapped, 0 within noise; predicted ties: 1 consistent, "
      "1 measured outside the predicted interval; 1 ties by construction)")

for f in failures:
    print("FAIL:", f)
print("PASS" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
