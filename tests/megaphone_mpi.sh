#!/bin/sh
# CTest driver of Megaphone across processes (docs/MEGAPHONE.md):
#   megaphone_mpi.sh BINARY STRATEGY
# mpirun -np 2 (2 workers each) of keycount --bins 256 with two migrations at random
# times (printed; in [100, 400) ms and 100-500 ms later): exit 0, one
# verify line, both migrations completed, and the output digest equal to the same run
# without migrations. Exit 77 (skipped) when mpirun is missing.
bin=$1 strategy=$2
. "$(dirname "$0")/mpi_prologue.sh"
. "$(dirname "$0")/mpi_migrations.sh"
run() {
  $mpirun_lo -np 2 "$bin" run keycount --bins 256 --workers 2 --rate 200000 \
    --records 240000 --keys 100000 --verify "$@" 2>&1
}
still=$(run) || { echo "$still"; echo "FAIL: mpirun without migrations"; exit 1; }
times=$(awk 'BEGIN { srand(); a = 100 + int(rand() * 300); b = a + 100 + int(rand() * 400);
                     printf "%dms,%dms", a, b }')
echo "migrations at $times"
out=$(run --migrate-at "$times" --strategy "$strategy") ||
  { echo "$out"; echo "FAIL: mpirun with migrations exited non-zero"; exit 1; }
echo "$out"
expect_verified "$out"
# Tiny MPI messages asked for (issue 35): rank 0 says it uses them.
[ -z "$SNAILTRAIL_MPI_CHUNK_BYTES" ] || echo "$out" |
  grep -q "^snailtrail: MPI messages of at most $SNAILTRAIL_MPI_CHUNK_BYTES bytes" ||
  { echo "FAIL: SNAILTRAIL_MPI_CHUNK_BYTES not in effect"; exit 1; }
m=$(echo "$out" | grep "^migration ($strategy): 191 bins" | grep -vc "not completed")
[ "$m" -ge 1 ] || { echo "FAIL: no completed migration of 191 bins"; exit 1; }
expect_same_digest "$still" "$out" "the run without migrations"
echo PASS
