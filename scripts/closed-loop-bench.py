#!/usr/bin/env python3
"""The closed loop's benchmark (docs/CLOSED-LOOP.md): the same rate step on
keycount-megaphone with --autoscale, once applied as Megaphone migrations (--reconfigure
migrate, batched by default) and once through the restart baseline (--reconfigure
restart: stop the input, drain, move every changed bin at once, resume), on the same
state size. Prints each run's decisions, migrations (max latency from the start of the
reconfiguration until it completes) and the 250 ms latency timeline, and the ratio of the
maximum latencies; CPU time (user + sys of the run) and the load average give the context.

  scripts/closed-loop-bench.py [--bin build/bin/snailtrail] [--keys 4000000] [--out DIR]
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default="build/bin/snailtrail")
    p.add_argument("--job", default="keycount")
    p.add_argument("--max-workers", type=int, default=4)
    p.add_argument("--profile", default="0s:6k,3s:14k,7s:4k")
    p.add_argument("--cost-us", type=float, default=50)
    p.add_argument("--keys", type=int, default=8_000_000)
    p.add_argument("--bins", type=int, default=256)
    p.add_argument("--duration", default="11s")
    p.add_argument("--policy-interval", default="1s")
    p.add_argument("--strategy", default="batched")
    p.add_argument("--target-utilization", type=float, default=0.6)
    p.add_argument("--out", default="build/closed-loop")
    a = p.parse_args()
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
