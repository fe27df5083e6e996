// The processes of one `mpirun` job as seen by `analyze` (docs/PERFORMANCE.md, "Across
// processes"): rank and size, and bytes sent from any rank to rank 0. The declarations
// are MPI-free; only rank_group.cpp (library snailtrail_analyze_mpi) includes <mpi.h>.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace snailtrail::mpi {

class RankGroup {
 public:
  // When launched by mpirun with more than one process (OMPI_COMM_WORLD_SIZE > 1):
  // initializes MPI (only the calling thread makes MPI calls) and returns the group;
  // otherwise nullptr and MPI is never called. MPI is finalized by the destructor.
  static std::unique_ptr<RankGroup> join_if_launched();
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank > 0: sends `bytes` (any size) to rank 0, which takes them with receive_from.
  void send_to_root(std::string_view bytes);
  // Rank 0: the next bytes rank `from` sent with send_to_root.
  std::string receive_from(int from);
  // Ends every process of the job (after an error on one of them).
  [[noreturn]] void abort(int code);

 private:
  RankGroup(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0, size_ = 1;
};

}  // namespace snailtrail::mpi
