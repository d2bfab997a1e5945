#!/usr/bin/env bash
# tawsim --emit-ir writes a program that `tawsim verify` accepts (exit 0); a program with one
# send's byte count changed is rejected (exit 1, naming the rank and op); a file that is not an
# IR is unreadable (exit 2, one line with file:line:column).
set -u
tawsim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$tawsim" --topology 2x2-cpu --model tiny --seq-len 64 --micro-batches 2 --schedule all \
  --emit-ir "$dir/p.{}.ir.json" || fail "emit-ir exited $?"
for s in 1f1b fsdp tawpipe weipipe; do
  [ -s "$dir/p.$s.ir.json" ] || fail "no program for $s"
  out=$("$tawsim" verify "$dir/p.$s.ir.json") || fail "verify $s exited $?: $out"
  echo "$out" | grep -q "valid: $s" || fail "verify $s printed: $out"
done

# Change the byte count of the first send op (row format: ["send",stream,deps,peer,comm,bytes,...]).
/usr/bin/python3 - "$dir/p.tawpipe.ir.json" "$dir/bad.ir.json" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r'\["send",(\d+),\[[^\]]*\],(-?\d+),(-?\d+),(\d+),', text)
assert m, "no send op found"
start, end = m.span(4)
open(sys.argv[2], "w").write(text[:start] + str(int(m.group(4)) + 4) + text[end:])
PY
err=$("$tawsim" verify "$dir/bad.ir.json" 2>&1 >/dev/null)
status=$?
[ "$status" -eq 1 ] || fail "verify of a broken program exited $status: $err"
echo "$err" | grep -Eq "invalid \((structure|matching)\): r[0-9]+ #[0-9]+" || fail "message: $err"

printf '{"format": "tawpipe-ir", "format_version": 1,\n  "header": 17 }\n' >"$dir/garbage.json"
err=$("$tawsim" verify "$dir/garbage.json" 2>&1 >/dev/null)
status=$?
[ "$status" -eq 2 ] || fail "verify of garbage exited $status: $err"
echo "$err" | grep -Eq "garbage.json:[0-9]+:[0-9]+: " || fail "garbage message: $err"
[ "$(echo "$err" | wc -l)" -eq 1 ] || fail "garbage message is not one line: $err"
echo "ok"
