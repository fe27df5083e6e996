// The Open MPI transport (docs/RUNTIME.md "Several processes"). The declarations are
// MPI-free; only mpi_transport.cpp (library snailtrail_flow_mpi) includes <mpi.h>.
#pragma once

#include <memory>

#include "flow/channel.hpp"

namespace snailtrail::flow {

// When launched by mpirun with more than one process (OMPI_COMM_WORLD_SIZE > 1):
// initializes MPI and returns the transport of this process; otherwise nullptr and MPI
// is never called. MPI is finalized when the transport is destroyed.
std::unique_ptr<Transport> mpi_transport_if_launched();

}  // namespace snailtrail::flow
