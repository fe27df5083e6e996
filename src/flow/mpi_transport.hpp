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
// Message size and outgoing bound: each of `flags` that is non-zero (`run --mpi-chunk-bytes`,
// `--mpi-out-bytes`), else SNAILTRAIL_MPI_CHUNK_BYTES / SNAILTRAIL_MPI_OUT_BYTES where set
// (tests make them tiny; a bad value is an error naming it), else `limits`.
std::unique_ptr<Transport> mpi_transport_if_launched(ChunkLimits limits = {},
                                                     ChunkLimits flags = {0, 0});

}  // namespace snailtrail::flow
