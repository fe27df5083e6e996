#!/bin/sh
# CTest driver of NEXMark's Megaphone versions across processes (docs/NEXMARK.md):
#   nexmark_megaphone_mpi.sh BINARY QUERY STRATEGY
# mpirun -np 2 (2 workers each) of nexmark-QUERY --bins 64 with migrations at 150 ms and
# 350 ms: exit 0, one verify line, a completed migration, and the output digest equal to
# the native job's over the same events. Exit 77 (skipped) when mpirun is missing.
bin=$1 q=$2 strategy=$3
. "$(dirname "$0")/mpi_prologue.sh"
run() {
  $mpirun_lo -np 2 "$bin" run "nexmark-$q" --workers 2 --rate 100000 \
    --records 60000 --dilation 20 --window 200ms --window-slide 50ms --verify "$@" 2>&1
}
native=$(run --native) || { echo "$native"; echo "FAIL: mpirun of the native job"; exit 1; }
out=$(run --bins 64 --migrate-at 150ms,350ms --strategy "$strategy") ||
  { echo "$out"; echo "FAIL: mpirun with migrations exited non-zero"; exit 1; }
echo "$out"
n=$(echo "$out" | grep -c "^verify: .* equal to the plain single-threaded loop")
[ "$n" -eq 1 ] || { echo "FAIL: $n verify lines"; exit 1; }
m=$(echo "$out" | grep "^migration ($strategy): [1-9][0-9]* bins" | grep -vc "not completed")
[ "$m" -ge 1 ] || { echo "FAIL: no completed migration"; exit 1; }
d1=$(echo "$native" | sed -n 's/.*output digest \([0-9a-f]*\).*/\1/p')
d2=$(echo "$out" | sed -n 's/.*output digest \([0-9a-f]*\).*/\1/p')
[ -n "$d1" ] && [ "$d1" = "$d2" ] || { echo "FAIL: digest $d2 != $d1 of the native job"; exit 1; }
echo PASS
