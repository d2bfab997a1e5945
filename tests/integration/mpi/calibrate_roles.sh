#!/usr/bin/env bash
# calibrate_roles.sh TAWEXEC: `tawexec calibrate --backend host` writes, for every point of every
# broadcast curve, the root's CPU time (root_cpu) and the mean other member's (member_cpu) beside
# the busiest member's (cpu), exec/host/calibrate_comm.cpp; each is at most cpu (one rank's, or
# a mean, against the busiest rank's, batch by batch), and some root costs more than 0. No other
# op has them (the simulator charges them only to broadcasts, sim/run/host_cpu.cpp).
set -u
tawexec=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if ! mpirun --oversubscribe -np 4 "$tawexec" calibrate --topology 2x2-cpu --model tiny \
    --seq-len 32 --seconds 0.02 --noise-seconds 0 -o "$dir/p.yaml" >"$dir/out.txt" 2>&1; then
  echo "tawexec calibrate on 2x2-cpu failed:"; cat "$dir/out.txt"; exit 1
fi
/usr/bin/python3 - "$dir/p.yaml" <<'PY'
import re, sys
UNIT = {"ps": 1, "ns": 1e3, "us": 1e6, "ms": 1e9, "s": 1e12}
def ps(text):
    m = re.fullmatch(r"([0-9.]+)(ps|ns|us|ms|s)", text)
    return float(m.group(1)) * UNIT[m.group(2)]
entries = re.findall(r"- \{op: (\w+), scope: (\w+), ranks: (\d+),.*?points: \[(.*?)\]\}",
                     open(sys.argv[1]).read(), re.S)
bad, broadcasts, positive = [], 0, False
for op, scope, ranks, points in entries:
    for point in re.findall(r"\{([^}]*)\}", points):
        f = dict(kv.split(": ") for kv in point.split(", "))
        has = "root_cpu" in f and "member_cpu" in f
        if op != "broadcast":
            if "root_cpu" in f or "member_cpu" in f:
                bad.append(f"{op} {scope} {ranks}: {point}")
            continue
        broadcasts += 1
        if not has or ps(f["root_cpu"]) > ps(f["cpu"]) or ps(f["member_cpu"]) > ps(f["cpu"]):
            bad.append(f"{op} {scope} {ranks}: {point}")
        elif ps(f["root_cpu"]) > 0:
            positive = True
if not entries or broadcasts == 0 or bad or not positive:
    print(f"{len(entries)} curves, {broadcasts} broadcast points, a root above 0: {positive}")
    print("\n".join(bad[:10]))
    sys.exit(1)
print(f"calibrate broadcast roles: {broadcasts} points: PASSED")
PY
