#!/bin/sh
# CTest driver: Megaphone's bytes_moved summed over MPI ranks (docs/MEGAPHONE.md).
#   megaphone_mpi_bytes.sh BINARY STRATEGY
# keycount --bins 256 --keys 100000 with two migrations at random times (printed), once in
# one process of 4 workers and once under mpirun -np 2 x 2 workers: every migration
# completed in both, with the same bins and bytes_moved, and the bytes equal to the hand
# count: a moved bin is its dense array (8-byte length + ceil(100000 / 256) = 391 counts
# of 8 bytes) plus an 8-byte count of pending records (none: keycount schedules none, and
# F routes records at or after a step's time to the new owner), 3144 bytes a bin.
# The input lasts 3 s: a fluid migration of 191 bins takes 0.6 s idle and more than 1 s on
# a loaded machine, and both must run before the input ends.
# Exit 77 (skipped) when mpirun is missing.
bin=$1 strategy=$2
. "$(dirname "$0")/mpi_prologue.sh"
. "$(dirname "$0")/mpi_migrations.sh"
times=$(awk 'BEGIN { srand(); a = 100 + int(rand() * 300); b = a + 200 + int(rand() * 300);
                     printf "%dms,%dms", a, b }')
echo "strategy $strategy, migrations at $times"
args="run keycount --bins 256 --rate 200000 --records 600000 --keys 100000 --verify
      --migrate-at $times --strategy $strategy"
# shellcheck disable=SC2086 # $args is a list of words
run_one_and_two $args
# "migration (S): BINS bins, BYTES bytes in ..." -> "BINS BYTES" per migration
m1=$(echo "$one" | sed -n 's/^migration ([a-z-]*): \([0-9]*\) bins, \([0-9]*\) bytes in.*/\1 \2/p')
m2=$(echo "$two" | sed -n 's/^migration ([a-z-]*): \([0-9]*\) bins, \([0-9]*\) bytes in.*/\1 \2/p')
[ -n "$m1" ] || { echo "FAIL: no migration in one process"; exit 1; }
[ "$m1" = "$m2" ] || { echo "FAIL: bins/bytes per migration differ: one process '$m1', mpirun '$m2'"; exit 1; }
bad=$(echo "$m2" | awk '$1 == 0 || $2 != $1 * 3144 { print }')
[ -z "$bad" ] || { echo "FAIL: bytes != bins * 3144: $bad"; exit 1; }
echo PASS
