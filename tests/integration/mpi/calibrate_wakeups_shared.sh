#!/usr/bin/env bash
# calibrate_wakeups_shared.sh TAWEXEC: `tawexec calibrate --backend host` measures the wake-up
# costs with the core's other ranks computing (profile host.wakeup_cost_shared and
# wakeup_cost_long_shared, exec/host/calibrate.cpp measure_wakeups_shared) where ranks share a
# core: on 2x2-cpu (4 ranks, 2 per core) both are in the profile, the short one > 0 (the sleeper
# takes ~1000 wake-ups a segment) and both below 10 ms, and the core-mates stopped (the command
# ended); on localhost-cpu (one rank per core) neither is.
set -u
tawexec=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {
  local np=$1 topology=$2 out=$3
  if ! mpirun --oversubscribe -np "$np" "$tawexec" calibrate --topology "$topology" --model tiny \
      --seq-len 32 --seconds 0.02 --noise-seconds 0 -o "$out" >"$dir/out.txt" 2>&1; then
    echo "tawexec calibrate on $topology failed:"; cat "$dir/out.txt"; exit 1
  fi
}
ps_of() {  # the figure in picoseconds (calibrate writes the shortest exact unit: 0s, ps, ns, ...)
  sed -n "s/^  $1: \([0-9.]*\)\(ps\|ns\|us\|ms\|s\)$/\1 \2/p" "$2" |
    awk '{ f["ps"] = 1; f["ns"] = 1e3; f["us"] = 1e6; f["ms"] = 1e9; f["s"] = 1e12; print $1 * f[$2] }'
}
run 4 2x2-cpu "$dir/shared.yaml"
short=$(ps_of wakeup_cost_shared "$dir/shared.yaml")
long=$(ps_of wakeup_cost_long_shared "$dir/shared.yaml")
[ -n "$short" ] && [ -n "$long" ] || {
  echo "2x2-cpu: no shared wake-up figures:"; sed -n '/^host:/,/^[a-z]/p' "$dir/shared.yaml"; exit 1; }
awk -v s="$short" -v l="$long" 'BEGIN { exit !(s > 0 && s < 1e10 && l >= 0 && l < 1e10) }' || {
  echo "2x2-cpu: shared wake-up figures out of range: $short ps, $long ps"; exit 1; }
run 2 localhost-cpu "$dir/lone.yaml"
grep -q '^  wakeup_cost:' "$dir/lone.yaml" || { echo "localhost-cpu: no wakeup_cost"; exit 1; }
if grep -q '_shared:' "$dir/lone.yaml"; then
  echo "localhost-cpu (one rank per core) has shared wake-up figures"; exit 1
fi
echo "calibrate shared wake-ups: $short ps, long $long ps: PASSED"
