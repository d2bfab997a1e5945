#!/usr/bin/env bash
# expect.sh STATUS REGEX [--lines N] -- COMMAND...
# Runs COMMAND; passes when it exits with STATUS and the extended REGEX matches its stderr (when
# STATUS is non-zero) or its stdout (when STATUS is 0). A failing run's stderr must have at most N
# lines (default 1: user errors are one line). A crash (signal) never passes. Used by CTest.
set -u
want_status=$1
regex=$2
shift 2
max_lines=""
if [ "${1:-}" = "--lines" ]; then max_lines=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
[ -z "$max_lines" ] && { [ "$want_status" -ne 0 ] && max_lines=1 || max_lines=1000000; }
err=$(mktemp)
out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT
"$@" >"$out" 2>"$err"
status=$?
if [ "$status" -ne "$want_status" ]; then
  echo "expected exit status $want_status, got $status; stderr:"; cat "$err"; exit 1
fi
checked=$err
[ "$want_status" -eq 0 ] && checked=$out
if ! grep -Eq -- "$regex" "$checked"; then
  echo "output does not match /$regex/:"; cat "$checked"; exit 1
fi
lines=$(wc -l <"$err")
if [ "$lines" -gt "$max_lines" ]; then
  echo "stderr has $lines lines, expected at most $max_lines:"; cat "$err"; exit 1
fi
exit 0
