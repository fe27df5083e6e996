# Sourced by the CTest drivers that run mpirun (tests/*mpi*.sh):
#   . "$(dirname "$0")/mpi_prologue.sh"
# skips the test (exit 77) when mpirun is missing, and sets $mpirun_lo: mpirun on loopback
# only (shared memory and TCP over lo, for the data and for mpirun's own channel), with
# more ranks than cores allowed. Use it unquoted: $mpirun_lo -np 2 BINARY ARGS...
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 77
fi
mpirun_lo="mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
