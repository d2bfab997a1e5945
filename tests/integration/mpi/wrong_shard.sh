#!/usr/bin/env bash
# wrong_shard.sh TAWEXEC RETARGET_IR: a program with one compute op reading the wrong shard is
# rejected by the verifier (exit 2), and when the dataflow check is skipped (--unverified-ir)
# it runs but --verify fails (exit 1, "verify: FAILED").
set -u
tawexec=$1
retarget=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tawexec" --topology 2x2-cpu --schedule tawpipe --micro-batches 1 --seq-len 32 \
  --emit-ir "$dir/good.json" || { echo "emit-ir failed"; exit 1; }
"$retarget" "$dir/good.json" "$dir/bad.json" || exit 1
mpirun --oversubscribe -np 4 "$tawexec" --ir "$dir/bad.json" --verify --timeout 60 \
  >"$dir/out1" 2>"$dir/err1"
status=$?
if [ "$status" -ne 2 ] || ! grep -q "dataflow" "$dir/err1"; then
  echo "expected the verifier to reject the program (exit 2, dataflow), got $status:"
  cat "$dir/err1"; exit 1
fi
mpirun --oversubscribe -np 4 "$tawexec" --ir "$dir/bad.json" --unverified-ir --verify \
  --timeout 60 >"$dir/out2" 2>"$dir/err2"
status=$?
cat "$dir/out2"
if [ "$status" -eq 0 ] || ! grep -q "verify: FAILED" "$dir/out2"; then
  echo "expected --verify to fail, got exit $status"; cat "$dir/err2"; exit 1
fi
echo "wrong shard detected (exit $status)"
