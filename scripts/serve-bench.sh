#!/bin/bash
# Benchmarks of `snailtrail serve` on loopback (docs/PERFORMANCE.md, "Online analysis"):
#   ingest   sustained TCP ingest: one producer sends as fast as it can
#   lag      lag from a window's end (in the stream) to its result at 1x, 10x and max speed
#   soak     SOAK_SECONDS (default 600) at SOAK_RATE events/s (default 1000000), RSS every 10 s
#   http     /healthz and /metrics latency (p50, p99, max) with 200 slow and 50 idle HTTP clients
#   hostile  1,000 idle producer connections and block/decompression bombs while a producer
#            streams: threads, peak RSS, and that the producer's events are all analyzed
# Usage: scripts/serve-bench.sh [ingest|lag|soak|http|hostile|all]   (default: all)
# Needs build/bin/snailtrail, curl and python3 (scripts/serve-hostile.py). Writes its traces
# to a temporary directory. Loopback only; every phase is bounded in count and time.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/build/bin/snailtrail}
WHAT=${1:-all}
SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_RATE=${SOAK_RATE:-1000000}
WORK=$(mktemp -d /tmp/snailtrail-serve-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BIN" bench --generate "$WORK/syn.snail" --seconds 20 2>/dev/null
EVENTS_PER_COPY=$("$BIN" convert "$WORK/syn.snail" "$WORK/syn.jsonl" 2>&1 | awk '{print $2}')
rm -f "$WORK/syn.jsonl"

# start_server ARGS...: starts serve in the background; sets SERVER, TCP, HTTP.
start_server() {
  rm -f "$WORK/ports"
  "$BIN" serve --tcp 127.0.0.1:0 --http 127.0.0.1:0 --port-file "$WORK/ports" --quiet \
    --out /dev/null "$@" &
  SERVER=$!
  for _ in $(seq 100); do [ -s "$WORK/ports" ] && break; sleep 0.05; done
  TCP=$(sed -n 's/^tcp=//p' "$WORK/ports")
  HTTP=$(sed -n 's/^http=//p' "$WORK/ports")
}
metric() { curl -s "127.0.0.1:$HTTP/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
stop_server() { kill -TERM "$SERVER"; wait "$SERVER"; }

if [ "$WHAT" = ingest ] || [ "$WHAT" = all ]; then
  echo "== ingest: one producer, .snail framing, 10 copies of a 20 s synthetic trace, no pacing"
  start_server --window 1s --lateness 200ms
  t0=$(date +%s.%N)
  "$BIN" send "$WORK/syn.snail" --to "127.0.0.1:$TCP" --repeat 10 --quiet
  # Sent means read by the server; analyzed when the counter reaches the total.
  total=$((EVENTS_PER_COPY * 10))
  while [ "$(metric snailtrail_events_analyzed_total | cut -d. -f1)" -lt "$((total - 100000))" ]; do sleep 0.02; done
  t1=$(date +%s.%N)
  echo "events: $total  wall: $(echo "$t1 - $t0" | bc) s  ingest+analysis rate: $(echo "$total / ($t1 - $t0)" | bc) events/s"
  echo "windows emitted while streaming: $(metric snailtrail_windows_emitted_total)"
  stop_server
fi

if [ "$WHAT" = lag ] || [ "$WHAT" = all ]; then
  for speed in 1x 10x max; do
    case $speed in 1x) copies=1 ;; 10x) copies=5 ;; max) copies=20 ;; esac
    echo "== lag at $speed: window 1s, lateness 200ms, $copies copies of the 20 s trace"
    start_server --window 1s --lateness 200ms
    "$BIN" send "$WORK/syn.snail" --to "127.0.0.1:$TCP" --speed "$speed" --repeat "$copies" --quiet
    sleep 0.5
    echo "windows: $(metric snailtrail_windows_emitted_total)  lag last: $(metric snailtrail_window_lag_seconds) s  lag max: $(metric snailtrail_window_lag_seconds_max) s"
    stop_server
  done
fi

if [ "$WHAT" = soak ] || [ "$WHAT" = all ]; then
  copies=$(( (SOAK_SECONDS * SOAK_RATE) / EVENTS_PER_COPY + 1 ))
  echo "== soak: $SOAK_RATE events/s for $SOAK_SECONDS s ($copies copies), window 1s, RSS every 10 s"
  start_server --window 1s --lateness 200ms
  "$BIN" send "$WORK/syn.snail" --to "127.0.0.1:$TCP" --rate "$SOAK_RATE" --repeat "$copies" --quiet &
  SENDER=$!
  echo "t_s rss_mb events_analyzed windows lag_s queued"
  for t in $(seq 10 10 "$SOAK_SECONDS"); do
    sleep 10
    rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$SERVER/status")
    echo "$t $rss $(metric snailtrail_events_analyzed_total) $(metric snailtrail_windows_emitted_total) $(metric snailtrail_window_lag_seconds) $(metric snailtrail_queued_events)"
  done
  kill "$SENDER" 2>/dev/null || true
  wait "$SENDER" 2>/dev/null || true
  stop_server
fi

if [ "$WHAT" = http ] || [ "$WHAT" = all ]; then
  ulimit -n 4096 2>/dev/null || true
  echo "== http: 200 slow clients (one byte per second) and 50 idle sockets; a producer streams"
  start_server --window 1s --lateness 200ms
  "$BIN" send "$WORK/syn.snail" --to "127.0.0.1:$TCP" --rate 200000 --quiet &
  SENDER=$!
  python3 scripts/serve-hostile.py http "$HTTP" 200 50
  echo "HTTP clients dropped for slowness or idling: $(metric snailtrail_http_timeouts_total)"
  kill "$SENDER" 2>/dev/null || true
  wait "$SENDER" 2>/dev/null || true
  stop_server
fi

if [ "$WHAT" = hostile ] || [ "$WHAT" = all ]; then
  ulimit -n 4096 2>/dev/null || true
  echo "== hostile: 1,000 idle producer connections, then bombs, while one producer streams 3 copies"
  start_server --window 1s --lateness 200ms --wait-for 1 --max-connections 1100
  "$BIN" send "$WORK/syn.snail" --to "127.0.0.1:$TCP" --rate 300000 --repeat 3 --quiet &
  SENDER=$!
  sleep 0.3
  python3 scripts/serve-hostile.py idle "$TCP" 1000 8 &
  IDLE=$!
  sleep 2
  echo "with 1,000 idle connections: threads $(awk '/^Threads/ {print $2}' "/proc/$SERVER/status"), RSS $(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$SERVER/status") MB, open $(metric snailtrail_connections_open)"
  python3 scripts/serve-hostile.py bombs "$TCP" 5 &
  BOMBS=$!
  for t in 1 2 3 4 5; do
    sleep 1
    echo "  bombs +${t}s: RSS $(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$SERVER/status") MB, buffered $(metric snailtrail_ingest_buffered_bytes) B, paused $(metric snailtrail_ingest_paused_connections), bad blocks $(metric snailtrail_invalid_blocks_total), broken $(metric snailtrail_broken_streams_total)"
  done
  wait "$BOMBS" "$IDLE"
  if wait "$SENDER"; then sent=ok; else sent=FAILED; fi
  total=$((EVENTS_PER_COPY * 3))
  for _ in $(seq 200); do
    [ "$(metric snailtrail_events_analyzed_total | cut -d. -f1)" -ge "$((total - 100000))" ] && break
    sleep 0.05
  done
  echo "producer: $sent; events analyzed $(metric snailtrail_events_analyzed_total) of $total (the last window closes at shutdown)"
  echo "peak RSS: $(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$SERVER/status") MB; buffered max $(metric snailtrail_ingest_buffered_bytes_max) B; threads $(awk '/^Threads/ {print $2}' "/proc/$SERVER/status")"
  stop_server
fi
