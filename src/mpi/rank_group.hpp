// The processes of one `mpirun` job as seen by `analyze` (docs/PERFORMANCE.md, "Across
// processes"): rank and size, bytes streamed from any rank to rank 0, and small messages
// between any two ranks (the hand-over of the output's offset). The declarations
// are MPI-free; only rank_group.cpp (library snailtrail_analyze_mpi) includes <mpi.h>.
//
// Every MPI call is made by one thread of the group's own (the "MPI thread": it
// initializes MPI, moves the bytes, and finalizes; MPI_THREAD_FUNNELED), so the caller's
// thread never waits for MPI: under Open MPI the rank and size are known from the
// environment before MPI_Init, so a rank starts its share of the work while MPI_Init runs
// on the MPI thread. The MPI thread never spins: it polls (MPI_Iprobe, MPI_Test) and
// sleeps a fraction of a millisecond in between, leaving the cores to the analysis.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace snailtrail::mpi {

// Processes of this mpirun job on this host (OMPI_COMM_WORLD_LOCAL_SIZE; 1 without
// mpirun): they share its cores.
unsigned ranks_on_this_host();

class RankGroup {
 public:
  // When launched by mpirun with more than one process (OMPI_COMM_WORLD_SIZE > 1): starts
  // the MPI thread and returns the group (at once when OMPI_COMM_WORLD_RANK is set, else
  // once MPI_Init is done); otherwise nullptr and MPI is never called. The destructor
  // ends this rank's stream to rank 0 (if any), waits until it is sent, and finalizes MPI.
  static std::unique_ptr<RankGroup> join_if_launched();
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank > 0: appends `bytes` to this rank's stream to rank 0 (sent in the background, in
  // order, as soon as rank 0 takes them). A rank that calls it (even with no bytes) ends
  // its stream when the group is destroyed; rank 0's receive_from waits for that end.
  void send_to_root(std::string bytes);
  // Rank > 0: ends this rank's stream to rank 0 once its pieces are sent, before the group
  // is destroyed (rank 0 need not wait for this rank's teardown).
  void end_stream();
  // Rank 0: starts taking every other rank's stream in the background (call it early, so
  // the other ranks' bytes move while rank 0 works).
  void start_receiving();
  // Rank 0 (after start_receiving): the next piece of rank `from`'s stream, waiting for it;
  // nullopt at its end (the other rank's group was destroyed).
  std::optional<std::string> receive_from(int from);
  // A buffer to fill and pass to send_to_root (empty; perhaps with capacity from earlier
  // pieces), and one to give back after receive_from: reusing them saves faulting in
  // fresh pages for every piece.
  std::string take_buffer();
  void give_buffer(std::string bytes);
  // Small messages between any two ranks (apart from the streams to rank 0): `to` gets
  // `bytes` as one message, sent in the background after this rank's earlier messages.
  void send_message(int to, std::string bytes);
  // Announces one more message this rank will receive (from any rank): the MPI thread
  // takes it as soon as it arrives. Call it early, before the message can come.
  void expect_message();
  // The next expected message: waits for it (`wait`), or nullopt while it has not come.
  std::optional<std::string> receive_message(bool wait);
  // Ends every process of the job (after an error on one of them).
  [[noreturn]] void abort(int code);

  // Seconds from the group's creation until MPI_Init returned (waits for it).
  double init_seconds();
  // CPU time the MPI thread has used so far (MPI_Init, moving bytes, polling).
  double mpi_thread_cpu_seconds();

  struct State;

 private:
  explicit RankGroup(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
  int rank_ = 0, size_ = 1;
};

}  // namespace snailtrail::mpi
