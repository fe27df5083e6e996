// Matching of a PAG's message events: sends paired with receives by (sender, receiver,
// correlator), as one radix-partitioned hash join. Internal to the batch PAG builder
// (timeline.cpp); docs/PAG.md.
#pragma once

#include <cstdint>
#include <vector>

#include "pag/pag.hpp"

namespace snailtrail::detail {

// A message event waiting for its partner; `node` is local to `worker` until the
// worker's nodes are placed.
struct HalfEdge {
  uint32_t sender;  // worker ids as in the trace
  uint32_t receiver;
  int64_t correlator;
  int64_t ts;
  uint32_t worker;  // provisional worker index of the worker that logged it
  uint32_t node;
  ActivityType type;
};

// Matches sends with receives by (sender, receiver, correlator) into pag.messages,
// sorted by (send time, receive time, nodes, type); the half messages left unpaired,
// duplicated or dropped are appended to `issues`. The lists (one per scanning thread;
// each key's half messages all in one list, in time order) are emptied. `threads` caps
// the threads used (0: up to 4 for large traces); the result never depends on it.
void match_messages(Pag& pag, std::vector<std::vector<HalfEdge>>& send_lists,
                    std::vector<std::vector<HalfEdge>>& recv_lists, std::vector<IssueAt>& issues,
                    unsigned threads = 0);

}  // namespace snailtrail::detail
