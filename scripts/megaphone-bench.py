#!/usr/bin/env python3
"""Megaphone's evaluation (thesis §5.3) at this machine's scale (docs/MEGAPHONE.md).

  scripts/megaphone-bench.py [--bin build/bin/snailtrail] [--out build/bench/megaphone]
                             [--quick] [--keys N] [--rate R] [--workers W]

Runs `snailtrail run keycount` and writes results.json plus SVG figures into --out:
  overhead.svg    latency CCDF, --native vs --bins 2^4 .. 2^16, no migration (Fig. 5.12)
  strategies.svg  max latency vs duration of all-at-once / batched / fluid per bin count (5.15)
  rss.svg         RSS over time around the migration, per strategy (5.19)
  load.svg        offered load vs max latency per strategy (5.18; skipped with --quick)

  scripts/megaphone-bench.py --sweep bins|keys|proportional|headline|rss|load [--full] [--reps N]
                             [--csv FILE] [--out DIR] [--compare-bin OTHER_BINARY] [--at S]

One sweep instead (each small default runs in under a minute; --full: the larger sizes
of docs/MEGAPHONE.md). One migration of half the bins per run, all three strategies:
  bins          max latency / duration vs the number of bins, fixed keys (Fig. 5.15)
  keys          max latency / duration vs the number of keys (state size), fixed bins (5.16)
  proportional  keys and bins grow together, fixed state per bin (5.17)
  headline      --reps repetitions at one size, interleaved; with --compare-bin the same
                runs with a second binary interleaved with the first (before/after)
  rss           RSS over time (the run's rss_timeline, every 10 ms) of the same migration
                under each strategy (Fig. 5.19): rss-sweep.svg, per run the RSS before, the
                peak during and the RSS after the migration
  load          offered load (--rates) vs max latency, each strategy and no migration
                (Fig. 5.18): load-sweep.svg, the migration's max latency and the run's
Every row also has noise_max_ms: the largest latency of the 250 ms intervals in the 1 s
before the migration (the machine's noise floor at that moment), and stalled_intervals:
those of them in which no epoch completed (the dataflow was behind, e.g. still
allocating its state: the migration's max latency then includes that backlog). Rows go to --csv
(default OUT/sweep-NAME.csv) and OUT/sweep-NAME.json.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time


def run(binary, args, out_json):
    cmd = [binary, "run", "keycount", "-q", "--stats-json", out_json] + args
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    with open(out_json) as f:
        d = json.load(f)
    d["cmd"] = " ".join(cmd[1:])
    d["wall_s"] = time.time() - t0
    return d


def quantile(ccdf, q):
    """Smallest latency whose share at or above is <= 1 - q (ccdf: [[ms, share], ...])."""
    for ms, share in ccdf:
        if share <= 1 - q + 1e-12:
            return ms
    return ccdf[-1][0] if ccdf else 0


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0


# ---- a small SVG plotter (no matplotlib on the machine) ----
import math

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]


def svg_plot(path, title, xlabel, ylabel, series, logx=False, logy=False, points=False):
    W, H, L, R, T, B = 640, 420, 70, 170, 40, 50
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    if not xs:
        return
    fx = (lambda v: math.log10(max(v, 1e-9))) if logx else (lambda v: v)
    fy = (lambda v: math.log10(max(v, 1e-9))) if logy else (lambda v: v)
    x0, x1 = min(map(fx, xs)), max(map(fx, xs))
    y0, y1 = min(map(fy, ys)), max(map(fy, ys))
    if not logy:
        y0 = min(0, y0)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1 = y0 + 1
    px = lambda v: L + (fx(v) - x0) / (x1 - x0) * (W - L - R)
    py = lambda v: H - B - (fy(v) - y0) / (y1 - y0) * (H - T - B)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="20" font-size="13">%s</text>' % (L, title),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B),
         '<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((L + W - R) / 2, H - 12, xlabel),
         '<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>' % ((T + H - B) / 2, (T + H - B) / 2, ylabel)]
    for i in range(5):  # ticks
        for axis in "xy":
            lo, hi = (x0, x1) if axis == "x" else (y0, y1)
            v = lo + (hi - lo) * i / 4
            lab = ("%.3g" % (10 ** v)) if (logx if axis == "x" else logy) else ("%.3g" % v)
            if axis == "x":
                p = L + i / 4 * (W - L - R)
                o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (p, H - B + 15, lab))
            else:
                p = H - B - i / 4 * (H - T - B)
                o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 4, p + 4, lab))
                o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>' % (L, p, W - R, p))
    for k, (name, pts) in enumerate(series):
        c = COLORS[k % len(COLORS)]
        if points:
            for x, y in pts:
                o.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (px(x), py(y), c))
        else:
            d = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", px(x), py(y)) for j, (x, y) in enumerate(pts))
            o.append('<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>' % (d, c))
        o.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>' % (W - R + 10, T + 16 * k, c))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 25, T + 16 * k + 9, name))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def mig_row(d, start_pad=1.0):
    """The first migration of a run's stats plus the noise floor before it."""
    m = d["migrations"][0] if d.get("migrations") else {}
    start = m.get("start_s", 0)
    before = [i["max_ms"] for i in d["intervals"] if start - start_pad < i["t_s"] <= start]
    return {"duration_s": m.get("duration_s", 0), "max_latency_ms": m.get("max_latency_ms", 0),
            "noise_max_ms": max(before) if before else 0,
            # 250 ms intervals before the migration in which no epoch completed: the
            # dataflow was stalled or behind (e.g. still allocating its state), so the
            # migration's max latency includes that backlog.
            "stalled_intervals": sum(1 for v in before if v == 0), "bins_moved": m.get("bins_moved", 0),
            "bytes_moved": m.get("bytes_moved", 0), "steps": m.get("steps", 0),
            "completed": bool(m.get("completed")),
            "peak_rss_mb": max((i["rss_mb"] for i in d["intervals"]), default=0)}


SWEEPS = {
    # name: (small default, --full); each point (keys, bins)
    "bins": ([(4_000_000, 1 << k) for k in (4, 8, 12)],
             [(32_000_000, 1 << k) for k in (4, 6, 8, 10, 12, 14)]),
    "keys": ([(k, 256) for k in (1_000_000, 4_000_000, 16_000_000)],
             [(k, 4096) for k in (4_000_000, 16_000_000, 64_000_000)]),
    "proportional": ([(1 << 14 << k, 1 << k) for k in (6, 8, 10)],  # 16 Ki keys (128 KB) per bin
                     [(1 << 14 << k, 1 << k) for k in (8, 10, 12)]),
    "headline": ([(4_000_000, 4096)], [(32_000_000, 4096)]),
}

STRATEGIES = ("all-at-once", "batched", "fluid")


def mig_duration(at, bins, s, extra=0.0):
    """--duration long enough for the slowest strategy to finish while data still flows."""
    steps = bins // 2 if s == "fluid" else (bins // 4 if s == "batched" else 1)
    return at + max(1.5, 1.5 + steps * 0.002) + extra


def write_rows(a, name, rows, extra=None):
    csv_path = a.csv or os.path.join(a.out, "sweep-%s.csv" % name)
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "sweep-%s.json" % name), "w") as f:
        json.dump({"sweep": name, "loadavg": os.getloadavg()[0], "rows": rows, **(extra or {})}, f, indent=1)
    return csv_path


def rss_sweep(a):
    """Fig. 5.19: RSS over time of the same migration under each strategy."""
    keys, bins, at = (32_000_000, 4096, 3.0) if a.full else (8_000_000, 1024, 2.0)
    keys, bins, at = a.keys or keys, a.bins or bins, a.at or at
    rate, reps = a.rate or 200_000, a.reps or 1
    print("sweep rss: %d workers, %d keys (%.0f MB of counts), %d bins, %d records/s, migration at %gs, "
          "loadavg %.1f" % (a.workers, keys, keys * 8 / 2**20, bins, rate, at, os.getloadavg()[0]))
    rows, series, spans = [], [], []
    for rep in range(reps):
        for s in STRATEGIES:
            # 1.5 s more after the migration: what the RSS does once the moved state settled.
            dur = mig_duration(at, bins, s, 1.5)
            d = run(a.bin, ["--workers", str(a.workers), "--rate", str(rate), "--keys", str(keys),
                            "--duration", "%gs" % dur, "--bins", str(bins), "--migrate-at", "%gs" % at,
                            "--strategy", s], os.path.join(a.out, "rss-%d-%s-%d.json" % (keys, s, rep)))
            m = d["migrations"][0] if d.get("migrations") else {}
            tl = d.get("rss_timeline", [])
            start, end = m.get("start_s", at), m.get("end_s", at)
            before = [mb for t, mb in tl if start - 0.5 <= t < start]
            during = [mb for t, mb in tl if start <= t <= end + 0.1]  # +0.1 s: the frees after the last step
            # before the sources end (dur): then the job collects its output and RSS rises again
            after = [mb for t, mb in tl if end + 0.5 <= t <= min(end + 1.0, dur)]
            base = median(before)
            peak = max(during) if during else 0
            row = {"sweep": "rss", "rep": rep, "keys": keys, "bins": bins, "state_mb": round(keys * 8 / 2**20, 1),
                   "strategy": s, "rate": rate, "start_s": start, "end_s": end,
                   "duration_s": m.get("duration_s", 0), "max_latency_ms": m.get("max_latency_ms", 0),
                   "moved_mb": round(m.get("bytes_moved", 0) / 2**20, 1),
                   "rss_before_mb": round(base, 1), "rss_peak_mb": round(peak, 1),
                   "rss_rise_mb": round(peak - base, 1), "rss_after_mb": round(median(after), 1) if after else None,
                   "rss_max_mb": round(max((mb for _, mb in tl), default=0), 1),
                   "samples": len(tl), "completed": bool(m.get("completed")),
                   "wall_s": round(d["wall_s"], 2), "cmd": "snailtrail " + d["cmd"]}
            row.update({k: v for k, v in mig_row(d).items() if k in ("noise_max_ms", "stalled_intervals")})
            rows.append(row)
            print("rep %d %-11s migration %6.3f..%6.3f s  moved %6.1f MB  RSS before %6.1f  peak during %6.1f "
                  "(+%6.1f)  after %6s  run max %6.1f MB  max latency %8.2f ms%s"
                  % (rep, s, start, end, row["moved_mb"], base, peak, peak - base,
                     "-" if not after else "%.1f" % row["rss_after_mb"],
                     row["rss_max_mb"], row["max_latency_ms"], "" if row["completed"] else "  (NOT completed)")
                  + ("  (STALLED before the migration: raise --at)" if row["stalled_intervals"] else ""))
            if rep == 0:
                # up to the sources' end: after it the job collects its output (RSS rises again)
                series.append((s, [(round(t - start, 3), mb) for t, mb in tl if -1.0 <= t - start and t <= dur]))
                spans.append((s, end - start))
    csv_path = write_rows(a, "rss", rows, {"timelines": {n: pts for n, pts in series}})
    svg_plot(os.path.join(a.out, "rss-sweep.svg"),
             "RSS every 10 ms, %d keys, %d bins, migration at 0 (cf. Fig. 5.19)" % (keys, bins),
             "time since the migration started [s] (ends: %s)"
             % ", ".join("%s %.2f s" % (n, e) for n, e in spans), "RSS [MB]", series)
    print("wrote %s, %s/sweep-rss.json and %s/rss-sweep.svg" % (csv_path, a.out, a.out))


def load_sweep(a):
    """Fig. 5.18: offered load vs max latency, each strategy and no migration."""
    keys, bins, at = (32_000_000, 4096, 3.0) if a.full else (4_000_000, 1024, 2.0)
    keys, bins, at = a.keys or keys, a.bins or bins, a.at or at
    rates = [int(x) for x in a.rates.split(",")] if a.rates else \
        [50_000, 100_000, 200_000, 400_000] + ([800_000] if a.full else [])
    reps = a.reps or 1
    warm = at / 2  # intervals before this are the state's allocation, not steady state
    print("sweep load: %d workers, %d keys, %d bins, rates %s, migration at %gs, loadavg %.1f"
          % (a.workers, keys, bins, ",".join(map(str, rates)), at, os.getloadavg()[0]))
    rows = []
    for rep in range(reps):
        for r in rates:
            for s in ("none",) + STRATEGIES:
                dur = mig_duration(at, bins, "fluid" if s == "none" else s)
                args = ["--workers", str(a.workers), "--rate", str(r), "--keys", str(keys), "--duration",
                        "%gs" % dur, "--bins", str(bins)]
                if s != "none":
                    args += ["--migrate-at", "%gs" % at, "--strategy", s]
                d = run(a.bin, args, os.path.join(a.out, "load-%d-%s-%d.json" % (r, s, rep)))
                m = d["migrations"][0] if d.get("migrations") else {}
                start, end = m.get("start_s", at), m.get("end_s", at)
                # after the warm-up, up to the sources' end (the last interval also holds the
                # job's end: the output of every key is collected then, hundreds of ms)
                ivs = [i for i in d["intervals"] if warm < i["t_s"] <= dur]
                # steady state: the intervals that do not overlap the migration (+0.25 s)
                steady = [i["max_ms"] for i in ivs if not (start < i["t_s"] <= end + 0.5)] if m else \
                    [i["max_ms"] for i in ivs]
                row = {"sweep": "load", "rep": rep, "keys": keys, "bins": bins, "rate": r, "strategy": s,
                       "throughput": round(d["throughput"]),
                       "run_max_ms": max((i["max_ms"] for i in ivs), default=0),
                       "steady_max_ms": max(steady, default=0),
                       "migration_max_ms": m.get("max_latency_ms", 0) if m else None,
                       "duration_s": m.get("duration_s", 0) if m else None,
                       "completed": bool(m.get("completed")) if m else None,
                       "wall_s": round(d["wall_s"], 2), "cmd": "snailtrail " + d["cmd"]}
                rows.append(row)
                print("rep %d rate %8d %-11s achieved %9.0f/s  run max %9.2f ms  steady max %9.2f ms%s"
                      % (rep, r, s, row["throughput"], row["run_max_ms"], row["steady_max_ms"],
                         "" if not m else "  migration max %9.2f ms in %.3f s%s"
                         % (row["migration_max_ms"], row["duration_s"],
                            "" if row["completed"] else " (NOT completed)")))
    csv_path = write_rows(a, "load", rows)
    med = lambda s, r, k: median([x[k] for x in rows if x["strategy"] == s and x["rate"] == r])
    # The thesis plots the max latency of the whole run; on a noisy machine that is the
    # noise for all but all-at-once, so the migration's own max is plotted beside it.
    svg_plot(os.path.join(a.out, "load-sweep.svg"),
             "offered load vs max latency, %d keys, %d bins (cf. Fig. 5.18)" % (keys, bins),
             "offered load [records/s]", "max latency [ms]",
             [("no migration: run", [(r, med("none", r, "run_max_ms")) for r in rates])] +
             [("%s: migration" % s, [(r, med(s, r, "migration_max_ms")) for r in rates]) for s in STRATEGIES] +
             [("%s: run" % s, [(r, med(s, r, "run_max_ms")) for r in rates]) for s in STRATEGIES],
             logx=True, logy=True)
    print("\nmedian over %d rep(s): rate | achieved (no migration) | max latency ms, whole run after warm-up "
          "(migration's own) for no migration, all-at-once, batched, fluid" % reps)
    for r in rates:
        print("| %d | %d | %.0f | %s |" % (r, med("none", r, "throughput"), med("none", r, "run_max_ms"), " | ".join(
            "%.0f (%.1f)" % (med(s, r, "run_max_ms"), med(s, r, "migration_max_ms")) for s in STRATEGIES)))
    print("wrote %s, %s/sweep-load.json and %s/load-sweep.svg" % (csv_path, a.out, a.out))


def sweep(a):
    points = SWEEPS[a.sweep][1 if a.full else 0]
    rate = a.rate or 200_000
    at = a.at or (2.0 if not a.full else 3.0)
    bins_list = [("", a.bin)] + ([("compare", a.compare_bin)] if a.compare_bin else [])
    reps = a.reps or (3 if a.sweep == "headline" else 1)
    rows = []
    print("sweep %s: %d workers, %d records/s, migration at %gs, loadavg %.1f"
          % (a.sweep, a.workers, rate, at, os.getloadavg()[0]))
    for rep in range(reps):
        for keys, bins in points:
            for s in ("all-at-once", "batched", "fluid"):
                for tag, binary in bins_list:
                    # Long enough for the slowest strategy to finish while data still flows
                    # (fluid: one bin per step, ~1-2 epochs of 1 ms each).
                    steps = bins // 2 if s == "fluid" else (bins // 4 if s == "batched" else 1)
                    dur = at + max(1.5, 1.5 + steps * 0.002)
                    name = "%s-%d-%d-%s-%d%s" % (a.sweep, keys, bins, s, rep, "-" + tag if tag else "")
                    d = run(binary, ["--workers", str(a.workers), "--rate", str(rate), "--keys", str(keys),
                                     "--duration", "%gs" % dur, "--bins", str(bins), "--migrate-at", "%gs" % at,
                                     "--strategy", s], os.path.join(a.out, name + ".json"))
                    row = {"sweep": a.sweep, "binary": tag or "main", "rep": rep, "keys": keys, "bins": bins,
                           "state_mb": round(keys * 8 / 2**20, 1), "strategy": s, "rate": rate,
                           **mig_row(d), "wall_s": round(d["wall_s"], 2), "cmd": "snailtrail " + d["cmd"]}
                    rows.append(row)
                    print("%-7s rep %d keys %9d bins %5d %-11s duration %7.3f s  max latency %9.2f ms"
                          "  noise %8.2f ms  %7.1f MB moved  peak RSS %5.0f MB%s%s"
                          % (row["binary"], rep, keys, bins, s, row["duration_s"], row["max_latency_ms"],
                             row["noise_max_ms"], row["bytes_moved"] / 2**20, row["peak_rss_mb"],
                             "" if row["completed"] else "  (NOT completed)",
                             "  (STALLED before the migration: raise --at)" if row["stalled_intervals"] else ""))
    csv_path = a.csv or os.path.join(a.out, "sweep-%s.csv" % a.sweep)
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "sweep-%s.json" % a.sweep), "w") as f:
        json.dump({"sweep": a.sweep, "loadavg": os.getloadavg()[0], "rows": rows}, f, indent=1)
    # Medians per (binary, keys, bins, strategy) and all-at-once's ratio to the others.
    print("\nmedian over %d rep(s): binary keys bins strategy duration_s max_latency_ms noise_max_ms ratio" % reps)
    groups = {}
    for r in rows:
        groups.setdefault((r["binary"], r["keys"], r["bins"], r["strategy"]), []).append(r)
    for (b, k, n, s), rs in groups.items():
        lat = median([r["max_latency_ms"] for r in rs])
        aao = median([r["max_latency_ms"] for r in groups[(b, k, n, "all-at-once")]])
        print("  %-7s %9d %5d %-11s %7.3f %9.2f %8.2f %s" % (
            b, k, n, s, median([r["duration_s"] for r in rs]), lat, median([r["noise_max_ms"] for r in rs]),
            "" if s == "all-at-once" or lat <= 0 else "all-at-once/this %.1fx" % (aao / lat)))
    print("wrote %s and %s/sweep-%s.json" % (csv_path, a.out, a.sweep))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin/snailtrail")
    ap.add_argument("--out", default="build/bench/megaphone")
    ap.add_argument("--quick", action="store_true", help="small sizes, no load sweep (make bench)")
    ap.add_argument("--keys", type=int, default=0)
    ap.add_argument("--rate", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sweep", choices=sorted(SWEEPS) + ["load", "rss"], help="run one sweep instead (see above)")
    ap.add_argument("--bins", type=int, default=0, help="with --sweep rss|load: bins (default 1024, --full 4096)")
    ap.add_argument("--rates", default="", help="with --sweep load: records/s list (default 50000,...,400000; --full to 800000)")
    ap.add_argument("--full", action="store_true", help="with --sweep: the larger sizes")
    ap.add_argument("--at", type=float, default=0,
                    help="with --sweep: migration time in s (default 2, --full 3)")
    ap.add_argument("--reps", type=int, default=0, help="with --sweep: repetitions (headline: 3)")
    ap.add_argument("--csv", default="", help="with --sweep: CSV file (default OUT/sweep-NAME.csv)")
    ap.add_argument("--compare-bin", default="", help="with --sweep: a second binary, run interleaved")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.sweep == "rss":
        return rss_sweep(a)
    if a.sweep == "load":
        return load_sweep(a)
    if a.sweep:
        return sweep(a)
    keys = a.keys or (4_000_000 if a.quick else 32_000_000)
    rate = a.rate or (200_000 if a.quick else 400_000)
    W = str(a.workers)
    base = ["--workers", W, "--rate", str(rate), "--keys", str(keys)]
    res = {"keys": keys, "rate": rate, "workers": a.workers, "loadavg": os.getloadavg()[0]}
    print("keycount, %d workers, %d keys (%.0f MB of counts), %d records/s, loadavg %.1f"
          % (a.workers, keys, keys * 8 / 2**20, rate, res["loadavg"]))

    # Fig. 5.12: overhead without migration.
    over = {}
    dur = "3s" if a.quick else "6s"
    variants = [("native", ["--native"])] + [("2^%d" % k, ["--bins", str(1 << k)])
                                             for k in ((4, 12) if a.quick else (4, 8, 12, 16))]
    for name, extra in variants:
        d = run(a.bin, base + ["--duration", dur] + extra, os.path.join(a.out, "over-%s.json" % name))
        steady = [i["p99_ms"] for i in d["intervals"][2:]]
        over[name] = {"p50_ms": quantile(d["ccdf"], 0.5), "p99_ms": quantile(d["ccdf"], 0.99),
                      "max_ms": quantile(d["ccdf"], 1.0), "median_interval_p99_ms": median(steady),
                      "throughput": d["throughput"], "ccdf": d["ccdf"], "cmd": d["cmd"]}
        print("overhead %-7s p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms  (median 250ms-interval p99 %.3f ms)"
              % (name, over[name]["p50_ms"], over[name]["p99_ms"], over[name]["max_ms"], over[name]["median_interval_p99_ms"]))
    res["overhead"] = over
    if "2^12" in over and over["native"]["p99_ms"] > 0:
        print("p99 at 2^12 bins / native: %.2f (thesis: 2.88 / 1.70 = 1.69; target <= 2)"
              % (over["2^12"]["p99_ms"] / over["native"]["p99_ms"]))
    svg_plot(os.path.join(a.out, "overhead.svg"), "keycount latency CCDF, no migration (cf. Fig. 5.12)",
             "latency [ms]", "share of epochs at or above",
             [(n, [(ms, s) for ms, s in v["ccdf"] if s > 0]) for n, v in over.items()], logx=True, logy=True)

    # Fig. 5.15 / 5.19: one migration of half the bins, per strategy and bin count.
    mig = []
    at = 2.0 if a.quick else 3.0
    for bins in ((256, 4096) if a.quick else (256, 4096)):
        for s in ("all-at-once", "batched", "fluid"):
            dur_s = at + (4 if a.quick else 7)
            d = run(a.bin, base + ["--duration", "%gs" % dur_s, "--bins", str(bins),
                                   "--migrate-at", "%gs" % at, "--strategy", s],
                    os.path.join(a.out, "mig-%d-%s.json" % (bins, s)))
            m = d["migrations"][0] if d["migrations"] else {}
            row = {"bins": bins, "strategy": s, **m,
                   "rss": d.get("rss_timeline") or [(i["t_s"], i["rss_mb"]) for i in d["intervals"]],
                   "p99": [(i["t_s"], i["p99_ms"]) for i in d["intervals"]], "cmd": d["cmd"]}
            mig.append(row)
            print("migration bins %5d %-11s duration %7.3f s  max latency %9.3f ms  %8.1f MB moved  peak RSS %.0f MB%s"
                  % (bins, s, m.get("duration_s", 0), m.get("max_latency_ms", 0), m.get("bytes_moved", 0) / 2**20,
                     max(r for _, r in row["rss"]) if row["rss"] else 0,
                     "" if m.get("completed") else "  (NOT completed)"))
    res["migrations"] = mig
    svg_plot(os.path.join(a.out, "strategies.svg"), "one migration of half the bins (cf. Fig. 5.15)",
             "duration [s]", "max latency [ms]",
             [("%s 2^%d" % (r["strategy"], r["bins"].bit_length() - 1), [(r.get("duration_s", 0), r.get("max_latency_ms", 0))])
              for r in mig], logx=True, logy=True, points=True)
    top = max(r["bins"] for r in mig)
    svg_plot(os.path.join(a.out, "rss.svg"), "RSS over time, %d bins, migration at %gs (cf. Fig. 5.19)" % (top, at),
             "time [s]", "RSS [MB]", [(r["strategy"], r["rss"]) for r in mig if r["bins"] == top])

    # Fig. 5.18: offered load vs max latency.
    if not a.quick:
        load = []
        for r in (rate // 4, rate // 2, rate):
            for s in ("all-at-once", "batched", "fluid"):
                d = run(a.bin, ["--workers", W, "--rate", str(r), "--keys", str(keys), "--duration", "%gs" % (at + 5),
                                "--bins", "4096", "--migrate-at", "%gs" % at, "--strategy", s],
                        os.path.join(a.out, "load-%d-%s.json" % (r, s)))
                m = d["migrations"][0] if d["migrations"] else {}
                load.append({"rate": r, "strategy": s, **m})
                print("load %8d/s %-11s max latency %9.3f ms  duration %.3f s"
                      % (r, s, m.get("max_latency_ms", 0), m.get("duration_s", 0)))
        res["load"] = load
        svg_plot(os.path.join(a.out, "load.svg"), "offered load vs max latency, 2^12 bins (cf. Fig. 5.18)",
                 "offered load [records/s]", "max latency [ms]",
                 [(s, [(x["rate"], x.get("max_latency_ms", 0)) for x in load if x["strategy"] == s])
                  for s in ("all-at-once", "batched", "fluid")], logy=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("wrote %s/results.json and SVG figures" % a.out)


if __name__ == "__main__":
    main()
