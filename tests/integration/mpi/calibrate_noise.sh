#!/usr/bin/env bash
# calibrate_noise.sh TAWEXEC: the noise trace of `tawexec calibrate --backend host`
# (exec/host/calibrate_noise.h). On 2x2-cpu (4 ranks, 2 per core) with --noise-seconds 0.5 the
# profile must have a noise section with one unit per core (2), each non-empty, every stretch
# > 0, the median stretch over all units ~1, and each unit's quanta (stretch x quantum) covering
# the 0.5 s span within 20 %. With --noise-seconds 0 there is no noise section.
set -u
tawexec=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
span=0.5
run() {
  mpirun --oversubscribe -np 4 "$tawexec" calibrate --topology 2x2-cpu --model tiny --seq-len 32 \
    --seconds 0.02 "$@" >"$dir/out.txt" 2>&1
}
if ! run --noise-seconds "$span" -o "$dir/p.yaml"; then
  echo "tawexec calibrate failed:"; cat "$dir/out.txt"; exit 1
fi
python3 "$here/calibrate_noise.py" "$dir/p.yaml" 2 "$span" || exit 1
if ! run --noise-seconds 0 -o "$dir/none.yaml"; then
  echo "tawexec calibrate --noise-seconds 0 failed:"; cat "$dir/out.txt"; exit 1
fi
if grep -q '^noise:' "$dir/none.yaml"; then
  echo "--noise-seconds 0 wrote a noise section"; exit 1
fi
echo "calibrate noise: PASSED"
