#!/usr/bin/env python3
"""The closed loop's benchmark (docs/CLOSED-LOOP.md): the same rate step on
keycount-megaphone with --autoscale, once applied as Megaphone migrations (--reconfigure
migrate, batched by default) and once through the restart baseline (--reconfigure
restart: stop the input, drain, move every changed bin at once, resume), on the same
state size. Prints each run's decisions, migrations (max latency from the start of the
reconfiguration until it completes) and the 250 ms latency timeline, and the ratio of the
maximum latencies; CPU time (user + sys of the run) and the load average give the context.

  scripts/closed-loop-bench.py [--bin build/bin/snailtrail] [--keys 4000000] [--out DIR]

--compare (docs/CLOSED-LOOP.md "Hysteresis (loop49)"): the overload command of "Under
overload" (keycount, 8 M keys, 1024 bins, 2 workers, 8 us per record, 50 k then from 10 s
200 k records/s, 40 s) with --reconfigure migrate and restart at each --intervals, for
--rounds rounds (per round: each interval's migrate then restart), and the table of
"Measured": the decisions, the latency at the overload's decision, the worst in the 10 s
after it, at the decision + 2 policy intervals and + 2 s, and migrate / restart.

  BIN=build/bin/snailtrail scripts/closed-loop-bench.py --compare [--rounds 3]
      [--intervals 1s,500ms,250ms] [--out DIR] [-- EXTRA RUN OPTIONS]
"""
import argparse
import json
import os
import sys

from loop_bench import print_migrations, print_run, print_timeline, timed_run


def run(binary, mode, a, out_dir):
    stats = os.path.join(out_dir, f"closed-loop-{mode}.json")
    cmd = [binary, "run", a.job, "--autoscale", "--max-workers", str(a.max_workers),
           "--rate-profile", a.profile, "--cost-us", str(a.cost_us), "--keys", str(a.keys),
           "--bins", str(a.bins), "--duration", a.duration, "--policy-interval",
           a.policy_interval, "--reconfigure", mode, "--stats-json", stats, "--quiet",
           "--target-utilization", str(a.target_utilization)]
    if mode == "migrate":
        cmd += ["--strategy", a.strategy]
    return (cmd, *timed_run(cmd, stats))


def seconds(text):
    """A duration of the CLI ("250ms", "1s", "2.5s") in seconds."""
    for unit, scale in (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float(text)


def overload_figures(s, step_s, interval_s):
    """From one run's --stats-json: (decisions text, reference time, at decision, worst in
    10 s, + 2 policy intervals, + 2 s). The reference is the first scale-out decided at or
    after the step (its evidence ends after it); if the job already ran on more workers
    then (an earlier scale-out kept) or none came, the step itself, marked. Latencies are
    the max_ms of the 250 ms stats interval containing the time (None: 0 ms, no epoch
    completed in it, a stall)."""
    ds = s.get("decisions", [])
    text = ", ".join(f"{d['time_s']:.2f}->{d['active_workers']}"
                     + (f" [{d['evidence_end_s']:g}]" if "evidence_end_s" in d else "")
                     for d in ds) or "none"
    active, ref, marked = 1, None, False
    for d in ds:
        if d.get("evidence_end_s", d["time_s"]) > step_s and d["active_workers"] > active:
            ref = d["time_s"]
            break
        active = d["active_workers"]
    if ref is None:
        ref, marked = step_s, True
    iv = s.get("intervals", [])

    def at(t):
        for i in iv:
            if i["t_s"] - 0.25 < t <= i["t_s"] + 1e-9:
                return i["max_ms"] if i["max_ms"] > 0 else None
        return None

    worst = max((i["max_ms"] for i in iv if ref < i["t_s"] <= ref + 10 + 0.25), default=None)
    return text, ref, marked, at(ref), worst, at(ref + 2 * interval_s), at(ref + 2)


def ms(v):
    return "stall" if v is None else f"{v:.0f} ms"


def compare(a, extra):
    binary = os.environ.get("BIN", a.bin)
    os.makedirs(a.out, exist_ok=True)
    profile = "0s:50000,10s:200000"
    step_s = 10.0
    rows, raw = [], []
    for r in range(1, a.rounds + 1):
        for interval in a.intervals.split(","):
            row = {"interval": interval, "round": r}
            for mode in ("migrate", "restart"):
                stats = os.path.join(a.out, f"compare-{interval}-{mode}-{r}.json")
                cmd = [binary, "run", "keycount", "--keys", "8000000", "--bins", "1024",
                       "--max-workers", "2", "--cost-us", "8", "--rate-profile", profile,
                       "--duration", a.duration, "--autoscale", "--policy-interval", interval,
                       "--reconfigure", mode, "--stats-json", stats, "--quiet"] + extra
                s, wall, cpu, load = timed_run(cmd, stats)
                print(f"# {interval} {mode} round {r}: load {load:.2f}, wall {wall:.1f} s, "
                      f"CPU {cpu:.1f} s: " + " ".join(cmd), flush=True)
                f = overload_figures(s, step_s, seconds(interval))
                row[mode] = (load, *f, s.get("output_digest", ""))
                raw.append({"interval": interval, "round": r, "mode": mode, "load": load,
                            "decisions": s.get("decisions", []), "reference_s": f[1],
                            "at_decision_ms": f[3], "worst_10s_ms": f[4],
                            "plus_2_intervals_ms": f[5], "plus_2s_ms": f[6]})
            rows.append(row)
    print()
    print("| interval, round | load | migrate: decisions | at decision | 10 s | +2 I | +2 s "
          "| restart: decisions | at decision | 10 s | +2 I | +2 s | ratio (10 s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        m, x = row["migrate"], row["restart"]
        ratio = (f"{m[5] / x[5]:.2f}" if m[5] is not None and x[5] else "n/a")
        def part(v):
            text = v[1] + (" (no scale-out after the step: from the step)" if v[3] else "")
            return f"{text} | {ms(v[4])} | {ms(v[5])} | {ms(v[6])} | {ms(v[7])}"
        print(f"| {row['interval']}, {row['round']} | {m[0]:.1f} / {x[0]:.1f} | {part(m)} | "
              f"{part(x)} | {ratio} |")
    digests = sorted({row[m][8] for row in rows for m in ("migrate", "restart")})
    print(f"\noutput digests: {', '.join(d or '?' for d in digests)}")
    flaps = sum(1 for v in raw if sum(1 for d in v["decisions"]
                                      if d["active_workers"] < 2) > 0)
    print(f"runs with a scale-in: {flaps} of {len(raw)}")
    with open(os.path.join(a.out, "compare-summary.json"), "w") as f:
        json.dump(raw, f, indent=1)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default="build/bin/snailtrail", help="(or BIN=...)")
    p.add_argument("--compare", action="store_true",
                   help="migrate vs restart at --intervals, --rounds rounds (see above)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--intervals", default="1s,500ms,250ms")
    p.add_argument("--job", default="keycount")
    p.add_argument("--max-workers", type=int, default=4)
    p.add_argument("--profile", default="0s:6k,3s:14k,7s:4k")
    p.add_argument("--cost-us", type=float, default=50)
    p.add_argument("--keys", type=int, default=8_000_000)
    p.add_argument("--bins", type=int, default=256)
    p.add_argument("--duration", default=None, help="default 11s (--compare: 40s)")
    p.add_argument("--policy-interval", default="1s")
    p.add_argument("--strategy", default="batched")
    p.add_argument("--target-utilization", type=float, default=0.6)
    p.add_argument("--out", default="build/closed-loop")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if a.compare:
        a.duration = a.duration or "40s"
        return compare(a, extra)
    a.duration = a.duration or "11s"
    a.bin = os.environ.get("BIN", a.bin)
    os.makedirs(a.out, exist_ok=True)
    results = {}
    for mode in ("migrate", "restart"):
        cmd, s, wall, cpu, load = run(a.bin, mode, a, a.out)
        results[mode] = s
        print_run(f"--reconfigure {mode}", cmd, wall, cpu, load)
        for d in s.get("decisions", []):
            print(f"decision at {d['time_s']:.2f} s: {d['active_workers']} workers ({d['reason']})")
        print_migrations(s, "reconfiguration")
        print_timeline(s)
        print()
    def worst(s):
        ms = s.get("migrations", [])
        return max((m["max_latency_ms"] for m in ms), default=0.0)
    mig, rst = worst(results["migrate"]), worst(results["restart"])
    print(f"max latency during a reconfiguration: migrate {mig:.1f} ms, restart {rst:.1f} ms, "
          f"ratio {mig / rst if rst > 0 else float('nan'):.3f} (target <= 0.1)")
    with open(os.path.join(a.out, "closed-loop-summary.json"), "w") as f:
        json.dump({"migrate_max_ms": mig, "restart_max_ms": rst}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
