#!/bin/sh
# CTest: `mpirun -np 2 BINARY run keycount --workers 2 --trace DIR/t.snail` writes ONE
# trace (rank 0 gathers every rank's events; docs/RUNTIME.md "Several processes") that
# analyze reads: all 4 workers, the transport's serialization and deserialization, and
# every cross-process message's send matched with its recv (0 unmatched sends/recvs).
# Exit 77 (skipped) when mpirun is missing.
bin=$1
. "$(dirname "$0")/mpi_prologue.sh"
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir" "$ompi_tmp"' EXIT
$mpirun_lo -np 2 "$bin" run keycount --workers 2 --records 200000 --keys 1000 \
  -q --trace "$dir/t.snail" || { echo "FAIL: mpirun exited $?"; exit 1; }
ls "$dir"
[ "$(ls "$dir")" = "t.snail" ] || { echo "FAIL: expected t.snail alone"; exit 1; }
out=$("$bin" analyze "$dir/t.snail" 2>&1) || { echo "$out"; echo "FAIL: analyze"; exit 1; }
echo "$out"
for a in serialization deserialization data_message; do
  echo "$out" | grep -q "^  $a " || { echo "FAIL: no $a"; exit 1; }
done
for w in 0 1 2 3; do
  echo "$out" | grep -q "^  worker-$w " || { echo "FAIL: no worker-$w"; exit 1; }
done
# Messages between ranks (worker 0/1 <-> 2/3) are there and matched.
echo "$out" | grep -Eq "^  worker-[01] -> worker-[23] |^  worker-[23] -> worker-[01] " || { echo "FAIL: no cross-process message"; exit 1; }
if echo "$out" | grep -q "unmatched"; then echo "FAIL: unmatched messages"; exit 1; fi
json=$("$bin" analyze "$dir/t.snail" --format jsonl --no-progress) || exit 1
echo "$json" | grep -q '"unmatched_sends":0' || { echo "FAIL: unmatched_sends != 0"; exit 1; }
echo "$json" | grep -q '"unmatched_recvs":0' || { echo "FAIL: unmatched_recvs != 0"; exit 1; }
echo PASS
