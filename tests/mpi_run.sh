#!/bin/sh
# CTest driver of the multi-process runtime (docs/RUNTIME.md "Several processes"):
#   mpi_run.sh BINARY PROCS WORKERS RUN-ARGS...
# runs `mpirun -np PROCS BINARY run RUN-ARGS --workers WORKERS --verify` on loopback only
# and requires exit 0, the verify line and "on PROCS*WORKERS workers" in rank 0's summary
# (and, with MPI_RUN_EXPECT set, that text in the output).
# Exit 77 (skipped) when mpirun is missing.
bin=$1 procs=$2 workers=$3
shift 3
. "$(dirname "$0")/mpi_prologue.sh"
out=$($mpirun_lo -np "$procs" \
  "$bin" run "$@" --workers "$workers" --verify 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then echo "FAIL: mpirun exited $rc"; exit 1; fi
all=$((procs * workers))
echo "$out" | grep -q "on $all workers;" || { echo "FAIL: no 'on $all workers' summary"; exit 1; }
echo "$out" | grep -q "^verify: .* equal to the plain single-threaded loop" ||
  { echo "FAIL: no verify line"; exit 1; }
n=$(echo "$out" | grep -c "^verify:")
[ "$n" -eq 1 ] || { echo "FAIL: $n verify lines (only rank 0 reports)"; exit 1; }
if [ -n "$MPI_RUN_EXPECT" ]; then
  echo "$out" | grep -qF "$MPI_RUN_EXPECT" || { echo "FAIL: no '$MPI_RUN_EXPECT'"; exit 1; }
fi
echo "PASS"
