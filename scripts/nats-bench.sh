#!/bin/bash
# Throughput through NATS JetStream against the direct path (docs/SERVE.md, "Through NATS
# JetStream"): one synthetic trace is analyzed by `serve --tcp` fed by `send` (direct),
# then published with `send --to nats://...` and analyzed by 1, 2 and 4 `serve --nats
# --drain` shards at once. Prints events/s end to end (publish + analysis for the broker).
# Usage: scripts/nats-bench.sh [SECONDS_OF_TRACE]   (default 20). Needs nats-server
# (make deps) and build/bin/snailtrail. Loopback only; the broker's store is temporary.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/build/bin/snailtrail}
SECONDS_OF_TRACE=${1:-20}
NATS=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$NATS" ] || { echo "nats-bench: nats-server is not installed (make deps)"; exit 77; }
WORK=$(mktemp -d /tmp/snailtrail-nats-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BIN" bench --generate "$WORK/syn.snail" --seconds "$SECONDS_OF_TRACE" 2>/dev/null
EVENTS=$("$BIN" convert "$WORK/syn.snail" "$WORK/syn.jsonl" 2>&1 | awk '{print $2}')
rm -f "$WORK/syn.jsonl"
now() { date +%s.%N; }
rate() { python3 -c "import sys; e,s=float(sys.argv[1]),float(sys.argv[2]); print(f'{s:.2f} s, {e/s/1e6:.2f} M events/s')" "$1" "$2"; }
free_port() { python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }

echo "== direct: send -> serve --tcp, $EVENTS events, 1 s windows"
T0=$(now)
rm -f "$WORK/ports"
"$BIN" serve --tcp 127.0.0.1:0 --port-file "$WORK/ports" --window 1s --start-grace 0 --quiet \
  --out "$WORK/direct.jsonl" &
SERVER=$!
for _ in $(seq 100); do [ -s "$WORK/ports" ] && break; sleep 0.02; done
"$BIN" send "$WORK/syn.snail" --to "127.0.0.1:$(sed -n 's/^tcp=//p' "$WORK/ports")" -q
kill -TERM "$SERVER"; wait "$SERVER"
DIRECT=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$T0" "$(now)")
echo "direct: $(rate "$EVENTS" "$DIRECT")"

PORT=$(free_port)
"$NATS" -js -a 127.0.0.1 -p "$PORT" -sd "$WORK/store" >"$WORK/nats.log" 2>&1 &
for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done
URL="nats://127.0.0.1:$PORT/BENCH"
T0=$(now)
"$BIN" send "$WORK/syn.snail" --to "$URL" -q
PUBLISH=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$T0" "$(now)")
echo "broker: publish $(rate "$EVENTS" "$PUBLISH")"
for N in 1 2 4; do
  T0=$(now)
  PIDS=()
  for I in $(seq 0 $((N - 1))); do
    "$BIN" serve --nats "$URL" --durable "n${N}s$I" --shard "$I/$N" --drain --window 1s \
      --start-grace 0 --quiet --out "$WORK/n$N-$I.jsonl" &
    PIDS+=($!)
  done
  for P in "${PIDS[@]}"; do wait "$P"; done
  READ=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$T0" "$(now)")
  TOTAL=$(python3 -c "import sys; print(float(sys.argv[1]) + float(sys.argv[2]))" "$PUBLISH" "$READ")
  SAME=$(cat "$WORK"/n$N-*.jsonl | sort | cmp -s - <(sort "$WORK/direct.jsonl") && echo "equal to direct" || echo "DIFFERENT from direct")
  echo "broker, $N shard(s): analysis $(rate "$EVENTS" "$READ"); publish + analysis $(rate "$EVENTS" "$TOTAL") ($(python3 -c "import sys; print(f'{100*float(sys.argv[1])/float(sys.argv[2]):.0f}')" "$DIRECT" "$TOTAL") % of direct); windows $SAME"
done
