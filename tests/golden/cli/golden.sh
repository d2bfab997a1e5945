#!/usr/bin/env bash
# golden.sh EXPECTED -- COMMAND...
# Runs COMMAND and compares its standard output with the file EXPECTED (a unified diff on
# mismatch). With TAWPIPE_BLESS=1 it writes EXPECTED instead (scripts/bless-golden does this).
set -u
expected=$1
shift
[ "${1:-}" = "--" ] && shift
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
"$@" >"$actual" || { echo "command failed with status $?: $*"; exit 1; }
if [ "${TAWPIPE_BLESS:-0}" = "1" ]; then
  cp "$actual" "$expected"
  echo "blessed $expected"
  exit 0
fi
[ -f "$expected" ] || { echo "missing golden file $expected (run scripts/bless-golden)"; exit 1; }
diff -u "$expected" "$actual"
