#!/usr/bin/env python3
"""The rebalance benchmark (docs/CLOSED-LOOP.md, issue 18's skew acceptance): the same
skewed input (--skew-profile: a share of the records to the hot bins [0, bins/8), which
start on worker 0) on keycount-megaphone, once with --rebalance and once without. Prints
each run's rebalance decisions and CP analyses (the straggler's CP share against the
next worker's), the 250 ms latency timeline, and the p99 latency after the move: the
records-weighted mean of the 250 ms intervals' p99 from the end of the first rebalance
migration (plus --settle) to the end, in both runs over the same span. CPU time (user +
sys) and the load average give the context.

  scripts/rebalance-bench.py [--bin build/bin/snailtrail] [--workers 2] [--out DIR]
"""
import argparse
import json
import os
import sys

from loop_bench import print_migrations, print_run, print_timeline, timed_run


def run(a, rebalance):
    name = "rebalance" if rebalance else "static"
    stats = os.path.join(a.out, f"rebalance-{name}.json")
    cmd = [a.bin, "run", a.job, "--workers", str(a.workers), "--rate-profile", a.profile,
           "--skew-profile", a.skew, "--cost-us", str(a.cost_us), "--keys", str(a.keys),
           "--bins", str(a.bins), "--duration", a.duration, "--policy-interval",
           a.policy_interval, "--stats-json", stats, "--quiet"]
    if rebalance:
        cmd += ["--rebalance"]
    return (cmd, *timed_run(cmd, stats))


def p99_after(s, t_from):
    num = den = 0.0
    worst = 0.0
    for i in s["intervals"]:
        if i["t_s"] > t_from and i["records"] > 0:
            num += i["p99_ms"] * i["records"]
            den += i["records"]
            worst = max(worst, i["p99_ms"])
    return (num / den if den else float("nan")), worst


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default="build/bin/snailtrail")
    p.add_argument("--job", default="keycount")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--profile", default="0s:20k")
    p.add_argument("--skew", default="0s:0,3s:0.6")
    p.add_argument("--cost-us", type=float, default=50)
    p.add_argument("--keys", type=int, default=4_000_000)
    p.add_argument("--bins", type=int, default=256)
    p.add_argument("--duration", default="12s")
    p.add_argument("--policy-interval", default="1s")
    p.add_argument("--settle", type=float, default=0.5, help="seconds after the move's end")
    p.add_argument("--out", default="build/rebalance")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    results = {}
    for rebalance in (True, False):
        cmd, s, wall, cpu, load = run(a, rebalance)
        results[rebalance] = s
        print_run('--rebalance' if rebalance else 'without --rebalance', cmd, wall, cpu, load)
        for d in s.get("decisions", []):
            print(f"decision at {d['time_s']:.2f} s: {d['kind']} {d.get('straggler', '')} "
                  f"({d['reason']}); bins {d.get('bins', [])}")
        print_migrations(s, "migration")
        for c in s.get("cp_analyses", []):
            print(f"CP {c['from_s']:.1f}-{c['to_s']:.1f} s: top {c['top']} {100 * c['top_cp']:.1f}%, "
                  f"next {100 * c['next_cp']:.1f}%{' (straggler)' if c['straggler'] else ''}"
                  f"{' -> moved' if c['moved'] else ''} ({c.get('events', 0)} events analyzed in "
                  f"{c.get('analysis_ms', 0):.1f} ms)")
        print_timeline(s)
        print(f"output digest {s['output_digest']}")
        print()
    ms = results[True].get("migrations", [])
    if not ms:
        print("no rebalance migration: nothing to compare")
        return 1
    t_from = ms[0]["end_s"] + a.settle
    with_p99, with_worst = p99_after(results[True], t_from)
    without_p99, without_worst = p99_after(results[False], t_from)
    after_cp = [c for c in results[True].get("cp_analyses", []) if c["from_s"] >= ms[-1]["end_s"]]
    print(f"p99 after the move (from {t_from:.2f} s): with --rebalance {with_p99:.2f} ms "
          f"(worst interval {with_worst:.2f}), without {without_p99:.2f} ms (worst "
          f"{without_worst:.2f}); ratio {without_p99 / with_p99:.2f} (target >= 2)")
    for c in after_cp:
        print(f"CP after the move {c['from_s']:.1f}-{c['to_s']:.1f} s: top {c['top']} "
              f"{100 * c['top_cp']:.1f}% vs next x 2 = {200 * c['next_cp']:.1f}%: "
              f"{'below' if c['top_cp'] < 2 * c['next_cp'] else 'NOT below'}")
    if after_cp:  # the mean CP share per worker over the analyses after the move
        n = len(after_cp[0]["cp"])
        mean = [sum(c["cp"][w] for c in after_cp) / len(after_cp) for w in range(n)]
        before = [c for c in results[True].get("cp_analyses", []) if c["moved"]]
        if before:
            print("CP per worker at the decision: " +
                  ", ".join(f"worker-{w} {100 * x:.1f}%" for w, x in enumerate(before[0]["cp"])))
        print(f"mean CP per worker over the {len(after_cp)} analyses after the move: " +
              ", ".join(f"worker-{w} {100 * x:.1f}%" for w, x in enumerate(mean)))
    same = results[True]["output_digest"] == results[False]["output_digest"]
    print(f"output digests {'equal' if same else 'DIFFER'}")
    with open(os.path.join(a.out, "rebalance-summary.json"), "w") as f:
        json.dump({"p99_with_ms": with_p99, "p99_without_ms": without_p99,
                   "from_s": t_from, "digests_equal": same}, f)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
