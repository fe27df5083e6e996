#!/bin/sh
# CTest driver of NEXMark's Megaphone versions across processes (docs/NEXMARK.md):
#   nexmark_megaphone_mpi.sh BINARY QUERY STRATEGY
# mpirun -np 2 (2 workers each) of nexmark-QUERY --bins 64 with migrations at 150 ms and
# 350 ms: exit 0, one verify line, a completed migration, and the output digest equal to
# the native job's over the same events. Exit 77 (skipped) when mpirun is missing.
bin=$1 q=$2 strategy=$3
. "$(dirname "$0")/mpi_prologue.sh"
. "$(dirname "$0")/mpi_migrations.sh"
run() {
  $mpirun_lo -np 2 "$bin" run "nexmark-$q" --workers 2 --rate 100000 \
    --records 60000 --dilation 20 --window 200ms --window-slide 50ms --verify "$@" 2>&1
}
native=$(run --native) || { echo "$native"; echo "FAIL: mpirun of the native job"; exit 1; }
out=$(run --bins 64 --migrate-at 150ms,350ms --strategy "$strategy") ||
  { echo "$out"; echo "FAIL: mpirun with migrations exited non-zero"; exit 1; }
echo "$out"
expect_verified "$out"
m=$(echo "$out" | grep "^migration ($strategy): [1-9][0-9]* bins" | grep -vc "not completed")
[ "$m" -ge 1 ] || { echo "FAIL: no completed migration"; exit 1; }
expect_same_digest "$native" "$out" "the native job"
echo PASS
