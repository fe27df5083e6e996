#!/bin/bash
# Whole-process benchmarks of the embedded dataflow runtime (`snailtrail run`,
# docs/RUNTIME.md "Measured"): keycount --rate max on 1 and 2 workers against the plain
# loop (--reference, the COST baseline), and 2 workers with instrumentation on (--trace)
# vs off. Throughput from --stats-json; ratios against the reference and off.
# Usage: scripts/run-bench.sh   (RUN_SECONDS per run, default 4; 5 runs: ~25 s in all)
# Needs build/bin/snailtrail and python3. Writes to a temporary directory only.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/build/bin/snailtrail}
SECS=${RUN_SECONDS:-4}
KEYS=${RUN_KEYS:-1000000}
WORK=$(mktemp -d /tmp/snailtrail-run-bench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# tput NAME ARGS...: runs `snailtrail run keycount ARGS`, prints and remembers records/s.
declare -A T
tput() {
  local name=$1
  shift
  "$BIN" run keycount --keys "$KEYS" --duration "${SECS}s" --stats-json "$WORK/$name.json" -q "$@"
  T[$name]=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput"])' \
    "$WORK/$name.json")
  printf '%-34s %8.2f M records/s\n' "$name" "$(python3 -c "print(${T[$name]} / 1e6)")"
}
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

echo "keycount --keys $KEYS --duration ${SECS}s, loadavg $(cut -d' ' -f1 /proc/loadavg)"
tput reference --reference
tput workers1 --workers 1 --rate max
tput workers2 --workers 2 --rate max
tput workers2-off --workers 2 --rate max
tput workers2-traced --workers 2 --rate max --trace "$WORK/t.snail"
echo "1 worker / reference:   $(ratio "${T[workers1]}" "${T[reference]}")   (target >= 0.5)"
echo "2 workers / reference:  $(ratio "${T[workers2]}" "${T[reference]}")   (target >= 1.0)"
echo "traced / untraced (2w): $(ratio "${T[workers2-traced]}" "${T[workers2-off]}")" \
  "($(stat -c %s "$WORK/t.snail") bytes of trace)"
