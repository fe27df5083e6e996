#!/usr/bin/env python3
"""NEXMark queries under migration (thesis §5.4, Figs. 5.6-5.11; docs/NEXMARK.md).

For each query Q3-Q8 and each strategy, one open-loop run of `snailtrail run
nexmark-qN --bins B --payloads` on 2 workers with migrations at T/3 (round-robin ->
worker 0 holds half of the bins) and 2T/3 (back). Writes per query an SVG latency
timeline (max latency of each 250 ms interval, one line per strategy, the migrations
shaded) and prints a table: per migration the strategy, duration, max latency, bins and
bytes moved. Usage:

  scripts/nexmark-migrate.py [--out DIR] [--queries 3,4,5,6,7,8]
      [--strategies all-at-once,batched,fluid] [--seconds 9] [--rate 200000] [--bins 256]
      [--in-flight-auctions 100000] [--dilation 10] [--workers 2] [--large-state]
      [--query-args 'qN=FLAGS' ...]
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

COLORS = {"all-at-once": "#d62728", "batched": "#1f77b4", "fluid": "#2ca02c"}


# --large-state: Q5 and Q8 with state large enough for the strategies to differ (thesis
# Figs. 5.8 and 5.11; docs/NEXMARK.md): long event-time windows, time-dilated as
# Megaphone does, whose first close (7 s of wall time) comes after both migrations (3 s
# and 6 s of a 9 s run), so these find 3 s and 6 s of state. Q5: 28 s windows sliding by
# 3.5 s (eight counts per auction), dilated 4x. Q8: 70 s windows dilated 10x, at
# 400000 events/s (Q8 is cheap) with the in-flight auctions scaled with the rate.
LARGE_STATE = {
    5: "--window 28s --window-slide 3500ms --dilation 4",
    8: "--rate 400000 --in-flight-auctions 200000 --window 70s --dilation 10",
}


def query_flags(q, a):
    """The knobs of query q: the defaults, then --large-state's, then --query-args'."""
    flags = {"--rate": str(a.rate), "--in-flight-auctions": str(a.in_flight_auctions),
             "--dilation": str(a.dilation)}
    extra = []
    if a.large_state and q in LARGE_STATE:
        extra.append(LARGE_STATE[q])
    extra += [v.split("=", 1)[1] for v in a.query_args if v.split("=", 1)[0] == f"q{q}"]
    for e in extra:
        words = shlex.split(e)
        for i in range(0, len(words) - 1, 2):
            flags[words[i]] = words[i + 1]
    return flags


def run(binary, q, strategy, a, out_json):
    secs = a.seconds
    m1, m2 = secs / 3, 2 * secs / 3
    cmd = [binary, "run", f"nexmark-q{q}", "--workers", str(a.workers),
           "--duration", f"{secs}s", "--bins", str(a.bins),
           "--migrate-at", f"{int(m1 * 1000)}ms,{int(m2 * 1000)}ms", "--strategy", strategy,
           "--payloads", "--quiet", "--stats-json", out_json]
    for k, v in query_flags(q, a).items():
        cmd += [k, v]
    subprocess.run(cmd, check=True)
    with open(out_json) as f:
        return cmd, json.load(f)


def svg_timeline(path, q, runs, secs):
    W, H, L, B = 640, 300, 60, 40
    ymax = max([iv["max_ms"] for d in runs.values() for iv in d["intervals"]] + [1.0])
    def x(t):
        return L + (W - L - 20) * t / secs
    def y(v):
        return H - B - (H - B - 20) * v / ymax
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'font-family="sans-serif" font-size="11">',
             f'<text x="{W / 2}" y="14" text-anchor="middle">nexmark-q{q}: max latency per '
             f'250 ms interval (ms)</text>']
    for strategy, d in runs.items():
        for m in d.get("migrations", []):
            end = m["end_s"] if m["completed"] else secs
            parts.append(f'<rect x="{x(m["start_s"]):.1f}" y="20" '
                         f'width="{max(1.0, x(end) - x(m["start_s"])):.1f}" height="{H - B - 20}" '
                         f'fill="{COLORS.get(strategy, "#888")}" opacity="0.12"/>')
    parts.append(f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="black"/>')
    parts.append(f'<line x1="{L}" y1="20" x2="{L}" y2="{H - B}" stroke="black"/>')
    for i in range(5):
        v = ymax * i / 4
        parts.append(f'<text x="{L - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    for s in range(int(secs) + 1):
        parts.append(f'<text x="{x(s):.1f}" y="{H - B + 14}" text-anchor="middle">{s}</text>')
    parts.append(f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">time since start (s)</text>')
    for i, (strategy, d) in enumerate(runs.items()):
        pts = " ".join(f'{x(iv["t_s"]):.1f},{y(iv["max_ms"]):.1f}' for iv in d["intervals"])
        c = COLORS.get(strategy, "#888")
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.5"/>')
        parts.append(f'<text x="{L + 10 + 110 * i}" y="32" fill="{c}">{strategy}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="/tmp/nexmark-migrate")
    p.add_argument("--queries", default="3,4,5,6,7,8")
    p.add_argument("--strategies", default="all-at-once,batched,fluid")
    p.add_argument("--seconds", type=float, default=9)
    p.add_argument("--rate", type=int, default=200000)
    p.add_argument("--bins", type=int, default=256)
    p.add_argument("--in-flight-auctions", type=int, default=100000)
    p.add_argument("--dilation", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--large-state", action="store_true",
                   help="Q5 and Q8 with long dilated windows (LARGE_STATE above)")
    p.add_argument("--query-args", action="append", default=[], metavar="qN=FLAGS",
                   help="flags for one query, e.g. 'q5=--window 60s --dilation 4' (repeatable)")
    p.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                   "bin", "snailtrail"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    load = os.getloadavg()[0]
    print(f"NEXMark under migration: {a.workers} workers, {a.rate} events/s, {a.seconds} s, "
          f"{a.bins} bins, --payloads, --in-flight-auctions {a.in_flight_auctions}, "
          f"--dilation {a.dilation}; loadavg {load:.1f}, {os.cpu_count()} cores")
    for q in [int(v) for v in a.queries.split(",")]:
        if a.large_state and q in LARGE_STATE or any(v.startswith(f"q{q}=") for v in a.query_args):
            print(f"  q{q}: " + " ".join(f"{k} {v}" for k, v in query_flags(q, a).items()))
    print(f"{'query':6} {'strategy':12} {'mig':>3} {'start_s':>7} {'dur_s':>7} "
          f"{'max_lat_ms':>10} {'bins':>5} {'MB':>7} {'tput':>9} {'run_p99_ms':>10}")
    for q in [int(v) for v in a.queries.split(",")]:
        runs = {}
        for strategy in a.strategies.split(","):
            cmd, d = run(a.binary, q, strategy, a, os.path.join(a.out, f"q{q}-{strategy}.json"))
            runs[strategy] = d
            ccdf = d["ccdf"]
            p99 = next((ms for ms, share in ccdf if share <= 0.01), ccdf[-1][0] if ccdf else 0)
            for i, m in enumerate(d.get("migrations", [])):
                print(f"q{q:<5} {strategy:12} {i + 1:>3} {m['start_s']:>7.2f} "
                      f"{m['duration_s']:>7.2f} {m['max_latency_ms']:>10.1f} {m['bins_moved']:>5} "
                      f"{m['bytes_moved'] / 1e6:>7.2f} {d['throughput']:>9.0f} {p99:>10.1f}"
                      f"{'' if m['completed'] else ' (not completed)'}")
            sys.stdout.flush()
        svg_timeline(os.path.join(a.out, f"nexmark-q{q}-migration.svg"), q, runs, a.seconds)
    print(f"figures and JSON in {a.out}")


if __name__ == "__main__":
    main()
