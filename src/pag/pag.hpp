// The program activity graph (PAG) of a trace: per-worker timelines with gap filling,
// and matched messages; the continuous PAG of a whole trace, from which window snapshots
// are cut (snapshot.hpp). Built by build_pag (timeline.hpp) or, for a live stream, by
// StreamingPag (streaming.hpp).
//
// Node i of the flat arrays is (worker, node_ts[i]); the timeline edge leaving node i
// goes to node i + 1 of the same worker (edge_type[i] == kNoEdge for a worker's last
// node). Gap-filling rules: docs/PAG.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/big_vector.hpp"
#include "trace/trace.hpp"

namespace snailtrail {

inline constexpr uint32_t kNone = UINT32_MAX;
inline constexpr uint8_t kNoEdge = 0xFF;

struct PagOptions {
  int64_t gap_threshold_ns = 100'000;  // 100 us: gaps shorter than this are closed by alignment
  // Threads building the PAG (`analyze --threads`); 0: up to 4 for traces of over 1 M
  // events. Results never depend on it.
  unsigned threads = 0;
};

// Recoverable input problems found while building the PAG. Each occurrence is kept
// with its timestamp so that it is counted in the window it happened in.
enum class Issue : uint8_t {
  unmatched_send,
  unmatched_recv,
  message_without_correlator,  // send/recv lacking correlator or remote: not matched
  duplicate_correlator,        // more than one send (or recv) with one (sender, receiver, id)
  negative_duration_message,   // receive before send (clock skew): message dropped
  self_loop_message,           // zero-duration message from a node to itself: dropped
  end_without_start,           // assumed to have started at the previous node
  mismatched_end,              // end of another type than the open activity: closes it
  overlapping_activity,        // start while another activity is open: closes the open one
  unterminated_activity,       // still open at the worker's last event
};
inline constexpr int kIssueCount = 10;
inline constexpr std::array<const char*, kIssueCount> kIssueNames = {"unmatched_sends",
                                                                     "unmatched_recvs",
                                                                     "messages_without_correlator",
                                                                     "duplicate_correlators",
                                                                     "negative_duration_messages",
                                                                     "self_loop_messages",
                                                                     "ends_without_start",
                                                                     "mismatched_ends",
                                                                     "overlapping_activities",
                                                                     "unterminated_activities"};

struct IssueAt {
  int64_t ts;
  Issue issue;
};

struct Message {
  uint32_t src_node;  // global node indices
  uint32_t dst_node;
  int64_t src_ts;
  int64_t dst_ts;
  uint32_t src_worker;  // dense worker indices
  uint32_t dst_worker;
  ActivityType type;
};

struct Pag {
  // Dense worker index -> worker id, ascending ids.
  std::vector<uint32_t> worker_ids;
  std::vector<uint32_t> worker_begin;  // nodes of worker w: [worker_begin[w], worker_begin[w+1])

  BigVector<int64_t> node_ts;
  BigVector<uint8_t> edge_type;       // ActivityType of the edge leaving node i, or kNoEdge
  BigVector<uint32_t> edge_op;        // operator id or kNone
  BigVector<uint32_t> edge_instance;  // node where the edge's activity began (groups split edges)

  BigVector<Message> messages;  // sorted by (src_ts, dst_ts)
  std::vector<IssueAt> issues;  // sorted by ts

  // Raw event timestamps grouped by worker (each group in time order), for exact
  // per-window event counts: worker w's are [event_begin[w], event_begin[w+1]).
  BigVector<int64_t> event_ts;
  std::vector<uint32_t> event_begin;

  // Operator ids that appear on any event, ascending.
  std::vector<uint32_t> operator_ids;

  int64_t first_ts = 0;  // over all events (before alignment)
  int64_t last_ts = 0;

  size_t worker_count() const { return worker_ids.size(); }
  size_t node_count() const { return node_ts.size(); }
};

}  // namespace snailtrail
