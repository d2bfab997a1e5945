#!/usr/bin/env bash
# Golden property of --shard + merge: for csv and json, the slices of a sweep joined by
# `tawsim merge` (given in scrambled order) equal the unsliced sweep byte for byte, including a
# slice count larger than the point count (empty slices). Errors: a missing slice and a slice
# given twice exit 2.
set -u
tawsim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { "$tawsim" --topology 2x2-cpu --model tiny --seq-len 64 --micro-batches 2 \
  --schedule tawpipe,fsdp --sweep seq-len=32,64,128 --sweep inter_node.nic.bandwidth=1GB/s,10GB/s \
  --jobs 2 "$@" 2>/dev/null; }
for fmt in csv json; do
  run --format $fmt > "$dir/all.$fmt" || fail "unsliced $fmt sweep exited $?"
  for n in 1 4 9; do
    files=()
    for k in $(seq $n -1 1); do   # scrambled (reverse) order
      run --format $fmt --shard $k/$n > "$dir/s$k.$fmt" || fail "shard $k/$n ($fmt) exited $?"
      files+=("$dir/s$k.$fmt")
    done
    "$tawsim" merge "${files[@]}" > "$dir/merged.$fmt" || fail "merge of $n $fmt slices exited $?"
    cmp "$dir/all.$fmt" "$dir/merged.$fmt" || fail "$n $fmt slices merged differ from the sweep"
  done
done
"$tawsim" merge "$dir/s1.json" "$dir/s2.json" 2>/dev/null; [ $? -eq 2 ] || fail "missing slice"
"$tawsim" merge "$dir/s1.json" "$dir/s1.json" 2>/dev/null; [ $? -eq 2 ] || fail "slice twice"
"$tawsim" merge "$dir/all.csv" 2>/dev/null; [ $? -eq 2 ] || fail "not a shard"
echo "PASS"
