#!/usr/bin/env python3
"""calibrate_noise.py PROFILE UNITS SPAN: checks the noise section of a calibrated profile
(common/profile/profile.h, NoiseTrace) as exec/host/calibrate_noise.h measures it: UNITS units,
each non-empty, every stretch > 0, the median stretch over all units within 0.95..1.05, and each
unit's stretches x quantum summing to SPAN seconds within 20 %. Reads the writer's layout
(common/profile/profile_write.cpp) without a YAML library. Exit 1 with a reason on failure."""
import re
import sys

UNITS = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def fail(message):
    print(f"calibrate_noise.py: {message}")
    sys.exit(1)


def parse_noise(text):
    lines = text.splitlines()
    try:
        start = lines.index("noise:")
    except ValueError:
        fail("the profile has no noise section")
    section = []
    for line in lines[start + 1:]:
        if line and not line.startswith(" "):
            break  # the next top-level key
        section.append(line)
    body = "\n".join(section)
    work = re.search(r'^  work: "(.*)"$', body, re.M)
    quantum = re.search(r"^  quantum: ([0-9.]+)(ps|ns|us|ms|s)$", body, re.M)
    if not quantum:
        fail("the noise section has no quantum")
    units_at = body.find("\n  units:\n")
    if units_at < 0:
        fail("the noise section has no units")
    units = [
        [float(x) for x in re.split(r"[,\s]+", m.group(1).strip()) if x]
        for m in re.finditer(r"^    - \[(.*?)\]", body[units_at:], re.M | re.S)
    ]
    seconds = float(quantum.group(1)) * UNITS[quantum.group(2)]
    return (work.group(1) if work else ""), seconds, units


def main():
    path, want_units, span = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    with open(path, encoding="utf-8") as f:
        work, quantum, units = parse_noise(f.read())
    if not work.startswith("sgemm "):
        fail(f"the noise work should describe the sgemm quantum, got '{work}'")
    if not 1e-4 < quantum < 1e-2:
        fail(f"quantum {quantum * 1e3:.3f} ms is not about 1 ms")
    if len(units) != want_units:
        fail(f"expected {want_units} units (one per core), got {len(units)}")
    for i, unit in enumerate(units):
        if not unit:
            fail(f"unit {i} is empty")
        if min(unit) <= 0:
            fail(f"unit {i} has a stretch <= 0: {min(unit)}")
        covered = sum(unit) * quantum
        if abs(covered - span) > 0.2 * span:
            fail(f"unit {i}: {len(unit)} quanta cover {covered:.3f} s, not the {span} s span")
    everything = sorted(x for unit in units for x in unit)
    median = everything[len(everything) // 2]
    if not 0.95 <= median <= 1.05:
        fail(f"median stretch {median} is not ~1")
    print(f"noise: {len(units)} units of {[len(u) for u in units]} quanta, quantum "
          f"{quantum * 1e3:.3f} ms, median stretch {median}")


if __name__ == "__main__":
    main()
