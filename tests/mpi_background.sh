# Sourced by the CTest drivers that start mpirun (or serve) in the background and watch
# it end (tests/mpi_fail.sh, tests/loop_mpi.sh, tests/mpi_trace_to.sh), after
# mpi_prologue.sh:
#   $dir                  a temporary directory; on exit it is removed and the background
#                         processes still named by $mpid (mpirun) and $spid (serve) are
#                         killed (SIGKILL)
#   rank_pid RANK         prints the pid of rank RANK among $mpid's children, waiting up
#                         to 30 s for it to start; prints nothing if it does not
#   wait_mpirun OUT       waits at most 60 s for $mpid to end: FAIL (printing the file
#                         OUT) on a hang; else sets $rc to its exit code and clears $mpid
#   expect_rank1_killed OUT   the file OUT names rank 1 killed by SIGKILL
dir=$(mktemp -d) || exit 1
mpid=
spid=
cleanup() {
  [ -n "$mpid" ] && kill -9 "$mpid" 2>/dev/null
  [ -n "$spid" ] && kill -9 "$spid" 2>/dev/null
  rm -rf "$dir" "$ompi_tmp"
}
trap cleanup EXIT
rank_pid() {
  # The rank processes are mpirun's children; find the rank by its environment.
  _pid=
  _i=0
  while [ -z "$_pid" ] && [ $_i -lt 300 ]; do
    sleep 0.1
    _i=$((_i + 1))
    for _p in $(pgrep -P "$mpid"); do
      if tr '\0' '\n' <"/proc/$_p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
        _pid=$_p
      fi
    done
  done
  echo "$_pid"
}
wait_mpirun() {
  _i=0
  while kill -0 "$mpid" 2>/dev/null && [ $_i -lt 600 ]; do
    sleep 0.1
    _i=$((_i + 1))
  done
  if kill -0 "$mpid" 2>/dev/null; then
    cat "$1"
    echo "FAIL: mpirun still running 60 s after the failure (hang)"
    exit 1
  fi
  wait "$mpid"
  rc=$?
  mpid=
}
expect_rank1_killed() {
  grep -q "process rank 1 .*signal 9" "$1" ||
    { echo "FAIL: the output does not name the killed rank"; exit 1; }
}
