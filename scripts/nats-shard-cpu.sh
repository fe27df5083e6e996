#!/bin/bash
# CPU time (user + sys, /usr/bin/time) of each `serve --nats --shard I/N --drain` shard
# for N = 1, 2 and 4 on nats-bench.sh's synthetic trace (docs/SERVE.md, "Through NATS
# JetStream", Throughput). On a machine shared with other work wall time is noise; the
# CPU time a shard spends is what N machines would each spend. BINS: snailtrail binaries
# to compare (default build/bin/snailtrail), run alternately, ROUNDS times each; every
# run checks that the shards' windows together equal one shard's.
# Usage: [BINS="OLD NEW"] [WINDOW=1s] scripts/nats-shard-cpu.sh [SECONDS_OF_TRACE] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:-$PWD/build/bin/snailtrail}
WINDOW=${WINDOW:-1s}
SECONDS_OF_TRACE=${1:-20}
ROUNDS=${2:-3}
NATS=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$NATS" ] || { echo "nats-shard-cpu: nats-server is not installed (make deps)"; exit 77; }
WORK=$(mktemp -d /tmp/snailtrail-nats-cpu-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
FIRST=${BINS%% *}
"$FIRST" bench --generate "$WORK/syn.snail" --seconds "$SECONDS_OF_TRACE" 2>/dev/null
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
"$NATS" -js -a 127.0.0.1 -p "$PORT" -sd "$WORK/store" >"$WORK/nats.log" 2>&1 &
for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done
URL="nats://127.0.0.1:$PORT/BENCH"
"$FIRST" send "$WORK/syn.snail" --to "$URL" -q
echo "# binary round N shard user_s sys_s maxrss_kb (window $WINDOW)"
for R in $(seq "$ROUNDS"); do
  B=0
  for BIN in $BINS; do
    B=$((B + 1))
    for N in 1 2 4; do
      PIDS=()
      for I in $(seq 0 $((N - 1))); do
        D="b${B}r${R}n${N}s$I"
        /usr/bin/time -o "$WORK/$D.time" -f "%U %S %M" "$BIN" serve --nats "$URL" --durable "$D" \
          --shard "$I/$N" --drain --window "$WINDOW" --start-grace 0 --quiet --out "$WORK/$D.jsonl" &
        PIDS+=($!)
      done
      for P in "${PIDS[@]}"; do wait "$P"; done
      for I in $(seq 0 $((N - 1))); do echo "$BIN $R $N $I $(cat "$WORK/b${B}r${R}n${N}s$I.time")"; done
      cat "$WORK"/b${B}r${R}n${N}s*.jsonl | sort | cmp -s - <(sort "$WORK/b${B}r${R}n1s0.jsonl") ||
        { echo "nats-shard-cpu: the $N shards' windows differ from one shard's ($BIN)"; exit 1; }
    done
  done
done
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg)"
