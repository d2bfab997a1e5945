#!/usr/bin/env bash
# A calibrated noise trace (profile `noise`, sim/run/noise.h) through tawsim and
# scripts/profiles.py: pooled profiles concatenate their traces unit by unit; tawsim replays it
# on a CPU topology (a note says so, the iteration is slower than at the calibrated rates, and
# --no-noise turns it off); bad input is one line and exit 2.
#   noise.sh TAWSIM_BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
fixture=$src/tests/integration/cli/data/profile.2x2-cpu.yaml
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Two calibrations' traces: 2 cores, 1 ms quanta, the cores slow at alternating moments.
{ cat "$fixture"; printf 'noise:\n  work: "test"\n  quantum: 1ms\n  units:\n'
  printf '    - [%s]\n' "$(yes 1, | head -40 | tr -d '\n')1.5" "$(yes 1.5, | head -40 | tr -d '\n')1"
} >"$dir/a.yaml"
{ cat "$fixture"; printf 'noise:\n  quantum: 3ms\n  units:\n'
  printf '    - [%s]\n' "1.25, 1" "1, 1.25"
} >"$dir/b.yaml"

/usr/bin/python3 "$src/scripts/profiles.py" median -o "$dir/pooled.yaml" "$dir/a.yaml" "$dir/b.yaml"
units=$(/usr/bin/python3 -c '
import sys, yaml
n = yaml.safe_load(open(sys.argv[1]))["noise"]
print(n["quantum"], *(len(u) for u in n["units"]), n["units"][0][-2:], n["units"][1][-2:])' \
  "$dir/pooled.yaml")
[ "$units" = "2000000000ps 43 43 [1.25, 1] [1, 1.25]" ] || fail "pooled trace: $units"

# The summary: b.yaml's unit 0 is [1.25, 1]: mean 1.125, max 1.25, 11.11 % of its time lost.
summary=$(/usr/bin/python3 "$src/scripts/profiles.py" noise "$dir/b.yaml" "$fixture")
echo "$summary" | grep -Eq "^b.yaml +0 +2 +0.01 +1.1250 +1.1250 +1.2250 +1.2475 +1.250 +11.11$" ||
  fail "noise summary: $summary"
echo "$summary" | grep -q "profile.2x2-cpu.yaml *(no noise trace)" || fail "no trace: $summary"

workload=(--topology 2x2-cpu --model cpu-h256 --seq-len 64 --global-batch 16 --set model.layers=4
  --set train.compute_dtype=fp32 --set train.recompute=full --schedule fsdp)
iteration() { # PROFILE [ARGS...]
  local p=$1
  shift
  "$build/sim/tawsim" "${workload[@]}" --profile "$p" --report "$dir/r.json" "$@" >"$dir/out.txt"
  sed -n 's/.*"iteration_time_ps":\([0-9]*\).*/\1/p' "$dir/r.json" | head -1
}
with=$(iteration "$dir/pooled.yaml" --noise-replicates 3)
grep -q "^noise (the profile's FWQ trace replayed on the cores, 3 replicates" "$dir/out.txt" ||
  fail "no noise note: $(cat "$dir/out.txt")"
without=$(iteration "$dir/pooled.yaml" --no-noise)
grep -q "^noise" "$dir/out.txt" && fail "a noise note with --no-noise"
plain=$(iteration "$fixture")
[ "$without" = "$plain" ] || fail "--no-noise $without ps, the profile without a trace $plain ps"
awk -v a="$with" -v b="$without" 'BEGIN { exit !(a > 1.05 * b) }' ||
  fail "noise replayed $with ps, not slower than the calibrated rates' $without ps"

# Bad input: one line, exit 2.
expect2() { # PATTERN ARGS...
  local pattern=$1
  shift
  set +e
  err=$("$build/sim/tawsim" "$@" 2>&1 >/dev/null)
  status=$?
  set -e
  [ "$status" = 2 ] && [ "$(echo "$err" | wc -l)" = 1 ] && echo "$err" | grep -Eq "$pattern" ||
    fail "$*: status $status, '$err'"
}
expect2 "^tawsim: --noise-replicates must be in \[1, 1000\], got 0$" "${workload[@]}" \
  --profile "$dir/pooled.yaml" --noise-replicates 0
{ cat "$fixture"; printf 'noise:\n  quantum: 1ms\n  units:\n    - [1, 2]\n'; } >"$dir/one.yaml"
expect2 "one.yaml: noise.units: 1 unit\(s\), but topology 2x2-cpu has 2 cores per host" \
  "${workload[@]}" --profile "$dir/one.yaml"
"$build/sim/tawsim" "${workload[@]}" --profile "$dir/one.yaml" --no-noise >/dev/null ||
  fail "--no-noise must ignore a trace of another layout"
{ cat "$fixture"; printf 'noise:\n  quantum: 1ms\n  units:\n    - [1, -2]\n'; } >"$dir/neg.yaml"
expect2 "neg.yaml:[0-9]+:[0-9]+: noise.units\[0\]\[1\]" "${workload[@]}" --profile "$dir/neg.yaml"
echo "PASS"
