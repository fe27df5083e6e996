// Progress tracking (timely dataflow's, for totally ordered u64 times and an acyclic
// dataflow). A pointstamp is a (location, time): a location is an operator's output
// (capabilities the operator holds there) or an edge (messages sent on it and not yet
// taken by its target). Every worker counts its pointstamp changes (+1 when a capability
// is created or a message is pushed, -1 when one is dropped or pulled) in a ChangeBatch,
// and broadcasts the compacted batch to every worker (itself included); each worker
// adds the batches it receives into its ProgressTracker.
//
// The frontier of an operator input is the least time with a positive count at any
// location that can reach the input. It is exact and safe: a worker creates a pointstamp
// only while it holds one at an earlier or equal time that can reach the same places (a
// capability, or the message being processed), and the +1 travels in the same batch as
// the -1 or an earlier one, so no worker's view ever passes a time still held. Counts may
// be transiently negative (a receiver's -1 overtaking the sender's +1): a negative count
// holds nothing, and the sender's capability holds the time until its batch arrives.
//
// The tracker is incremental (issue 35): an update touches only its location's counts, a
// location whose least positive time may have moved (a count crossed zero) is marked,
// and recompute() looks again only at the edges such a location reaches.
#pragma once

#include <cstdint>
#include <vector>

#include "flow/channel.hpp"

namespace snailtrail::flow {

struct ProgressUpdate {
  uint32_t loc = 0;
  Time time = 0;
  int64_t delta = 0;
};

// Locations: operator `op`'s output is 2*op, edge `e` is 2*e+1.
inline uint32_t output_location(uint32_t op) {
  return 2 * op;
}
inline uint32_t edge_location(uint32_t edge) {
  return 2 * edge + 1;
}

class ChangeBatch {
 public:
  void add(uint32_t loc, Time t, int64_t delta) { updates_.push_back({loc, t, delta}); }
  bool empty() const { return updates_.empty(); }
  // Sorts, merges equal pointstamps and drops zero sums; returns the result and clears.
  std::vector<ProgressUpdate> drain();
  // The same into `out` (its contents replaced, its capacity kept: no allocation once warm).
  void drain_into(std::vector<ProgressUpdate>& out);

 private:
  std::vector<ProgressUpdate> updates_;
};

struct EdgeSpec {
  uint32_t from_op = 0;
  uint32_t to_op = 0;
};

class ProgressTracker {
 public:
  // `ops` operators (created in topological order) and the edges between them.
  void init(uint32_t ops, const std::vector<EdgeSpec>& edges);
  void apply(const ProgressUpdate* u, size_t n);
  // Recomputes the frontier of every edge reached by a location whose least held time
  // moved since the last call; returns the number of edges whose frontier moved
  // backwards (must stay 0: frontiers are monotone).
  uint64_t recompute();
  // The frontier of the input fed by `edge`: no message at a time < frontier can come.
  Time frontier(uint32_t edge) const { return frontier_[edge]; }
  // Least time held at `loc` (kTimeMax if none).
  Time held(uint32_t loc) const;
  bool all_empty() const { return nonzero_ == 0; }

 private:
  struct Count {
    Time time;
    int64_t count;  // never 0: a count that reaches 0 is erased
  };
  // Per location its counts sorted by time: a location holds a handful of times at once
  // (the epochs in flight), so a small sorted array beats a tree node per pointstamp.
  std::vector<std::vector<Count>> counts_;
  std::vector<Time> least_;  // per location: least time with a positive count, as of recompute()
  // Flat adjacency (offsets into one array each): the locations that reach an edge, and
  // the edges a location reaches.
  std::vector<uint32_t> source_begin_, sources_;
  std::vector<uint32_t> target_begin_, targets_;
  std::vector<Time> frontier_;  // per edge
  // Locations whose positive set changed since recompute(), and edges to look at again.
  std::vector<uint32_t> dirty_locs_, dirty_edges_;
  std::vector<uint8_t> loc_dirty_, edge_dirty_;
  uint64_t nonzero_ = 0;  // pointstamps with a non-zero count
};

}  // namespace snailtrail::flow
