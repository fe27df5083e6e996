#!/bin/sh
# Rank scaling of `mpirun analyze` (issue 20; docs/PERFORMANCE.md "Scaling over ranks"):
# one process with --threads 1 against `mpirun -np NP ... --threads 1`, whole processes
# (mpirun included), alternating, RUNS times each; outputs compared with cmp.
#
#   scripts/mpi-scale-bench.sh [TRACE]
#
# TRACE defaults to $TMPDIR/T1024.snail, generated if missing with
# `snailtrail bench --generate TRACE --seconds 1024` (31 M events, 1.24 GB).
# Environment: BIN (build/bin/snailtrail), RUNS (5), NP (2), SECONDS_ (1024: the trace's
# length when generated), OUT (/dev/null or a file; default a file in $TMPDIR, compared),
# TIMINGS=1 adds --timings (per rank: MPI_Init, own windows, gather; CPU).
# Prints one line per run (wall, user, sys, peak RSS of the largest process) and the ratio
# of the median walls, with the load average before and after.
set -eu
bin=${BIN:-build/bin/snailtrail}
runs=${RUNS:-5}
np=${NP:-2}
tmp=${TMPDIR:-/tmp}
trace=${1:-$tmp/T1024.snail}
if [ ! -f "$trace" ]; then
  echo "generating $trace (${SECONDS_:-1024} s)..."
  "$bin" bench --generate "$trace" --seconds "${SECONDS_:-1024}" >/dev/null
fi
mpirun="mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args="analyze $trace --window 1s --format jsonl --threads 1 --no-progress"
[ "${TIMINGS:-0}" = 1 ] && args="$args --timings"
out_one=${OUT:-$dir/one.jsonl}
out_many=${OUT:-$dir/many.jsonl}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$dir/one.times"
: > "$dir/many.times"
i=0
while [ "$i" -lt "$runs" ]; do
  i=$((i + 1))
  /usr/bin/time -f "%e %U %S %M" -o "$dir/t" $bin $args -o "$out_one"
  read -r w u s m < "$dir/t"
  echo "$w" >> "$dir/one.times"
  echo "run $i one process:   wall $w s, user $u s, sys $s s, peak RSS $((m / 1024)) MB"
  /usr/bin/time -f "%e %U %S %M" -o "$dir/t" $mpirun -np "$np" $bin $args -o "$out_many"
  read -r w u s m < "$dir/t"
  echo "$w" >> "$dir/many.times"
  echo "run $i mpirun -np $np: wall $w s, user $u s, sys $s s, peak RSS $((m / 1024)) MB"
  if [ -z "${OUT:-}" ] && ! cmp -s "$out_one" "$out_many"; then
    echo "FAIL: outputs differ"
    exit 1
  fi
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m1=$(median "$dir/one.times")
mn=$(median "$dir/many.times")
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median wall: one process $m1 s, mpirun -np $np $mn s; speed-up $(echo "$m1 $mn" | awk '{ printf "%.2f", $1 / $2 }')x"
