#!/usr/bin/env bash
# Golden outputs: every command and output format over examples/, tests/data and
# simulated traces, compared by SHA-256 with tests/golden/manifest.txt. Refactorings
# must leave them byte-identical; a deliberate change of output is recorded with
#   tests/golden/golden.sh build/bin/snailtrail --update
# and shows up in the manifest's diff. Usage: golden.sh BINARY [--update]
set -uo pipefail
bin=$(realpath "$1")
mode=${2:-check}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
manifest="$here/manifest.txt"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Outputs name their input files: run in the scratch directory with relative paths only,
# so they do not depend on where the checkout or the scratch directory is.
mkdir -p "$work/tests" "$work/t" "$work/log"
ln -s "$root/examples" "$work/examples"
ln -s "$root/tests/data" "$work/tests/data"
cd "$work"

results=()   # "name sha256 bytes"
commands=()  # name -> command, for the failure message
failures=0

# golden NAME COMMAND...: runs COMMAND, its stdout is the output (stderr is progress and
# timings, not compared); a command that fails records its exit code instead.
golden() {
  local name=$1
  shift
  local out="log/$name.out"
  "$@" >"$out" 2>"log/$name.err"
  local rc=$?
  # A failing command's error message is part of the interface too.
  [ $rc -eq 0 ] || { echo "exit $rc" && cat "log/$name.err"; } >>"$out"
  results+=("$name $(sha256sum <"$out" | cut -c1-64) $(stat -c %s "$out")")
  commands+=("$name: $*")
}

# golden_file NAME FILE COMMAND...: as golden, but the output is FILE written by COMMAND.
golden_file() {
  local name=$1 file=$2
  shift 2
  "$@" >/dev/null 2>"log/$name.err"
  local rc=$?
  local out="log/$name.out"
  if [ -f "$file" ]; then cp "$file" "$out"; else : >"$out"; fi
  [ $rc -eq 0 ] || echo "exit $rc" >>"$out"
  results+=("$name $(sha256sum <"$out" | cut -c1-64) $(stat -c %s "$out")")
  commands+=("$name: $*")
}

st="$bin"
np=(--no-progress)

# Simulated traces from every example scenario, analyzed in every format.
for scenario in examples/*.toml; do
  n=$(basename "$scenario" .toml)
  t="t/$n.snail"
  golden_file "simulate-$n-truth" "t/$n.truth.json" \
    "$st" simulate "$scenario" -d 3s --seed 7 -o "$t" --truth "t/$n.truth.json" -q
  golden "simulate-$n-snail" cat "$t"
  golden "analyze-$n-table" "$st" analyze "$t" "${np[@]}"
  golden "analyze-$n-table-per-window" "$st" analyze "$t" --window 500ms --per-window "${np[@]}"
  golden "analyze-$n-jsonl" "$st" analyze "$t" -f jsonl "${np[@]}"
  golden "analyze-$n-csv" "$st" analyze "$t" -f csv "${np[@]}"
  golden "analyze-$n-whole" "$st" analyze "$t" --window whole -f jsonl "${np[@]}"
  golden "analyze-$n-range" "$st" analyze "$t" --from +1s --to +2s --window 250ms -f jsonl "${np[@]}"
  golden "report-$n-json" "$st" report "$t" -f json -o - --no-progress
  golden "report-$n-html" "$st" report "$t" -o - --no-progress
  golden_file "convert-$n-jsonl" "t/$n.jsonl" "$st" convert "$t" "t/$n.jsonl"
  golden "policy-$n" "$st" scale policy --trace "$t" --interval 1s
  golden "policy-$n-json" "$st" scale policy --trace "$t" --interval 1s -f json
done

golden "manage-ds2" "$st" scale manage --simulate examples/wordcount-4-2-4.toml -d 20m
golden "manage-dhalion" "$st" scale manage --simulate examples/dhalion-wordcount.toml \
  --controller dhalion -d 20m
golden "analyze-pipeline" "$st" analyze examples/pipeline.jsonl -f jsonl "${np[@]}"
golden "analyze-pipeline-table" "$st" analyze examples/pipeline.jsonl "${np[@]}"

# Imported traces: every importer, table and JSONL, and the span critical path.
for f in tests/data/chrome-flows.json tests/data/chrome-tf-timeline.json \
  tests/data/jaeger-request.json tests/data/otlp-request.json \
  tests/data/spark-2stage-eventlog; do
  n=$(basename "$f" .json)
  golden "analyze-$n-table" "$st" analyze "$f" --window whole "${np[@]}"
  golden "analyze-$n-jsonl" "$st" analyze "$f" --window whole -f jsonl "${np[@]}"
  golden "analyze-$n-1ms" "$st" analyze "$f" --window 1ms -f jsonl "${np[@]}"
  golden_file "convert-$n" "t/$n.conv.jsonl" "$st" convert "$f" "t/$n.conv.jsonl"
done
for f in tests/data/jaeger-request.json tests/data/otlp-request.json; do
  n=$(basename "$f" .json)
  golden "critical-path-$n-table" "$st" critical-path "$f"
  golden "critical-path-$n-json" "$st" critical-path "$f" -f json
done
golden "policy-ds2-csv" "$st" scale policy --topology tests/data/ds2-topology.csv \
  --rates tests/data/ds2-rates.csv
golden "policy-ds2-csv-json" "$st" scale policy --topology tests/data/ds2-topology.csv \
  --rates tests/data/ds2-rates.csv --source-rates tests/data/ds2-source-rates.csv -f json
golden "policy-ds2-dir" "$st" scale policy --topology tests/data/ds2-topology.csv \
  --rates tests/data/ds2-rates-dir

# Plain logs: generated logs of several nodes, their templates, flows and CP.
for style in hdfs service; do
  d="t/logs-$style"
  golden "logs-generate-$style" "$st" logs generate "$d" --style "$style" --requests 200 --seed 3
  golden "logs-templates-$style" "$st" logs templates "$d"/*.log
  golden "logs-templates-$style-jsonl" "$st" logs templates "$d"/*.log -f jsonl
  for f in table json jsonl; do
    golden "logs-flows-$style-$f" "$st" logs flows "$d"/*.log -f "$f"
  done
  golden "analyze-logs-$style" "$st" analyze "$d" --importer logs -f jsonl "${np[@]}"
done

# A kernel trace (perf script text): a thread waiting on another that sleeps on a timer.
k=tests/data/perf-sched-timer.txt
golden "kernel-threads" "$st" kernel threads "$k"
for th in 100 200; do
  golden "kernel-critical-path-$th-table" "$st" kernel critical-path "$k" --thread "$th"
  golden "kernel-critical-path-$th-json" "$st" kernel critical-path "$k" --thread "$th" -f json
done
golden "analyze-perf-sched" "$st" analyze "$k" -f jsonl "${np[@]}"

# Flame graphs of folded stacks: every output format.
printf 'main;map;hash 30\nmain;map;alloc 12\nmain;sink;write 7\nmain;map;hash;memcpy 5\n' \
  >t/stacks.folded
for f in folded json svg; do
  golden "flamegraph-folded-$f" "$st" flamegraph t/stacks.folded --format "$f"
done

# Bad input: the error text is part of the interface.
golden "error-missing-file" "$st" analyze tests/golden/does-not-exist.snail "${np[@]}"
golden "error-bad-window" "$st" analyze examples/pipeline.jsonl --window 0s "${np[@]}"

if [ "$mode" = "--update" ]; then
  printf '%s\n' "${results[@]}" >"$manifest"
  echo "golden: wrote ${#results[@]} outputs to $manifest"
  exit 0
fi
[ -f "$manifest" ] || { echo "golden: $manifest missing (run with --update)"; exit 1; }
declare -A want
while read -r name sum bytes; do want[$name]="$sum $bytes"; done <"$manifest"
for i in "${!results[@]}"; do
  read -r name sum bytes <<<"${results[$i]}"
  if [ "${want[$name]:-}" != "$sum $bytes" ]; then
    echo "golden: $name differs (now $bytes bytes, manifest: ${want[$name]:-missing})"
    echo "  ${commands[$i]}"
    head -c 600 "log/$name.err" | sed 's/^/  stderr: /'
    failures=$((failures + 1))
  fi
  unset "want[$name]"
done
for name in "${!want[@]}"; do
  echo "golden: $name is in the manifest but no longer produced"
  failures=$((failures + 1))
done
echo "golden: ${#results[@]} outputs, $failures differ"
[ $failures -eq 0 ]
