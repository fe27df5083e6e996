# Sourced by the CTest drivers that run mpirun (tests/*mpi*.sh):
#   . "$(dirname "$0")/mpi_prologue.sh"
# skips the test (exit 77) when mpirun is missing, and sets $mpirun_lo: mpirun on loopback
# only (shared memory and TCP over lo, for the data and for mpirun's own channel), with
# more ranks than cores allowed. Use it unquoted: $mpirun_lo -np 2 BINARY ARGS...
# Each driver gives Open MPI its own session directory ($ompi_tmp, removed on exit; a driver
# that sets its own EXIT trap removes it too): mpiruns of parallel CTest jobs sharing
# /tmp/ompi.HOST.UID race, one removing it as the other creates its pid.N inside
# ("A call to mkdir was unable to create the desired directory", orte_init failed).
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
ompi_tmp=$(mktemp -d "${TMPDIR:-/tmp}/snailtrail-ompi.XXXXXX") || exit 1
trap 'rm -rf "$ompi_tmp"' EXIT
mpirun_lo="mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo --mca orte_tmpdir_base $ompi_tmp"
