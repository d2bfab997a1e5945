#!/usr/bin/env bash
# scripts/profiles.py median and scripts/sensitivity on three variants of one calibration that
# differ in two figures: op_overhead 1/2/9 us and wakeup_cost_long 0/10/30 us (the middle variant
# holds both medians).
#   sensitivity.sh TAWSIM_BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
fixture=$src/tests/integration/cli/data/profile.2x2-cpu.yaml
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

variant() { # NAME OP_OVERHEAD WAKEUP_COST_LONG
  sed -e "s/^\(    op_overhead:\) .*/\1 $2/" -e "s/^\(  wakeup_cost_long:\) .*/\1 $3/" "$fixture" \
    >"$dir/profile.2x2-cpu.cal$1.yaml"
}
variant 0 1us 0s
variant 1 9us 30us
variant 2 2us 10us
grep -q "op_overhead: 9us" "$dir/profile.2x2-cpu.cal1.yaml" || fail "the fixture changed shape"

# The pooled profile: each figure the median, the others as calibrated.
/usr/bin/python3 "$src/scripts/profiles.py" median -o "$dir/pooled.yaml" "$dir"/profile.2x2-cpu.cal*.yaml
grep -q "op_overhead: 2000000ps[,}]*$" "$dir/pooled.yaml" || fail "median op_overhead"
grep -q "wakeup_cost_long: 10000000ps[,}]*$" "$dir/pooled.yaml" || fail "median wakeup_cost_long"
grep -q "m: 704, n: 256, k: 256, rate: 95329540457FLOP/s" "$dir/pooled.yaml" ||
  fail "a figure equal in every profile must stay as calibrated"
workload=(--topology 2x2-cpu --model cpu-h256 --seq-len 64 --global-batch 16 --set model.layers=4
  --set train.compute_dtype=fp32 --set train.recompute=full)
iteration() { # PROFILE METHOD
  "$build/sim/tawsim" "${workload[@]}" --schedule "$2" --profile "$1" --report "$dir/r.json" \
    >/dev/null
  sed -n 's/.*"iteration_time_ps":\([0-9]*\).*/\1/p' "$dir/r.json" | head -1
}
for m in fsdp weipipe; do
  a=$(iteration "$dir/pooled.yaml" "$m")
  b=$(iteration "$dir/profile.2x2-cpu.cal2.yaml" "$m")
  awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0 && (a - b) ^ 2 <= (1e-9 * b) ^ 2) }' ||
    fail "$m: the pooled profile predicts $a ps, the median variant $b ps"
done

# Profiles that cannot be pooled: one line, exit 2.
sed 's/m: 704, n: 256/m: 512, n: 256/' "$fixture" >"$dir/other-shapes.yaml"
set +e
err=$(/usr/bin/python3 "$src/scripts/profiles.py" median -o "$dir/x.yaml" "$fixture" \
  "$dir/other-shapes.yaml" 2>&1)
status=$?
set -e
[ "$status" = 2 ] && [ "$(echo "$err" | wc -l)" = 1 ] &&
  echo "$err" | grep -q "kernel shapes differ" || fail "different shapes: $status '$err'"

# The study: op_overhead's spread against the median (1, 9 us against 2: -50 %, +350 %) and
# wakeup_cost_long's (0, 30 us against 10: -100 %, +200 %); figures equal everywhere move
# nothing; every table is there.
BUILD=$build "$src/scripts/sensitivity" --methods fsdp,weipipe,1f1b --subsets 2 "$dir" -- \
  "${workload[@]}" >"$dir/out.txt"
grep -Eq "^op_overhead +1 +-50.0..\+350.0 " "$dir/out.txt" || fail "op_overhead row: $(cat "$dir/out.txt")"
grep -Eq "^wakeup_cost_long +1 +-100.0..\+200.0 " "$dir/out.txt" || fail "wakeup_cost_long row"
grep -Eq "^kernel gemm rate +6 +\+0.0..\+0.0 +0.00 +0.00 " "$dir/out.txt" ||
  fail "a parameter equal in every profile must not move the gaps"
row=$(grep -E "^wakeup_cost_long " "$dir/out.txt")
[ "$(echo "$row" | awk '{ print $5 }')" != "0.00" ] || fail "wakeup_cost_long moves no gap: $row"
for section in "predicted order (base): " "predicted time change per method" \
  "do the one-at-a-time changes add up" "the pooled prediction's noise"; do
  grep -q "$section" "$dir/out.txt" || fail "no '$section'"
done

# Bad input: one line, exit 2.
set +e
err=$("$src/scripts/sensitivity" "$fixture" 2>&1)
status=$?
set -e
[ "$status" = 2 ] && [ "$err" = "scripts/sensitivity: needs at least two profiles (their spread is what it perturbs by)" ] ||
  fail "one profile: $status '$err'"
echo "PASS"
