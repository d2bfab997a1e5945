#!/usr/bin/env bash
# wait_log.sh TAWEXEC: the host backend's wait log (exec/host/wait_log.h). With
# TAWPIPE_WAIT_LOG=PREFIX every rank writes PREFIX.<rank>.tsv whose lines wait_log.py --check
# accepts (fields, every posted op completed, every send with its receive); without it, no file.
set -u
tawexec=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() {
  mpirun --oversubscribe -np 4 "$tawexec" --topology 2x2-cpu --model tiny --schedule "$1" \
    --seq-len 32 --micro-batches 2 --steps 2 --timeout 60 >"$dir/out.txt" 2>&1
}
for method in 1f1b fsdp; do
  if ! TAWPIPE_WAIT_LOG="$dir/$method" run "$method"; then
    echo "tawexec $method failed:"; cat "$dir/out.txt"; exit 1
  fi
  n=$(ls "$dir/$method".*.tsv 2>/dev/null | wc -l)
  if [ "$n" -ne 4 ]; then echo "$method: expected 4 wait logs, found $n"; exit 1; fi
  python3 "$here/wait_log.py" --check "$dir/$method" || exit 1
done
# Off by default: the same run writes nothing.
(cd "$dir" && unset TAWPIPE_WAIT_LOG && run 1f1b) || { echo "tawexec failed without the log:"; cat "$dir/out.txt"; exit 1; }
if ls "$dir" | grep -v -e '^1f1b\.' -e '^fsdp\.' -e '^out\.txt$' | grep -q .; then
  echo "files written without TAWPIPE_WAIT_LOG:"; ls "$dir"; exit 1
fi
echo "wait log: PASSED"
