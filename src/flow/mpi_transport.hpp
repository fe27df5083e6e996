// The Open MPI transport (docs/RUNTIME.md "Several processes"). The declarations are
// MPI-free; only mpi_transport.cpp (library snailtrail_flow_mpi) includes <mpi.h>.
#pragma once

#include <memory>

#include "flow/channel.hpp"
#include "flow/frame_chunks.hpp"

namespace snailtrail::flow {

// When launched by mpirun with more than one process (OMPI_COMM_WORLD_SIZE > 1):
// initializes MPI and returns the transport of this process; otherwise nullptr and MPI
// is never called. MPI is finalized when the transport is destroyed.
// Message size and outgoing bound: `limits`, or where set SNAILTRAIL_MPI_CHUNK_BYTES and
// SNAILTRAIL_MPI_OUT_BYTES (tests make them tiny; a bad value is an error naming it).
std::unique_ptr<Transport> mpi_transport_if_launched(ChunkLimits limits = {});

}  // namespace snailtrail::flow
