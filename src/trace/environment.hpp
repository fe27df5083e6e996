#pragma once

// Reading environment variables where Open MPI may be writing them.
//
// Open MPI sets environment variables from its own threads: MPI_Init runs on a rank's MPI
// thread while the analysis goes on (src/mpi/rank_group.cpp), and its progress threads
// live on. getenv racing setenv reads `environ` while setenv reallocates it: a rank of
// `mpirun -np 4 analyze` crashed in getenv (tests/mpi_analyze.sh, in one CI run). So before MPI
// starts, the environment is frozen: from then on, every variable snailtrail reads comes from a
// copy taken then. Until then (no MPI in the process), reads are live, so that tests may set a
// variable between runs.

namespace snailtrail {

// Copies the environment; later environment_value calls read the copy. Call before any
// thread that may write the environment starts. Idempotent (the first copy stays).
void freeze_environment();

// The variable's value (nullptr if unset): from the frozen copy once there is one.
const char* environment_value(const char* name);

}  // namespace snailtrail
