#!/usr/bin/env bash
# keycount's throughput under a competing CPU load (docs/RUNTIME.md "Under a competing load
# (rt49)", issue #35): each round runs `run keycount` at every worker count and every number
# of busy loops (`sh -c 'while :; do :; done'`, started before the run and killed after it,
# on top of whatever else the machine runs), and prints each run's throughput and its
# fraction of the same round's run without busy loops.
#
#   BIN=build/bin/snailtrail ROUNDS=3 scripts/keycount-under-load.sh
#
# Settings (environment): BIN (default build/bin/snailtrail), ROUNDS (3), WORKERS ("1 2"),
# LOOPS ("0 2 4": busy loops; 0 must come first, it is the round's baseline), RECORDS
# (10000000), KEYS (1000000), DURATION (120s).
# The "share" column is the CPU our workers would get if the scheduler split the cores
# evenly among the runnable threads (ours and the busy loops; the background load is not
# counted): min(1, cores / (workers + loops)) * workers / min(workers, cores), as a
# fraction of the run without loops. A fraction well below it means we lose more than the
# CPU the loops take.
set -euo pipefail

BIN=${BIN:-build/bin/snailtrail}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-"1 2"}
LOOPS=${LOOPS:-"0 2 4"}
RECORDS=${RECORDS:-10000000}
KEYS=${KEYS:-1000000}
DURATION=${DURATION:-120s}
CORES=$(nproc)

tmp=$(mktemp -d)
busy=()
stop_busy() {
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${busy[@]}"; do wait "$p" 2>/dev/null || true; done
  busy=()
}
trap 'stop_busy; rm -rf "$tmp"' EXIT

throughput() {  # the JSON's "throughput", in M records/s
  python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["throughput"] / 1e6))' "$1"
}

printf '%-5s %-7s %-5s %-10s %-8s %-6s %-10s %s\n' round workers loops 'M rec/s' fraction share 'cpu u+s' load
for ((r = 1; r <= ROUNDS; ++r)); do
  for w in $WORKERS; do
    base=""
    for n in $LOOPS; do
      for ((i = 0; i < n; ++i)); do
        sh -c 'while :; do :; done' &
        busy+=($!)
      done
      load=$(cut -d' ' -f1 /proc/loadavg)
      /usr/bin/time -f '%U %S' -o "$tmp/time" "$BIN" run keycount --workers "$w" --rate max \
        --records "$RECORDS" --keys "$KEYS" --duration "$DURATION" -q --stats-json "$tmp/s.json"
      stop_busy
      tp=$(throughput "$tmp/s.json")
      cpu=$(awk '{printf "%.2f", $1 + $2}' "$tmp/time")
      [[ -z "$base" ]] && base=$tp
      frac=$(awk -v a="$tp" -v b="$base" 'BEGIN {printf "%.2f", a / b}')
      share=$(awk -v w="$w" -v n="$n" -v c="$CORES" \
        'BEGIN {s = c / (w + n); if (s > 1) s = 1; m = w < c ? w : c; printf "%.2f", s * w / m}')
      printf '%-5s %-7s %-5s %-10s %-8s %-6s %-10s %s\n' "$r" "$w" "$n" "$tp" "$frac" "$share" "$cpu" "$load"
    done
  done
done
