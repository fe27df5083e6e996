#!/bin/sh
# CTest: a process of a multi-process run fails (docs/RUNTIME.md "Failures"):
#   mpi_fail.sh BINARY kill    one rank of `mpirun -np 2 ... run keycount --duration 120s`
#                              is killed with SIGKILL after ~1 s;
#   mpi_fail.sh BINARY throw   worker 3 (rank 1) throws after 500 ms (the test-only
#                              SNAILTRAIL_FLOW_FAIL_WORKER hook); the job is ended
#                              from rank 1's communication thread.
# Either way mpirun must exit non-zero within 60 s (no hang) and its output must name the
# failure (the killed rank / the worker that threw). Exit 77 (skipped) without mpirun.
bin=$1 mode=$2
. "$(dirname "$0")/mpi_prologue.sh"
. "$(dirname "$0")/mpi_background.sh"
out="$dir/out"
pass_env=
if [ "$mode" = throw ]; then
  export SNAILTRAIL_FLOW_FAIL_WORKER=3:500
  pass_env="-x SNAILTRAIL_FLOW_FAIL_WORKER"
fi
$mpirun_lo -np 2 $pass_env \
  "$bin" run keycount --workers 2 --duration 120s --keys 1000 >"$out" 2>&1 &
mpid=$!
start=$(date +%s)
if [ "$mode" = kill ]; then
  victim=$(rank_pid 1)
  [ -n "$victim" ] || { cat "$out"; echo "FAIL: no rank 1 process under mpirun $mpid"; exit 1; }
  sleep 1
  echo "killing rank 1 (pid $victim) with SIGKILL"
  kill -9 "$victim"
fi
wait_mpirun "$out"
cat "$out"
echo "mpirun exited $rc after $(($(date +%s) - start)) s"
[ $rc -ne 0 ] || { echo "FAIL: mpirun exited 0"; exit 1; }
if [ "$mode" = kill ]; then
  expect_rank1_killed "$out"
else
  grep -q "^snailtrail: rank 1: worker-3: injected failure" "$out" ||
    { echo "FAIL: the output does not name the worker that failed"; exit 1; }
  # MPI_THREAD_SERIALIZED: the main thread must not call MPI_Abort while the
  # communication thread is in MPI; it asks that thread to end the job.
  grep -q "^snailtrail: rank 1: ending the job (from the communication thread)" "$out" ||
    { echo "FAIL: the job was not ended from the communication thread"; exit 1; }
fi
echo PASS
