#!/bin/sh
# CTest: `mpirun -np P BINARY analyze TRACE` (windows split over P ranks; docs/PERFORMANCE.md
# "Across processes") prints byte for byte what one process prints:
#   mpi_analyze.sh BINARY PROCS
# for JSONL and CSV, several window widths, --from/--to, and a trace with long quiet
# stretches (runs of windows without events that cross the ranks' borders).
# Exit 77 (skipped) when mpirun is missing.
bin=$1 procs=$2
. "$(dirname "$0")/mpi_prologue.sh"
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$bin" bench --generate "$dir/t.snail" --seconds 6 2>/dev/null || { echo "FAIL: generate"; exit 1; }
# A trace with gaps: the simulated skewed word count, its events cut out of [1.2 s, 1.9 s].
"$bin" simulate "$(dirname "$0")/../examples/wordcount-skew-30.toml" --duration 3s \
  -o "$dir/sim.jsonl" -q || { echo "FAIL: simulate"; exit 1; }
awk '{ if (match($0, /"ts":[0-9]+/)) { t = substr($0, RSTART + 5, RLENGTH - 5) + 0;
       if (t >= 1200000000 && t < 1900000000) next } print }' \
  "$dir/sim.jsonl" > "$dir/gaps.jsonl"
"$bin" convert "$dir/gaps.jsonl" "$dir/gaps.snail" 2>/dev/null || { echo "FAIL: convert"; exit 1; }
fail=0
check() {  # check TRACE ARGS...: one process vs mpirun -np procs
  trace=$1
  shift
  "$bin" analyze "$trace" "$@" --no-progress > "$dir/one" 2>"$dir/one.err" ||
    { cat "$dir/one.err"; echo "FAIL: analyze $*"; fail=1; return; }
  $mpirun_lo -np "$procs" \
    "$bin" analyze "$trace" "$@" --no-progress > "$dir/many" 2>"$dir/many.err" ||
    { cat "$dir/many.err"; echo "FAIL: mpirun analyze $*"; fail=1; return; }
  if cmp -s "$dir/one" "$dir/many"; then
    echo "same: $(basename "$trace") $* ($(wc -l < "$dir/one") lines)"
  else
    diff "$dir/one" "$dir/many" | head -5
    echo "FAIL: -np $procs differs: $(basename "$trace") $*"
    fail=1
  fi
}
check "$dir/t.snail" --window 1s --format jsonl
check "$dir/t.snail" --window 300ms --format csv --threads 1
check "$dir/t.snail" --window 250ms --format jsonl --from +1100ms --to +4s
check "$dir/gaps.snail" --window 10ms --format jsonl
check "$dir/gaps.snail" --window 7ms --format csv
# The table needs every window's summary: rank 0 computes it alone, same output.
check "$dir/t.snail" --window 1s
[ $fail -eq 0 ] && echo PASS
exit $fail
