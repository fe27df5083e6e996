#!/bin/sh
# CTest driver of the runtime's random oracles across processes (docs/RUNTIME.md "Tests"):
#   mpi_random_dataflows.sh BINARY NP WORKERS [SEEDS]
# mpirun -np NP of tests/across's binary, WORKERS threads per process: random dataflows
# and Megaphone's random migration plans, each rank checking its workers and rank 0 every
# record against the oracle. Fails when mpirun (any rank) exits non-zero or rank 0's
# summary is missing, or (SNAILTRAIL_MPI_CHUNK_BYTES set) a rank's transport statistics
# show a larger message or no sender waited. Exit 77 (skipped) when mpirun is missing.
bin=$1 np=$2 workers=$3 seeds=$4
. "$(dirname "$0")/mpi_prologue.sh"
out=$($mpirun_lo -np "$np" "$bin" "$workers" $seeds 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: mpirun -np $np exited with $rc"; exit 1; }
echo "$out" | grep -q "^random dataflows: .* $np processes x $workers workers" ||
  { echo "FAIL: no random-dataflow summary from rank 0"; exit 1; }
echo "$out" | grep -q "^megaphone random plans: " ||
  { echo "FAIL: no Megaphone summary from rank 0"; exit 1; }
# With SNAILTRAIL_MPI_CHUNK_BYTES set (issue 35): every rank's messages within it, and
# senders that waited on the outgoing bound.
if [ -n "$SNAILTRAIL_MPI_CHUNK_BYTES" ]; then
  echo "$out" | awk -v np="$np" -v c="$SNAILTRAIL_MPI_CHUNK_BYTES" '
    /^transport rank / { n++; if ($7 > c) big++; waits += $9 }
    END { exit !(n == np && big == 0 && waits > 0) }' ||
    { echo "FAIL: messages above $SNAILTRAIL_MPI_CHUNK_BYTES bytes or no sender waited"; exit 1; }
fi
echo PASS
