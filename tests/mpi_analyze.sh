#!/bin/sh
# CTest: `mpirun -np P BINARY analyze TRACE` (windows split over P ranks; docs/PERFORMANCE.md
# "Across processes") prints byte for byte what one process prints:
#   mpi_analyze.sh BINARY PROCS
# for JSONL, CSV and the table, several window widths, --from/--to, and traces with long
# quiet stretches (runs of windows without events that cross the ranks' borders); to
# stdout (every rank's part through rank 0) and to a file with -o (every rank writes its
# own part; the file existed before, longer), also with rank 0 taking windows from the last
# rank.
# Exit 77 (skipped) when mpirun is missing.
bin=$1 procs=$2
. "$(dirname "$0")/mpi_prologue.sh"
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir" "$ompi_tmp"' EXIT
"$bin" bench --generate "$dir/t.snail" --seconds 6 2>/dev/null || { echo "FAIL: generate"; exit 1; }
# A trace with gaps: the simulated skewed word count, its events cut out of [1.2 s, 1.9 s].
"$bin" simulate "$(dirname "$0")/../examples/wordcount-skew-30.toml" --duration 3s \
  -o "$dir/sim.jsonl" -q || { echo "FAIL: simulate"; exit 1; }
awk '{ if (match($0, /"ts":[0-9]+/)) { t = substr($0, RSTART + 5, RLENGTH - 5) + 0;
       if (t >= 1200000000 && t < 1900000000) next } print }' \
  "$dir/sim.jsonl" > "$dir/gaps.jsonl"
"$bin" convert "$dir/gaps.jsonl" "$dir/gaps.snail" 2>/dev/null || { echo "FAIL: convert"; exit 1; }
# Most of the trace quiet: events only before 0.3 s and after 2.7 s, so ranks' shares
# start and end inside the quiet stretch.
awk '{ if (match($0, /"ts":[0-9]+/)) { t = substr($0, RSTART + 5, RLENGTH - 5) + 0;
       if (t >= 300000000 && t < 2700000000) next } print }' \
  "$dir/sim.jsonl" > "$dir/quiet.jsonl"
"$bin" convert "$dir/quiet.jsonl" "$dir/quiet.snail" 2>/dev/null || { echo "FAIL: convert"; exit 1; }
fail=0
moved=0  # runs where rank 0 took windows from the last rank
taking=0  # check: also with rank 0 taking windows from the last rank
check() {  # check TRACE ARGS...: one process vs mpirun -np procs
  trace=$1
  shift
  "$bin" analyze "$trace" "$@" --no-progress > "$dir/one" 2>"$dir/one.err" ||
    { cat "$dir/one.err"; echo "FAIL: analyze $*"; fail=1; return; }
  $mpirun_lo -np "$procs" \
    "$bin" analyze "$trace" "$@" --no-progress > "$dir/many" 2>"$dir/many.err" ||
    { cat "$dir/many.err"; echo "FAIL: mpirun analyze $*"; fail=1; return; }
  same "$dir/many" "stdout: $(basename "$trace") $*"
  head -c 3000000 /dev/zero > "$dir/many.out"
  $mpirun_lo -np "$procs" \
    "$bin" analyze "$trace" "$@" --no-progress -o "$dir/many.out" 2>"$dir/many.err" ||
    { cat "$dir/many.err"; echo "FAIL: mpirun analyze $* -o"; fail=1; return; }
  same "$dir/many.out" "-o: $(basename "$trace") $*"
  # Rank 0 with a small share: done first, it takes windows from the end of the last
  # rank's share (written after the last rank's part). Not for every case: under ASan
  # each mpirun takes seconds.
  [ "$taking" = 1 ] || return
  head -c 3000000 /dev/zero > "$dir/many.out"
  $mpirun_lo -np "$procs" -x SNAILTRAIL_ROOT_WEIGHT=0.2 -x SNAILTRAIL_TEST_GIVE_WINDOWS=1 \
    "$bin" analyze "$trace" "$@" --no-progress --timings -o "$dir/many.out" 2>"$dir/many.err" ||
    { cat "$dir/many.err"; echo "FAIL: mpirun analyze $* -o, rank 0 taking windows"; fail=1; return; }
  same "$dir/many.out" "-o, rank 0 taking windows: $(basename "$trace") $*"
  if grep -q "^rank 0 .* [1-9][0-9]* windows moved" "$dir/many.err"; then moved=$((moved + 1)); fi
}
check_report() {  # check_report TRACE ARGS...: `report`, one process vs mpirun -np procs
  trace=$1
  shift
  "$bin" report "$trace" "$@" --no-progress -o "$dir/one" >/dev/null 2>"$dir/one.err" ||
    { cat "$dir/one.err"; echo "FAIL: report $*"; fail=1; return; }
  $mpirun_lo -np "$procs" "$bin" report "$trace" "$@" --no-progress -o "$dir/many" \
    >/dev/null 2>"$dir/many.err" ||
    { cat "$dir/many.err"; echo "FAIL: mpirun report $*"; fail=1; return; }
  same "$dir/many" "report: $(basename "$trace") $*"
}
same() {  # same FILE WHAT: FILE equals one process's output
  if cmp -s "$dir/one" "$1"; then
    echo "same, $2 ($(wc -l < "$dir/one") lines)"
  else
    diff "$dir/one" "$1" | head -5
    echo "FAIL: -np $procs differs, $2"
    fail=1
  fi
}
# Under the sanitizers (SNAILTRAIL_TEST_SANITIZED, set by tests/CMakeLists.txt) each mpirun
# takes seconds: the cases marked `full` run in the release build only. What stays covers
# each trace (dense, gaps, quiet), CSV, JSONL, the table, report, and rank 0 taking windows.
full() { [ -n "$SNAILTRAIL_TEST_SANITIZED" ] || "$@"; }
# Rank 0 taking windows (one more mpirun a case): every case in the release build, the
# trace with gaps only under the sanitizers.
full_taking=1
[ -z "$SNAILTRAIL_TEST_SANITIZED" ] || full_taking=0
full check "$dir/t.snail" --window 1s --format jsonl
taking=$full_taking
check "$dir/t.snail" --window 300ms --format csv --threads 1
taking=0
full check "$dir/t.snail" --window 250ms --format jsonl --from +1100ms --to +4s
taking=1
check "$dir/gaps.snail" --window 10ms --format jsonl
taking=0
full check "$dir/gaps.snail" --window 7ms --format csv
taking=1
full check "$dir/quiet.snail" --window 5ms --format jsonl
taking=0
full check "$dir/quiet.snail" --window 3ms --format csv --threads 1
# The table: every rank sends its windows' summaries to rank 0.
full check "$dir/t.snail" --window 1s
full check "$dir/gaps.snail" --window 10ms --per-window
taking=$full_taking
check "$dir/quiet.snail" --window 20ms --per-window --top 3
taking=0
# `report`: every rank sends its windows' summaries and timelines to rank 0.
full check_report "$dir/t.snail" --window 1s --format json
check_report "$dir/gaps.snail" --window 10ms --format json --timelines 20
full check_report "$dir/quiet.snail" --window 5ms
if [ "$moved" -eq 0 ]; then
  echo "FAIL: rank 0 never took windows from the last rank"
  fail=1
fi
[ $fail -eq 0 ] && echo "PASS (rank 0 took windows in $moved runs)"
exit $fail
