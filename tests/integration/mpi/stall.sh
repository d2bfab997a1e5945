#!/usr/bin/env bash
# stall.sh TAWEXEC: rank 1 sleeps before its op 3 (test-only fault injection); with --timeout 3
# every rank must end non-zero well within the test's time limit, and stderr must carry the
# watchdog's line naming the rank, the op, its kind and its peer or communicator.
set -u
tawexec=$1
err=$(mktemp)
trap 'rm -f "$err"' EXIT
start=$(date +%s)
TAWPIPE_TEST_STALL_RANK=1 TAWPIPE_TEST_STALL_OP=3 TAWPIPE_TEST_STALL_SECONDS=600 \
  mpirun --oversubscribe -np 4 "$tawexec" --topology 2x2-cpu --schedule tawpipe --seq-len 32 \
  --micro-batches 1 --timeout 3 >/dev/null 2>"$err"
status=$?
elapsed=$(( $(date +%s) - start ))
line=$(grep -E "^tawexec: rank [0-9]+: timeout after 3 s waiting for op [0-9]+ \((send to|recv from|broadcast|reduce|all_reduce|all_gather|reduce_scatter).*\)$" "$err" | head -1)
echo "exit $status after ${elapsed}s: $line"
if [ "$status" -eq 0 ] || [ -z "$line" ] || [ "$elapsed" -gt 40 ]; then
  echo "expected a non-zero exit within 40 s with the watchdog line; stderr:"; cat "$err"; exit 1
fi
