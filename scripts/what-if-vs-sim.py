#!/usr/bin/env python3
"""The what-if against the simulator's truth (docs/SIMULATOR.md §9).

For each case: simulate the scenario, predict with `analyze --what-if` how much shorter
the critical path gets if an item is k times faster (or as fast as its peers), simulate
again with that item really k times faster (`simulate --speed-up`, same seed), and
measure how much less time the same work takes:

- pipelined: the time the sped-up run takes less to process at its sink (`count`) the
  records the plain run processed by its end;
- micro-batch: the batches' total duration (the driver's time other than `input`,
  waiting for the next batch to be due).

Prints a Markdown table and every command it ran. Usage:
    scripts/what-if-vs-sim.py [--bin build/bin/snailtrail] [--duration 10s]
"""
import argparse
import bisect
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (scenario, extra simulate options, analyze window, what-if kind, item, basis, k)
CASES = [
    ("wordcount-skew-30", ["--rate", "10000"], "1s", "worker", "count-0", "factor", 2),
    ("wordcount-skew-30", ["--rate", "10000"], "1s", "worker", "count-0", "peer_median", None),
    ("wordcount-skew-50", ["--rate", "10000"], "1s", "worker", "count-0", "factor", 2),
    ("wordcount-skew-50", ["--rate", "10000"], "1s", "worker", "count-0", "peer_median", None),
    ("wordcount-4-2-4", ["--rate", "10000"], "1s", "operator", "flatmap", "factor", 2),
    ("wordcount-1-2-4", ["--rate", "10000"], "1s", "operator", "flatmap", "factor", 1.5),
    ("spark-microbatch", [], "100ms", "worker", "driver", "factor", 2),
    ("spark-microbatch", [], "100ms", "worker", "driver", "factor", 4),
    ("spark-microbatch", [], "100ms", "worker", "driver", "peer_median", None),
    # A driver that keeps up (already 2x faster) still waits for each batch to be due.
    ("spark-microbatch", ["--speed-up", "driver=2"], "100ms", "worker", "driver", "factor", 2),
    # Where the what-if deviates: the job catches up with its input (docs/PAG.md §5).
    ("wordcount-4-2-4", [], "1s", "operator", "flatmap", "factor", 2),
    ("wordcount-skew-30", [], "1s", "worker", "count-0", "factor", 2),
]


def run(cmd, log, tmp):
    shown = " ".join(shlex.quote(c) for c in cmd).replace(tmp + "/", "")
    log.append(shown.replace(ROOT + "/", ""))
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout


def load(path):
    workers, ops, events = {}, {}, []
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            if "meta" in d:
                (workers if d["meta"] == "worker" else ops)[d["id"]] = d["name"]
            else:
                events.append(d)
    return workers, ops, events


def sink_curve(path, sink):
    _, ops, events = load(path)
    curve, total = [], 0
    for e in events:
        if (e["activity"] == "processing" and e["event"] == "end"
                and ops.get(e.get("operator")) == sink and "records" in e):
            total += e["records"]
            curve.append((e["ts"], total))
    return curve


def batch_time(path):
    workers, _, events = load(path)
    inp, since, end = 0, None, 0
    for e in events:
        end = max(end, e["ts"])
        if workers.get(e["worker"]) != "driver" or e["activity"] != "input":
            continue
        if e["event"] == "start":
            since = e["ts"]
        elif since is not None:
            inp, since = inp + e["ts"] - since, None
    if since is not None:
        inp += end - since
    return end - inp


def truth(plain, fast, microbatch):
    if microbatch:
        return batch_time(plain) - batch_time(fast)
    a, b = sink_curve(plain, "count"), sink_curve(fast, "count")
    i = bisect.bisect_left([n for _, n in b], a[-1][1])
    return a[-1][0] - b[i][0] if i < len(b) else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bin/snailtrail"))
    ap.add_argument("--duration", default="10s")
    a = ap.parse_args()
    log = []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scenario, opts, window, kind, item, basis, k in CASES:
            toml = os.path.join("examples", scenario + ".toml")
            plain, fast = os.path.join(tmp, "plain.jsonl"), os.path.join(tmp, "fast.jsonl")
            sim = [a.bin, "simulate", toml, "-d", a.duration, "-q"] + opts
            run(sim + ["-o", plain], log, tmp)
            analyze = [a.bin, "analyze", plain, "--window", window, "--what-if", "-f", "jsonl",
                       "--no-progress"]
            if k is not None:
                analyze += ["--what-if-speedup", str(k)]
            predicted, factor = 0.0, 0.0
            for line in run(analyze, log, tmp).splitlines():
                if not line.startswith("{"):
                    continue
                for x in json.loads(line).get("what_if") or []:
                    if x["kind"] == kind and x["name"] == item and x["basis"] == basis:
                        predicted += x["saved_ns"]
                        factor = max(factor, x["speedup"])
            factor = round(factor, 2) if k is None else k
            run(sim + ["--speed-up", f"{item}={factor}", "-o", fast], log, tmp)
            t = truth(plain, fast, scenario == "spark-microbatch")
            what = f"{factor}x" if basis == "factor" else f"peer median ({factor}x)"
            rate = opts[1] + "/s" if opts[:1] == ["--rate"] else "own rate"
            if opts[:1] == ["--speed-up"]:
                rate += ", " + opts[1]
            rows.append(f"| `{scenario}` ({rate}, --window {window}) | {item} {what} | "
                        f"{predicted / 1e9:.3f} s | {t / 1e9:.3f} s | "
                        f"{(predicted / t - 1) * 100:+.1f} % |")
    print("| scenario | item | predicted saving | simulated saving | error |")
    print("| --- | --- | ---: | ---: | ---: |")
    print("\n".join(rows))
    print("\ncommands:")
    print("\n".join(log))


if __name__ == "__main__":
    sys.exit(main())
