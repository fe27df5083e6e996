#!/bin/sh
# CTest driver (issue 35; docs/RUNTIME.md "Several processes"): tests/across/idle_wake.cpp
# under mpirun -np 2: a record sent after 1.5 s of no traffic at all (both communication
# threads at their longest idle sleep) reaches the other process within 250 ms, 3 times.
#   mpi_idle_wake.sh BINARY
bin=$1
. "$(dirname "$0")/mpi_prologue.sh"
out=$($mpirun_lo -np 2 "$bin" 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
echo "$out" | grep -q "^idle wake: 3 of 3 records" || { echo "FAIL: no summary from rank 1"; exit 1; }
echo "PASS"
