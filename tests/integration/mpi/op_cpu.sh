#!/usr/bin/env bash
# op_cpu.sh TAWEXEC TAWSIM: the host backend's core time per op (report.h OpRecord::cpu). On
# 2x2-cpu every compute op's record carries its thread's CPU time and preemptions, the CPU time
# positive and within the op's span (a thread cannot use more CPU than wall time), the forward
# class sums them; a transfer its thread runs alone carries its thread's CPU time too (within its
# span; some are), transfers posted together none. tawsim's prediction of the same program
# carries core work for its compute ops and its transfers too (in its trace's op events, summed
# in its report's classes), and `tawsim compare` sets the two side by side.
set -u
tawexec=$1
tawsim=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--topology 2x2-cpu --model tiny --schedule tawpipe --seq-len 32 --micro-batches 2)
if ! mpirun --oversubscribe -np 4 "$tawexec" "${args[@]}" --steps 2 --timeout 60 \
    --report "$dir/m.json" >"$dir/out.txt" 2>&1; then
  echo "tawexec failed:"; cat "$dir/out.txt"; exit 1
fi
"$tawsim" "${args[@]}" --emit-ir "$dir/ir.json" --report "$dir/p.json" \
    --trace "$dir/p.trace.json" >/dev/null 2>&1 ||
  { echo "tawsim failed"; exit 1; }
python3 - "$dir/m.json" "$dir/p.json" "$dir/p.trace.json" "$dir/ir.json" <<'PYEND' || exit 1
import json, sys
m, p, trace, ir = (json.load(open(f)) for f in sys.argv[1:5])
kinds = [[op[0] for op in r['ops']] for r in ir['ranks']]
COMPUTE = {'forward', 'backward', 'head', 'accumulate', 'optimizer', 'copy', 'embedding_forward',
           'embedding_backward'}
COMM = {'send', 'recv', 'broadcast', 'reduce', 'all_reduce', 'all_gather', 'reduce_scatter'}
def fail(msg):
    sys.exit(msg)
# Measured: the report's op records [rank, op, start, end, cpu, preemptions].
forward = 0
comm_cpu = 0
for rec in m['ops']:
    kind = kinds[rec[0]][rec[1]]
    if kind in COMPUTE:
        if len(rec) != 6:
            fail(f'measured: compute op {rec[:2]} ({kind}) has no CPU time: {rec}')
        span = rec[3] - rec[2]
        if not 0 < rec[4] <= span + 1000000:  # a thread's CPU time fits its span (1 us slack)
            fail(f'measured: op {rec[:2]} ({kind}) cpu {rec[4]} ps, span {span} ps')
        if kind == 'forward':
            forward += rec[4]
    elif kind in COMM and len(rec) == 6:
        if not 0 <= rec[4] <= rec[3] - rec[2] + 1000000:
            fail(f'measured: transfer {rec[:2]} ({kind}) cpu {rec[4]} ps, span {rec[3] - rec[2]}')
        comm_cpu += 1
    elif kind in COMM and len(rec) != 4:
        fail(f'measured: transfer {rec[:2]} ({kind}) has a malformed record: {rec}')
if forward == 0:
    fail('measured: no forward ops')
if comm_cpu == 0:
    fail('measured: no transfer carries a CPU time')
cls = {c['name']: c for c in m['op_classes']}
if cls['forward'].get('cpu_ps') != forward or 'preemptions' not in cls['forward']:
    fail(f'measured: forward class {cls["forward"]} against its ops\' {forward} ps')
# Predicted: the trace's events carry the core work (args.cpu_us), the report's classes its sum.
forward = 0.0
comm_work = 0.0
for e in trace['traceEvents']:
    if e.get('ph') != 'X' or e['pid'] >= len(kinds):
        continue
    kind = kinds[e['pid']][e['args']['op']]
    if kind in COMPUTE and not e['args'].get('cpu_us', 0) > 0:
        fail(f'predicted: compute op {e} has no core work')
    if kind in COMM:
        comm_work += e['args'].get('cpu_us', 0)
    if kind == 'forward':
        forward += e['args']['cpu_us']
cls = {c['name']: c for c in p['op_classes']}
if abs(cls['forward'].get('cpu_ps', 0) / 1e6 - forward) > 1e-3 * forward + 1:
    fail(f'predicted: forward class {cls["forward"]} against its ops\' {forward} us')
if not comm_work > 0:
    fail('predicted: no transfer has core work')
PYEND
out=$("$tawsim" compare "$dir/p.json" "$dir/m.json" --no-ranks) || { echo "compare failed"; exit 1; }
if ! grep -q "work p.*cpu m.*preempt/op" <<<"$out" || ! grep -q "^forward .*%" <<<"$out"; then
  echo "compare has no core-time table:"; echo "$out"; exit 1
fi
echo "op cpu: PASSED"
