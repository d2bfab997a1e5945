#!/bin/sh
# tawexec --backend cuda on a machine without a visible GPU: exit status 2 and exactly one line,
# "tawexec: no CUDA device visible (cudaGetDeviceCount: ...)", never a crash. Where a device IS
# visible the same command stops at the rank-count check (or, for calibrate, succeeds quietly)
# instead; the test then reports itself skipped (exit 77, SKIP_RETURN_CODE).
# usage: no_device.sh TAWEXEC [ARGS...]
out=$("$@" 2>&1 >/dev/null)
rc=$?
lines=$(printf '%s\n' "$out" | grep -c .)
case "$out" in
  "tawexec: no CUDA device visible (cudaGetDeviceCount: "*")"|"tawexec calibrate: no CUDA device visible (cudaGetDeviceCount: "*")")
    if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ]; then
      echo "ok: exit 2, one line: $out"
      exit 0
    fi ;;
  ""|*"processes run"*)
    echo "a CUDA device is visible: nothing to check here"
    exit 77 ;;
esac
echo "FAILED: want exit 2 and one 'no CUDA device visible' line; got exit $rc, $lines line(s):"
printf '%s\n' "$out"
exit 1
