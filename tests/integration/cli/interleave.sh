#!/usr/bin/env bash
# interleave.sh TAWEXEC RETARGET_IR: an interleaved launch (several programs in one mpirun,
# exec/tawexec.cpp) must train every program exactly like its own single-process reference, and
# the check must fail for the one program that is wrong while it passes the others.
#  1. five methods interleaved (1 warm-up round + 4 timed rounds, 4 ranks of 2x2-cpu): exit 0,
#     "verify: #k LABEL: PASSED" for every program, "verify: PASSED"; --step-times has one row
#     per step of every program, every round runs every program once, and over the 4 timed
#     rounds every program's mean position is the same ((n - 1) / 2: exec::interleave_order);
#     one report per program, each naming its method.
#  2. a good and a wrong-shard program (retarget_ir, --unverified-ir) interleaved: exit 1,
#     the good one PASSED, the wrong one FAILED, "verify: FAILED (programs #2 ...)".
set -u
tawexec=$1
retarget=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
common=(--topology 2x2-cpu --model tiny --seq-len 32 --micro-batches 2 --timeout 60)

methods=(tawpipe "tawpipe[grouping=off]" weipipe fsdp 1f1b)
reports=()
for i in "${!methods[@]}"; do reports+=(--report "$dir/m$i.json"); done
mpirun --oversubscribe -np 4 "$tawexec" "${common[@]}" --schedule "tawpipe,tawpipe[grouping=off]" \
  --schedule weipipe --schedule fsdp,1f1b --warmup 1 --steps 4 --verify "${reports[@]}" \
  --step-times "$dir/steps.tsv" >"$dir/out1" 2>"$dir/err1"
status=$?
grep "^verify: #\|^verify: PASSED\|^verify: FAILED" "$dir/out1"
[ "$status" -eq 0 ] || { cat "$dir/err1"; fail "interleaved launch exited $status, expected 0"; }
for i in "${!methods[@]}"; do
  grep -qxF "verify: #$((i + 1)) ${methods[$i]}: PASSED" "$dir/out1" ||
    fail "no 'verify: #$((i + 1)) ${methods[$i]}: PASSED'"
  # Losses of all 5 steps were compared with the reference for this program.
  [ "$(grep -F "verify: #$((i + 1)) ${methods[$i]}: step " "$dir/out1" | grep -c " loss ")" \
    -eq 5 ] ||
    fail "program #$((i + 1)): not 5 compared losses"
  method=${methods[$i]%%[*}
  grep -q "\"schedule\":\"$method\"" "$dir/m$i.json" || fail "report $i does not name $method"
done
grep -qx "verify: PASSED" "$dir/out1" || fail "no overall 'verify: PASSED'"
/usr/bin/python3 - "$dir/steps.tsv" 5 4 1 <<'PY' || fail "step times"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
n, steps, warmup = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
assert len(rows) == n * (steps + warmup), f"{len(rows)} rows"
rounds = {}
for program, label, step, timed, rnd, pos, begin, ms, compute in rows:
    assert float(ms) > 0 and float(compute) > 0, (ms, compute)
    assert (int(step) >= warmup) == (timed == "1"), (step, timed)
    rounds.setdefault(int(rnd), []).append((int(pos), int(program), float(begin)))
assert sorted(rounds) == list(range(steps + warmup)), sorted(rounds)
mean = {}
for r, xs in rounds.items():
    xs.sort()
    assert [p for p, _, _ in xs] == list(range(n)), xs
    assert sorted(q for _, q, _ in xs) == list(range(1, n + 1)), xs
    assert all(a[2] < b[2] for a, b in zip(xs, xs[1:])), "positions out of time order"
    if r >= warmup:
        for p, q, _ in xs:
            mean[q] = mean.get(q, 0) + p / steps
assert all(abs(m - (n - 1) / 2) < 1e-9 for m in mean.values()), mean
print("step times: every round runs every program once; mean positions", mean)
PY

"$tawexec" --topology 2x2-cpu --schedule tawpipe --micro-batches 1 --seq-len 32 \
  --emit-ir "$dir/good.json" || fail "emit-ir"
"$retarget" "$dir/good.json" "$dir/bad.json" || fail "retarget_ir"
mpirun --oversubscribe -np 4 "$tawexec" --ir "$dir/good.json" --ir "$dir/bad.json" \
  --unverified-ir --verify --steps 2 --timeout 60 >"$dir/out2" 2>"$dir/err2"
status=$?
grep "^verify: #\|^verify: PASSED\|^verify: FAILED" "$dir/out2"
[ "$status" -eq 1 ] || { cat "$dir/err2"; fail "good + wrong program exited $status, expected 1"; }
grep -qxF "verify: #1 $dir/good.json: PASSED" "$dir/out2" || fail "the good program did not pass"
grep -qxF "verify: #2 $dir/bad.json: FAILED" "$dir/out2" || fail "the wrong program did not fail"
grep -qxF "verify: FAILED (programs #2 $dir/bad.json)" "$dir/out2" || fail "no overall FAILED"
echo "interleaved launch: every program verified on its own; the wrong one fails alone"
