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
#pragma once

#include <cstdint>
#include <span>

#include "pag/snapshot.hpp"

namespace snailtrail {

class LongestPath {
 public:
  // Prepares the graph of a snapshot (message lists, a topological order); the snapshot
  // must stay alive and unchanged while length() is used.
  void prepare(const Snapshot& snap);

  // The window's length (ns, from its first node to its last) when the duration of the
  // timeline edge leaving node v is divided by timeline_div[v] and that of message m by
  // message_div[m] (1: unchanged; values >= 1). Empty spans mean no change.
  double length(std::span<const float> timeline_div, std::span<const float> message_div);

  // The recorded span, and the length with no speed-up (<= span).
  int64_t span() const { return span_; }
  double base_length() const { return base_; }

 private:
  const Snapshot* snap_ = nullptr;
  int64_t start_ = 0, span_ = 0;
  double base_ = 0;
  std::vector<uint32_t> in_begin_, in_msg_;  // messages by destination node (CSR)
  std::vector<double> release_;              // per node, from the window's first node
  std::vector<uint8_t> timeline_pred_;       // per node: 1 if node v - 1's edge ends here
  std::vector<uint32_t> order_;              // topological order (Kahn)
  std::vector<uint32_t> rest_;               // nodes on or after zero-duration cycles, by time
  std::vector<double> dist_;
};

}  // namespace snailtrail
