#!/usr/bin/env bash
# Before/after of the closed loop planning off worker 0 (issue 35, docs/CLOSED-LOOP.md):
# two closed-loop commands, 3 runs of each binary alternating; one line per run (the load
# average before it, throughput, the p99 epoch latency of the 250 ms intervals after 1 s).
#   scripts/planner-thread-ab.sh BEFORE_BIN AFTER_BIN [OUT_DIR]
set -u
before=$1 after=$2 out=${3:-$(mktemp -d)}
A="run keycount --autoscale --max-workers 3 --rate-profile 0s:6k,3s:14k,7s:4k --cost-us 50 --keys 8000000 --bins 256 --duration 11s --policy-interval 1s --target-utilization 0.6"
B="run keycount --autoscale --rebalance --max-workers 2 --initial-workers 2 --rate 200k --keys 1000000 --bins 256 --policy-interval 500ms --duration 8s"
for cmd in A B; do
  for i in 1 2 3; do
    for which in before after; do
      bin=${!which}
      f=$out/$cmd-$which-$i.json
      load=$(cut -d' ' -f1 /proc/loadavg)
      $bin ${!cmd} --quiet --stats-json $f >/dev/null 2>$out/$cmd-$which-$i.err || echo "FAIL $cmd $which $i"
      python3 - "$f" "$cmd" "$which" "$i" "$load" <<'PY'
import json, sys, statistics
d = json.load(open(sys.argv[1]))
iv = [x for x in d["intervals"] if x["t_s"] > 1.0 and x["samples"] > 0]
p99 = [x["p99_ms"] for x in iv]
dec = d.get("decisions", [])
near = [x["p99_ms"] for x in iv if any(abs(x["t_s"] - q["time_s"]) <= 0.5 for q in dec)]
print(f"{sys.argv[2]} {sys.argv[3]:6} run {sys.argv[4]} load {sys.argv[5]:>5}: {d['throughput']:9.0f} rec/s, "
      f"p99 median {statistics.median(p99):7.2f} ms, max {max(p99):8.2f} ms, "
      f"p99 within 0.5 s of a decision: max {max(near) if near else float('nan'):8.2f} ms, decisions {len(dec)}, "
      f"analyses {len(d.get('cp_analyses', []))}")
PY
    done
  done
done
