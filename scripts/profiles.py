#!/usr/bin/python3
"""Calibration profiles (common/profile/profile.h) as numbers: read, pool, perturb, write.

Used by scripts/sensitivity and scripts/validate-host (Debian's python3-yaml, no PyPI).

  python3 scripts/profiles.py median -o OUT.yaml P1.yaml P2.yaml ...
      the pooled profile: every calibrated figure the median over the profiles that have it
      (profiles of one layout and workload: the same kernel shapes and curve sizes).
  python3 scripts/profiles.py pooled --tawsim TAWSIM --methods A,B,... -o OUT.yaml --tsv T.tsv
          [--replicates R] [--seed S] [-j N] P1.yaml P2.yaml ... -- TAWSIM_WORKLOAD_ARGS...
      the pooled profile (as `median`) and every method's prediction from it, plus R bootstrap
      replicates (default 200): the median profile of R resamples of the profiles, with
      replacement, each predicted too, for an interval of the pooled prediction. T.tsv: replicate
      (0 = the pooled profile itself), method, predicted ms.
  python3 scripts/profiles.py noise P1.yaml P2.yaml ...
      each profile's noise trace (`noise`), unit by unit: quanta, span, the stretches' mean,
      median, 90th and 99th percentile and maximum, and the share of the time lost to quanta
      slower than the median (mean stretch - 1, over the mean stretch).

A profile's calibrated figures are its *leaves*: numbers with a unit (times in ps, bandwidths
in B/s, rates in FLOP/s) or plain fractions (ranks.spread), each under a key that names it the
same way in every profile of a layout, e.g.
  ("devices", "cpu-core", "op_overhead")
  ("devices", "cpu-core", "kernels", "gemm", 2, "rate")      # the 3rd gemm point
  ("communication", "all_gather", "shared_memory", 4, "hot", 1048576, "cpu")   # or "64MiB": cold
  ("host", "wakeup_cost")

A profile's noise trace (`noise`, the fixed-work-quantum trace of every core) is no figure to take
a median of: pooled profiles concatenate their traces, unit by unit, in the order given (a
bootstrap replicate: in the order of its resample), so the pooled trace holds the noise of every
calibration; its quantum is the median of theirs.
"""
import concurrent.futures
import copy
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

import yaml

TIME = {"ps": 1.0, "ns": 1e3, "us": 1e6, "ms": 1e9, "s": 1e12}
BANDWIDTH = {"B/s": 1.0, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
             "KiB/s": 1024.0, "MiB/s": 1048576.0, "GiB/s": 1073741824.0}
RATE = {"FLOP/s": 1.0, "FLOPS": 1.0, "GFLOP/s": 1e9, "GFLOPS": 1e9, "TFLOP/s": 1e12,
        "TFLOPS": 1e12, "PFLOP/s": 1e15, "PFLOPS": 1e15}
BYTES = {"B": 1, "KB": 1000, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KiB": 1024,
         "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(\S*)\s*$")

# leaf field -> (unit table, the unit written back)
FIELDS = {"launch_overhead": (TIME, "ps"), "op_overhead": (TIME, "ps"),
          "memory_bandwidth": (BANDWIDTH, "B/s"), "rate": (RATE, "FLOP/s"),
          "bandwidth": (BANDWIDTH, "B/s"), "latency": (TIME, "ps"), "time": (TIME, "ps"),
          "cpu": (TIME, "ps"), "root_cpu": (TIME, "ps"), "member_cpu": (TIME, "ps"),
          "wakeup_cost": (TIME, "ps"), "wakeup_latency": (TIME, "ps"),
          "wakeup_cost_long": (TIME, "ps"), "wakeup_cost_shared": (TIME, "ps"),
          "wakeup_cost_long_shared": (TIME, "ps"), "zero_bandwidth": (BANDWIDTH, "B/s"),
          "after_compute": (TIME, "ps"), "spread": (None, "")}


class ProfileError(Exception):
    pass


def number(text, units, where):
    """A number with a unit (or a plain number when units is None) in base units."""
    if units is None:
        return float(text)
    m = NUMBER.match(str(text))
    if not m or m.group(2) not in units:
        raise ProfileError(f"{where}: '{text}' is not a number with one of {', '.join(units)}")
    return float(m.group(1)) * units[m.group(2)]


def size_bytes(text, where):
    m = NUMBER.match(str(text))
    if not m or m.group(2) not in BYTES:
        raise ProfileError(f"{where}: '{text}' is not a size")
    return int(round(float(m.group(1)) * BYTES[m.group(2)]))


def formatted(value, field):
    units, unit = FIELDS[field]
    if units is None:
        return float(value)
    return f"{int(round(value))}{unit}"


def load(path):
    """The parsed YAML document of a profile."""
    with open(path) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or "format_version" not in doc:
        raise ProfileError(f"{path}: not a calibration profile (no format_version)")
    return doc


def slots(doc, path="profile"):
    """Every calibrated figure of a parsed profile: key -> (container, field, where)."""
    out = {}

    def add(key, container, field, where):
        if field in container:
            out[key] = (container, field, f"{where}.{field}")

    for dev, d in (doc.get("devices") or {}).items():
        where = f"{path}: devices.{dev}"
        for field in ("launch_overhead", "op_overhead", "memory_bandwidth"):
            add(("devices", dev, field), d, field, where)
        for cls, points in (d.get("kernels") or {}).items():
            for i, p in enumerate(points or []):
                for field in ("rate", "bandwidth"):
                    add(("devices", dev, "kernels", cls, i, field), p, field,
                        f"{where}.kernels.{cls}[{i}]")
        if isinstance(d.get("ranks"), dict):
            add(("devices", dev, "ranks", "spread"), d["ranks"], "spread", f"{where}.ranks")
    for cls, link in (doc.get("links") or {}).items():
        for field in ("bandwidth", "latency"):
            add(("links", cls, field), link, field, f"{path}: links.{cls}")
    after = {}  # (op, scope, ranks) -> after-compute curves so far
    for i, c in enumerate(doc.get("communication") or []):
        # A cold curve (cold_pool: its buffers rotated past the caches) is another curve than the
        # hot one of the same op, scope and ranks; so is each curve measured after compute
        # (after_compute: the k-th of its op, scope and ranks, in the profile's order, whose
        # burst length is a figure of its own).
        curve = (c["op"], c["scope"], int(c["ranks"]))
        variant = str(c.get("cold_pool", "hot"))
        if "after_compute" in c:
            variant = f"after{after.get(curve, 0)}"
            after[curve] = after.get(curve, 0) + 1
            add(("communication",) + curve + (variant, "after_compute"), c, "after_compute",
                f"{path}: communication[{i}]")
        for j, p in enumerate(c.get("points") or []):
            where = f"{path}: communication[{i}].points[{j}]"
            size = size_bytes(p.get("size"), where + ".size")
            for field in ("time", "cpu", "root_cpu", "member_cpu"):
                add(("communication",) + curve + (variant, size, field), p, field, where)
    host = doc.get("host") or {}
    for field in ("wakeup_cost", "wakeup_latency", "wakeup_cost_long", "wakeup_cost_shared",
                  "wakeup_cost_long_shared", "zero_bandwidth"):
        add(("host", field), host, field, f"{path}: host")
    return out


def values(doc, path="profile"):
    """key -> the figure in base units (ps, B/s, FLOP/s, or a plain fraction)."""
    return {k: number(c[f], FIELDS[f][0], where) for k, (c, f, where) in slots(doc, path).items()}


def with_values(doc, new):
    """A copy of the parsed profile with the figures of `new` (key -> base units) written in."""
    doc = copy.deepcopy(doc)
    for k, (c, f, _) in slots(doc).items():
        if k in new:
            c[f] = formatted(new[k], f)
    return doc


def shape_mismatch(docs, paths):
    """Why the profiles cannot be pooled (kernel shapes or curve sizes differ), or None."""
    def shapes(doc):
        out = []
        for dev, d in sorted((doc.get("devices") or {}).items()):
            for cls, points in sorted((d.get("kernels") or {}).items()):
                out.append((dev, cls, [{k: v for k, v in p.items()
                                        if k not in ("rate", "bandwidth")} for p in points]))
        return out
    first = shapes(docs[0])
    for doc, path in zip(docs[1:], paths[1:]):
        if shapes(doc) != first:
            return f"{path}: its kernel shapes differ from {paths[0]}'s"
    return None


def median_values(all_values):
    """Per key, the median over the value maps that have it."""
    keys = dict.fromkeys(k for v in all_values for k in v)
    return {k: statistics.median(v[k] for v in all_values if k in v) for k in keys}


def with_noise(doc, docs):
    """`doc` with the noise traces of `docs` concatenated unit by unit (see the file's head);
    `doc` unchanged where none of them has one."""
    traces = [d["noise"] for d in docs if isinstance(d.get("noise"), dict)]
    if not traces:
        return doc
    counts = {len(t.get("units") or []) for t in traces}
    if len(counts) != 1:
        raise ProfileError(f"noise traces of different unit counts ({sorted(counts)}) "
                           "cannot be pooled")
    doc = copy.deepcopy(doc)
    units = [[] for _ in range(counts.pop())]
    for t in traces:
        for u, trace in enumerate(t["units"]):
            units[u].extend(trace)
    quantum = statistics.median(number(t["quantum"], TIME, "noise.quantum") for t in traces)
    doc["noise"] = {"work": traces[0].get("work", ""),
                    "quantum": f"{int(round(quantum))}ps", "units": units}
    if not doc["noise"]["work"]:
        del doc["noise"]["work"]
    return doc


def dump(doc, path, comment):
    with open(path, "w") as f:
        f.write(f"# {comment}\n")
        yaml.safe_dump(doc, f, sort_keys=False, default_flow_style=None, width=100)


def load_all(paths):
    """The parsed profiles and their figures; ProfileError when they cannot be pooled."""
    if not paths:
        raise ProfileError("no profiles")
    docs = [load(p) for p in paths]
    bad = shape_mismatch(docs, paths)
    if bad:
        raise ProfileError(bad)
    return docs, [values(d, p) for d, p in zip(docs, paths)]


def pooled(paths, out):
    docs, vals = load_all(paths)
    doc = with_noise(with_values(docs[0], median_values(vals)), docs)
    doc["producer"] = f"median of {len(paths)} calibrations ({doc.get('producer', '')})"
    dump(doc, out, "pooled profile: each calibrated figure the median over " +
         ", ".join(paths))
    return docs, vals


def predict(tawsim, args, jobs, runs):
    """runs: [(profile path, method)] -> [predicted ms] (tawsim --report, one run each)."""
    def one(run):
        path, method = run
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report.json")
            r = subprocess.run([tawsim, *args, "--schedule", method, "--profile", path,
                                "--report", report], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
                raise ProfileError(f"tawsim failed ({method}, {path}): {last}")
            with open(report) as f:
                return json.load(f)["iteration_time_ps"] / 1e9
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, runs))


def split_methods(text):
    """A,B[x=1,y=2],C -> [A, B[x=1,y=2], C] (commas inside brackets stay)."""
    return [m for m in re.split(r",(?![^\[]*\])", text) if m]


def pooled_prediction(argv):
    if "--" not in argv:
        raise ProfileError("pooled: give tawsim's workload after --")
    cut = argv.index("--")
    own, args = argv[:cut], argv[cut + 1:]
    opts = {"--tawsim": None, "--methods": None, "-o": None, "--tsv": None,
            "--replicates": "200", "--seed": "13", "-j": "2"}
    paths = []
    i = 0
    while i < len(own):
        if own[i] in opts:
            if i + 1 >= len(own):
                raise ProfileError(f"pooled: {own[i]} needs a value")
            opts[own[i]] = own[i + 1]
            i += 2
        elif own[i].startswith("-"):
            raise ProfileError(f"pooled: unknown option '{own[i]}'")
        else:
            paths.append(own[i])
            i += 1
    for key in ("--tawsim", "--methods", "-o", "--tsv"):
        if opts[key] is None:
            raise ProfileError(f"pooled: {key} is required")
    try:
        replicates, seed, jobs = (int(opts[k]) for k in ("--replicates", "--seed", "-j"))
    except ValueError:
        raise ProfileError("pooled: --replicates, --seed and -j take numbers")
    methods = split_methods(opts["--methods"])
    docs, vals = pooled(paths, opts["-o"])
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        files = [opts["-o"]]
        for r in range(replicates):
            pick = [rng.randrange(len(vals)) for _ in vals]
            files.append(os.path.join(tmp, f"replicate{r + 1}.yaml"))
            dump(with_noise(with_values(docs[0], median_values([vals[c] for c in pick])),
                            [docs[c] for c in pick]), files[-1],
                 f"bootstrap replicate {r + 1}: the median of calibrations {pick}")
        runs = [(f, m) for f in files for m in methods]
        ms = predict(opts["--tawsim"], args, jobs, runs)
    with open(opts["--tsv"], "w") as f:
        for (path, method), x in zip(runs, ms):
            f.write(f"{files.index(path)}\t{method}\t{x:.6f}\n")


def percentile(sorted_values, q):
    """The q-quantile (0..1) of sorted values, by linear interpolation."""
    x = q * (len(sorted_values) - 1)
    i = int(x)
    j = min(i + 1, len(sorted_values) - 1)
    return sorted_values[i] + (x - i) * (sorted_values[j] - sorted_values[i])


def noise_summary(paths):
    print(f"{'profile':<28} {'unit':>4} {'quanta':>7} {'span s':>7} {'mean':>7} {'median':>7} "
          f"{'p90':>7} {'p99':>7} {'max':>7} {'lost %':>7}")
    for path in paths:
        t = load(path).get("noise")
        name = os.path.basename(path)
        if not isinstance(t, dict):
            print(f"{name:<28} (no noise trace)")
            continue
        q = number(t["quantum"], TIME, f"{path}: noise.quantum")
        for u, trace in enumerate(t.get("units") or []):
            s = sorted(float(x) for x in trace)
            mean = sum(s) / len(s)
            print(f"{name:<28} {u:>4} {len(s):>7} {sum(s) * q / 1e12:>7.2f} {mean:>7.4f} "
                  f"{percentile(s, 0.5):>7.4f} {percentile(s, 0.9):>7.4f} "
                  f"{percentile(s, 0.99):>7.4f} {s[-1]:>7.3f} {100 * (mean - 1) / mean:>7.2f}")


def main(argv):
    try:
        if len(argv) >= 3 and argv[1] == "noise":
            noise_summary(argv[2:])
            return 0
        if len(argv) >= 4 and argv[1] == "median" and argv[2] == "-o":
            pooled(argv[4:], argv[3])
            return 0
        if len(argv) >= 2 and argv[1] == "pooled":
            pooled_prediction(argv[2:])
            return 0
    except (ProfileError, OSError, yaml.YAMLError) as e:
        print(f"profiles.py: {e}", file=sys.stderr)
        return 2
    print("usage: profiles.py median -o OUT.yaml PROFILE.yaml... | profiles.py pooled ... | "
          "profiles.py noise PROFILE.yaml... (see the file's head)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
