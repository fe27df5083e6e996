#!/bin/bash
# Load on `serve --otlp` (docs/SERVE.md, "OTLP load"): spans/s accepted with 2 client
# threads posting protobuf requests of 1000 spans as fast as they are answered, and the
# receiver's RSS during a paced soak. The accepted count is the receiver's own
# (/metrics: snailtrail_otlp_spans_accepted_total over the run).
# Usage: scripts/otlp-bench.sh [SECONDS=20] [SOAK_SECONDS=60] [SOAK_RATE=50000]
# Needs build/bin/snailtrail and build/bin/snailtrail_otlp_load (make build). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/build/bin/snailtrail}
LOAD=${LOAD:-$PWD/build/bin/snailtrail_otlp_load}
SECONDS_LOAD=${1:-20}
SOAK=${2:-60}
SOAK_RATE=${3:-50000}
WORK=$(mktemp -d /tmp/snailtrail-otlp-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT

start_serve() {  # $1: name; serve --otlp on a free port, paths to /dev/null
  rm -f "$WORK/port"
  "$BIN" serve --otlp 127.0.0.1:0 --port-file "$WORK/port" --out /dev/null --trace-idle 500ms \
    --quiet &
  SERVER=$!
  for _ in $(seq 200); do [ -s "$WORK/port" ] && break; sleep 0.02; done
  PORT=$(sed -n 's/^otlp=//p' "$WORK/port")
}
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="snailtrail_otlp_$1" '$1 == m {print $2}'; }
accepted() { metric spans_accepted_total; }
rss_mib() { awk '/^VmRSS/{printf "%.0f", $2/1024}' "/proc/$SERVER/status"; }

echo "== throughput: 2 client threads, 1000 spans a request, ${SECONDS_LOAD} s"
start_serve
A0=$(accepted)
"$LOAD" "$PORT" "$SECONDS_LOAD" 2 1000 | tee "$WORK/load.json"
A1=$(accepted)
B1=$(metric buffered_spans)
# Over the loader's own clock, which starts once its bodies are encoded. Accepted spans
# include those still in the receiver's buffer (up to --otlp-buffer, 1 Mi spans) at the
# end; "grouped" leaves them out: the rate the receiver keeps up with.
python3 -c "import sys, json; a0,a1,b1=map(float,sys.argv[1:4]); s=json.load(open(sys.argv[4]))['seconds']; print(f'accepted: {a1-a0:.0f} spans in {s:.2f} s = {(a1-a0)/s/1e3:.0f} k spans/s; grouped into traces: {(a1-a0-b1)/s/1e3:.0f} k spans/s; receiver RSS at the end: ' + sys.argv[5] + ' MiB')" \
  "$A0" "$A1" "$B1" "$WORK/load.json" "$(rss_mib)"
kill -TERM "$SERVER"; wait "$SERVER" || true

echo "== soak: ${SOAK_RATE} spans/s for ${SOAK} s, the receiver's RSS every 10 s"
start_serve
"$LOAD" "$PORT" "$SOAK" 2 1000 "$SOAK_RATE" >"$WORK/soak.json" &
LOADER=$!
for ((s = 10; s <= SOAK; s += 10)); do
  sleep 10
  echo "t=${s}s rss=$(rss_mib) MiB accepted=$(accepted)"
done
wait "$LOADER" || true
cat "$WORK/soak.json"
kill -TERM "$SERVER"; wait "$SERVER" || true
