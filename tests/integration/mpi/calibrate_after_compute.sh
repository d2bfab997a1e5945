#!/usr/bin/env bash
# calibrate_after_compute.sh TAWEXEC: `tawexec calibrate --backend host` measures every curve that
# it measures cold once more after each of two compute bursts (profile after_compute, exec/host/
# calibrate_comm.h): one layer's GEMMs and the rank's block's (--layers-per-rank 2), the second
# longer; at the cold curve's sizes; broadcasts with the root's and a member's CPU times; and
# tawsim reads the profile.
set -u
tawexec=$1
tawsim=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if ! mpirun --oversubscribe -np 4 "$tawexec" calibrate --topology 2x2-cpu --model tiny \
    --seq-len 32 --layers-per-rank 2 --seconds 0.02 --noise-seconds 0 -o "$dir/p.yaml" \
    >"$dir/out.txt" 2>&1; then
  echo "tawexec calibrate on 2x2-cpu failed:"; cat "$dir/out.txt"; exit 1
fi
/usr/bin/python3 - "$dir/p.yaml" <<'PY' || exit 1
import re, sys
UNIT = {"ps": 1, "ns": 1e3, "us": 1e6, "ms": 1e9, "s": 1e12}
def ps(text):
    m = re.fullmatch(r"([0-9.]+)(ps|ns|us|ms|s)", text)
    return float(m.group(1)) * UNIT[m.group(2)]
entries = re.findall(r"- \{op: (\w+), scope: (\w+), ranks: (\d+)(.*?),\s*points: \[(.*?)\]\}",
                     open(sys.argv[1]).read(), re.S)
cold, after = {}, {}
for op, scope, ranks, extra, points in entries:
    sizes = re.findall(r"size: (\w+)", points)
    key = (op, scope, ranks)
    if "cold_pool" in extra:
        cold[key] = sizes
    m = re.search(r"after_compute: (\w+)", extra)
    if m:
        if op == "broadcast" and ("root_cpu" not in points or "member_cpu" not in points):
            sys.exit(f"{key}: an after-compute broadcast curve without roles")
        after.setdefault(key, []).append((ps(m.group(1)), sizes))
if not cold:
    sys.exit("no cold curves")
for key, sizes in cold.items():
    a = after.get(key, [])
    if len(a) != 2:
        sys.exit(f"{key}: {len(a)} after-compute curves, not 2")
    if not 0 < a[0][0] < a[1][0]:
        sys.exit(f"{key}: bursts {a[0][0]} ps, {a[1][0]} ps: not positive and increasing")
    if any(s != sizes for _, s in a):
        sys.exit(f"{key}: after-compute sizes {[s for _, s in a]} against the cold {sizes}")
if set(after) != set(cold):
    sys.exit(f"after-compute curves {sorted(after)} against cold {sorted(cold)}")
print(f"calibrate after compute: {len(after)} curves x 2 bursts: PASSED")
PY
"$tawsim" --topology 2x2-cpu --model tiny --seq-len 32 --schedule fsdp --profile "$dir/p.yaml" \
    >"$dir/sim.txt" 2>&1 || { echo "tawsim rejects the profile:"; cat "$dir/sim.txt"; exit 1; }
