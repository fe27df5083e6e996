"""What the closed-loop benchmarks share (scripts/closed-loop-bench.py,
scripts/rebalance-bench.py): one timed `snailtrail run` with its --stats-json, and the
report of a run (command, wall and CPU time, migrations, latency timeline)."""
import json
import os
import resource
import subprocess
import sys
import time


def timed_run(cmd, stats):
    """Runs cmd (which writes --stats-json to `stats`); returns the stats, the wall time,
    the CPU time (user + sys of the run) and the load average before it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True)
    sys.stdout.flush()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(stats) as f:
        s = json.load(f)
    return s, wall, cpu, load


def print_run(title, cmd, wall, cpu, load):
    print(f"## {title}", flush=True)
    print("$ " + " ".join(cmd))
    print(f"wall {wall:.1f} s, CPU {cpu:.1f} s (user+sys), load average before {load:.2f}")


def print_migrations(s, label):
    """Each migration of the stats `s`; `label` names them ("migration", ...)."""
    for m in s.get("migrations", []):
        print(f"{label} ({m['strategy']}): {m['bins_moved']} bins, "
              f"{m['bytes_moved'] / 1e6:.1f} MB, {m['start_s']:.2f} .. {m['end_s']:.2f} s, "
              f"max latency {m['max_latency_ms']:.1f} ms")


def print_timeline(s):
    print("timeline (t_s, records, p99_ms, max_ms):")
    for i in s["intervals"]:
        print(f"  {i['t_s']:6.2f} {i['records']:7d} {i['p99_ms']:9.2f} {i['max_ms']:9.2f}")
