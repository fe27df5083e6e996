#!/bin/sh
# CTest: `mpirun -np 2 BINARY run keycount --trace DIR/t.snail` writes one trace per rank
# (t.snail, t.rank1.snail; docs/RUNTIME.md "Several processes"), each readable by
# analyze, with the transport's serialization and deserialization activities (messages
# between ranks are unmatched in each file: their send and recv are in different files).
# Exit 77 (skipped) when mpirun is missing.
bin=$1
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mpirun --oversubscribe -np 2 --mca btl self,vader,tcp --mca btl_tcp_if_include lo \
  --mca oob_tcp_if_include lo "$bin" run keycount --workers 1 --records 200000 --keys 1000 \
  -q --trace "$dir/t.snail" || { echo "FAIL: mpirun exited $?"; exit 1; }
ls "$dir"
[ ! -e "$dir/t.rank0.snail" ] || { echo "FAIL: rank 0 must write t.snail itself"; exit 1; }
for f in t.snail t.rank1.snail; do
  [ -s "$dir/$f" ] || { echo "FAIL: $f missing"; exit 1; }
  out=$("$bin" analyze "$dir/$f" 2>&1) || { echo "$out"; echo "FAIL: analyze $f"; exit 1; }
  for a in serialization deserialization; do
    echo "$out" | grep -q "^  $a " || { echo "$out"; echo "FAIL: no $a in $f"; exit 1; }
  done
done
echo PASS
