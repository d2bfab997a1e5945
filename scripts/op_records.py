"""Op records of tawsim traces and tawexec reports, for the scripts that compare them op by op
(scripts/collective-instances, scripts/op-waits).

op_times(path) -> ({(rank, op index): (start ms, end ms)}, aligned): from a tawsim trace
(`--trace`, Chrome/Perfetto events whose args name the op) or a report with op records
(`--report`; tawexec's: [rank, op, start_ps, end_ps, cpu_ps, preemptions], relative to each
rank's start). Ranks on one clock record their start offsets (rank_stats[].start_offset_ps),
which put them on one time axis (aligned = True); without them each rank keeps its own.
Errors raise RecordError with a one-line message naming the file.
"""
import json


class RecordError(Exception):
    pass


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise RecordError(f"{path}: {e}") from None


def op_times(path):
    rep, times = load_json(path), {}
    try:
        for e in rep.get("traceEvents", []):
            if e.get("ph") == "X" and "op" in e.get("args", {}):
                times[(e["pid"], e["args"]["op"])] = (e["ts"] / 1e3, (e["ts"] + e["dur"]) / 1e3)
        offsets = [st.get("start_offset_ps") for st in rep.get("rank_stats", [])]
        aligned = bool(offsets) and all(x is not None for x in offsets)
        if not aligned:
            offsets = [0] * len(offsets)
        for r, o, s, e, *_ in rep.get("ops", []):  # [.., cpu_ps, preemptions] on CPU runs
            d = offsets[r] if r < len(offsets) else 0
            times[(r, o)] = ((s + d) / 1e9, (e + d) / 1e9)
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise RecordError(f"{path}: not a tawsim trace or report with op records ({e})") from None
    return times, aligned or "traceEvents" in rep
