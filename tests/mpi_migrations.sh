# Sourced by the CTest drivers of Megaphone migrations under mpirun (tests/*megaphone_mpi*.sh),
# after mpi_prologue.sh: the checks they share on a run's output.
#   expect_verified "$out"         exactly one --verify line saying the output is right
#   expect_completed "$out"        no migration line says "not completed"
#   expect_same_digest "$a" "$b" WHAT   equal output digests (WHAT names the reference)
#   run_one_and_two ARGS...        one process of 4 workers and mpirun -np 2 x 2 workers of
#                                  `$bin ARGS`: sets $one and $two, prints their migration
#                                  lines, and checks both as above
expect_verified() {
  n=$(echo "$1" | grep -c "^verify: .* equal to the plain single-threaded loop")
  [ "$n" -eq 1 ] || { echo "$1"; echo "FAIL: $n verify lines"; exit 1; }
}
expect_completed() {
  if echo "$1" | grep "^migration" | grep -q "not completed"; then
    echo "FAIL: a migration did not complete"; exit 1
  fi
}
expect_same_digest() {
  d1=$(echo "$1" | sed -n 's/.*output digest \([0-9a-f]*\).*/\1/p')
  d2=$(echo "$2" | sed -n 's/.*output digest \([0-9a-f]*\).*/\1/p')
  [ -n "$d1" ] && [ "$d1" = "$d2" ] || { echo "FAIL: digest $d2 != $d1 of $3"; exit 1; }
}
run_one_and_two() {
  one=$("$bin" "$@" --workers 4 2>&1) || { echo "$one"; echo "FAIL: one process exited non-zero"; exit 1; }
  two=$($mpirun_lo -np 2 "$bin" "$@" --workers 2 2>&1) ||
    { echo "$two"; echo "FAIL: mpirun exited non-zero"; exit 1; }
  echo "$one" | grep "^migration"
  echo "$two" | grep "^migration"
  for out in "$one" "$two"; do
    expect_verified "$out"
    expect_completed "$out"
  done
}
