// What-if (slack) analysis: how much shorter a window's critical path would be if some of
// its activities were faster, computed on the PAG by re-weighting edges and recomputing
// the longest path (docs/PAG.md §5), not guessed from CP shares.
//
// The model: every node v of the snapshot happens at dist(v) = max(release(v), max over
// edges (u, v) of dist(u) + w'(u, v)), measured from the window's first node. A speed-up
// divides the duration of the chosen edges. Waiting edges take no time of their own: a
// wait ends when the message it waited for arrives. A node cannot move earlier than its
// recorded time (its release) when nothing in the window explains it: the first node of a
// timeline without an arriving message, and the end of a wait where no message arrives
// (input from outside, a timer). Only nodes where something starts are held: the end of
// a timeline (a last wait, an edge cut by the window) is not. With no speed-up every node
// where something starts keeps its recorded time, so the length is the span, less the
// waits that end timelines; the saving of a speed-up is that length minus the new one.
//
// Messages the receiver did not wait for: a receive that ends a wait (or starts a
// timeline) shows when the message arrived, so its duration is the transport time. A
// receive while the worker was busy does not: the message may have sat in a queue
// (systems that record a receive when they take the message) or have been noted in
// passing while the work went on. So, with the recorded order kept:
//  - a receive between two activities of a busy worker (it took the message when done
//    with the previous one) waits only for the message's transport time: the shortest
//    duration of a waited-for message of its type between the same two workers in the
//    window, else of its type in the window, else its own duration (never more than it);
//  - a receive inside an activity (the activity goes on across it) holds nothing back
//    there: it holds the worker's next end of a wait in the window (the worker may have
//    waited for it later, e.g. a driver for its tasks' results), or nothing.
// Neither changes the length without speed-up; both let a busy worker's speed-up run
// ahead of a queue whose recorded length it had set itself (docs/PAG.md §5).
//
// Segments (cp/segments.hpp): when the window is cut into CP segments, each segment is
// measured on its own (its longest path V_s -> V_e) and the lengths are summed, as CP
// combines them. A node that keeps its recorded time then holds its time within its
// segment only, so a late unrelated slice (a helper thread starting near the end) does
// not cap the savings of every earlier segment. An edge crossing a border counts its part
// inside each segment.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pag/snapshot.hpp"
#include "pag/timeline.hpp"

namespace snailtrail {

class LongestPath {
 public:
  // Prepares the graph of a snapshot (message lists, a topological order); the snapshot
  // must stay alive and unchanged while length() is used.
  // `segments`: the window's CP segments [start, end] in time order (empty: one).
  void prepare(const Snapshot& snap, const Pag& pag,
               std::span<const std::pair<int64_t, int64_t>> segments = {});

  // The window's length (ns, from its first node to its last) when the duration of the
  // timeline edge leaving node v is divided by timeline_div[v] and that of message m by
  // message_div[m] (1: unchanged; values >= 1). Empty spans mean no change.
  double length(std::span<const float> timeline_div, std::span<const float> message_div);

  // The recorded span, and the length with no speed-up (<= span).
  int64_t span() const { return span_; }
  double base_length() const { return base_; }

 private:
  // The pieces of prepare(): each message's node and duration in the model; the CSR of
  // messages by the node they hold; per node its release time (returns the in-degrees);
  // the topological order and the nodes left on or after zero-duration cycles.
  void weigh_messages(const Snapshot& snap, const Pag& pag,
                      const std::vector<uint32_t>& next_wait_end);
  void build_in_lists(size_t n);
  std::vector<uint32_t> set_release(const Snapshot& snap, const std::vector<uint8_t>& sends,
                                    const std::vector<uint8_t>& received);
  void order_nodes(const Snapshot& snap, std::vector<uint32_t>& indegree);
  void assign_segments(const Snapshot& snap, std::span<const std::pair<int64_t, int64_t>> segs);
  // Sum over the segments of their longest path, from the final dist_.
  double segment_lengths(std::span<const float> timeline_div);

  const Snapshot* snap_ = nullptr;
  int64_t start_ = 0, span_ = 0;
  double base_ = 0;
  std::vector<uint32_t> in_begin_, in_msg_;        // messages by (effective) destination node (CSR)
  std::vector<uint32_t> msg_dst_;                  // per message: the node it holds, or kNone
  std::vector<double> msg_w_;                      // per message: its duration in the model
  std::unordered_map<uint64_t, double> pair_min_;  // transport time per (sender, receiver, type)
  std::vector<double> release_;                    // per node, from the window's first node
  std::vector<uint8_t> timeline_pred_;             // per node: 1 if node v - 1's edge ends here
  std::vector<uint32_t> order_;                    // topological order (Kahn)
  std::vector<uint32_t> rest_;  // nodes on or after zero-duration cycles, by time
  std::vector<double> dist_;
  std::vector<int64_t> seg_start_, seg_end_;  // per segment, absolute times
  std::vector<uint32_t> seg_of_;              // per node: its segment
  std::vector<double> seg_len_;
};

}  // namespace snailtrail
