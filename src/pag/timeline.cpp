#include "pag/timeline.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace snailtrail {
namespace {

// Maps sparse worker ids to dense indices 0..W-1 in ascending id order.
struct WorkerIndex {
  std::vector<uint32_t> ids;
  std::vector<uint32_t> table;  // id -> dense, when ids are small enough

  explicit WorkerIndex(const std::vector<Event>& events) {
    uint32_t max_id = 0;
    for (const Event& e : events) max_id = std::max(max_id, e.worker);
    if (!events.empty() && max_id < (1u << 22)) {
      table.assign(size_t{max_id} + 1, kNone);
      for (const Event& e : events) table[e.worker] = 0;
      for (uint32_t id = 0; id <= max_id; ++id)
        if (table[id] == 0) {
          table[id] = static_cast<uint32_t>(ids.size());
          ids.push_back(id);
        }
    } else {
      ids.reserve(64);
      for (const Event& e : events) ids.push_back(e.worker);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
  }

  uint32_t operator()(uint32_t id) const {
    if (!table.empty()) return table[id];
    return static_cast<uint32_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
  }
};

// The events of one worker at one timestamp, as multisets (their order must not matter).
struct NodeContent {
  int64_t ts = 0;
  std::array<uint16_t, kActivityTypeCount> starts{};
  std::array<uint16_t, kActivityTypeCount> ends{};
  std::array<uint32_t, kActivityTypeCount> start_op{};  // smallest operator per started type
  std::array<uint32_t, kActivityTypeCount> end_op{};
  bool has_send = false;
  bool has_recv = false;
  bool has_local = false;  // any start or end event

  void reset(int64_t t) {
    ts = t;
    starts.fill(0);
    ends.fill(0);
    start_op.fill(kNone);
    end_op.fill(kNone);
    has_send = has_recv = has_local = false;
  }

  void add(const Event& e) {
    int a = static_cast<int>(e.activity);
    uint32_t op = e.has(kHasOperator) ? e.op : kNone;
    switch (e.kind) {
      case EventKind::start:
        ++starts[a];
        start_op[a] = std::min(start_op[a], op);
        has_local = true;
        break;
      case EventKind::end:
        ++ends[a];
        end_op[a] = std::min(end_op[a], op);
        has_local = true;
        break;
      case EventKind::send: has_send = true; break;
      case EventKind::recv: has_recv = true; break;
    }
  }

  bool has_message() const { return has_send || has_recv; }
};

struct HalfEdge {
  uint32_t sender;  // worker ids (not dense)
  uint32_t receiver;
  int64_t correlator;
  int64_t ts;
  uint32_t node;
  uint32_t worker;  // dense index of the worker that logged it
  EventKind kind;
  ActivityType type;
};

// Walks one worker's events and appends its gap-filled timeline to the PAG.
class TimelineBuilder {
 public:
  TimelineBuilder(Pag& pag, std::vector<IssueAt>& issues, const PagOptions& options)
      : pag_(pag), issues_(issues), h_(options.gap_threshold_ns) {}

  // Returns the global node index that holds `node`'s events.
  uint32_t add(const NodeContent& b) {
    if (prev_ == kNone) {
      prev_ = emit(b.ts);
      prev_has_send_ = b.has_send;
      prev_has_recv_ = b.has_recv;
      prev_has_local_ = b.has_local;
      apply(b, /*end_typed_gap=*/false);
      return prev_;
    }
    if (open_) {
      uint32_t node = emit_edge(b.ts, open_type_, open_op_, open_instance_);
      set_prev(node, b);
      apply(b, false);
      return node;
    }
    // A gap: nothing was recorded between the previous node and this one.
    int unmatched_end = first_unmatched_end(b);
    if (unmatched_end >= 0) {
      // An end without a start: assume the activity filled the gap.
      uint32_t node = emit_edge(b.ts, static_cast<uint8_t>(unmatched_end),
                                b.end_op[unmatched_end], prev_);
      set_prev(node, b);
      apply(b, true);
      return node;
    }
    bool a_message_only = !prev_has_local_;
    bool b_message_only = b.has_message() && !b.has_local;
    uint8_t type;
    if (a_message_only && b_message_only) {
      // Between two message events the threshold does not apply.
      type = static_cast<uint8_t>(prev_has_send_ && b.has_recv ? ActivityType::waiting
                                                               : ActivityType::unknown);
    } else {
      bool a_movable = !prev_has_send_ && !prev_has_recv_;
      bool b_movable = !b.has_message();
      if (b.ts - pag_.node_ts[prev_] < h_ && (a_movable || b_movable)) {
        // Close the gap by alignment: a local side moves, message nodes never do.
        if (a_movable) pag_.node_ts[prev_] = b.ts;
        prev_has_send_ |= b.has_send;
        prev_has_recv_ |= b.has_recv;
        prev_has_local_ |= b.has_local;
        apply(b, false);
        return prev_;
      }
      type = static_cast<uint8_t>(b.has_recv ? ActivityType::waiting : ActivityType::unknown);
    }
    uint32_t node = emit_edge(b.ts, type, kNone, prev_);
    set_prev(node, b);
    apply(b, false);
    return node;
  }

  void finish() {
    if (open_) issues_.push_back({pag_.node_ts[prev_], Issue::unterminated_activity});
  }

 private:
  uint32_t emit(int64_t ts) {
    pag_.node_ts.push_back(ts);
    pag_.edge_type.push_back(kNoEdge);
    pag_.edge_op.push_back(kNone);
    pag_.edge_instance.push_back(kNone);
    return static_cast<uint32_t>(pag_.node_ts.size() - 1);
  }

  uint32_t emit_edge(int64_t ts, uint8_t type, uint32_t op, uint32_t instance) {
    pag_.edge_type[prev_] = type;
    pag_.edge_op[prev_] = op;
    pag_.edge_instance[prev_] = instance;
    return emit(ts);
  }

  void set_prev(uint32_t node, const NodeContent& b) {
    prev_ = node;
    prev_has_send_ = b.has_send;
    prev_has_recv_ = b.has_recv;
    prev_has_local_ = b.has_local;
  }

  static int first_unmatched_end(const NodeContent& b) {
    for (int a = 0; a < kActivityTypeCount; ++a)
      if (b.ends[a] > b.starts[a]) return a;
    return -1;
  }

  // Applies the node's ends and starts to the open-activity state.
  void apply(const NodeContent& node, bool end_typed_gap) {
    auto ends = node.ends;
    auto starts = node.starts;
    if (open_ && ends[open_type_] > 0) {
      --ends[open_type_];
      open_ = false;
    }
    // A start and an end of one type at one node: a zero-duration activity.
    for (int a = 0; a < kActivityTypeCount; ++a) {
      uint16_t m = std::min(ends[a], starts[a]);
      ends[a] -= m;
      starts[a] -= m;
    }
    int remaining_ends = 0;
    for (uint16_t c : ends) remaining_ends += c;
    if (remaining_ends > 0) {
      if (open_) {
        issues_.push_back({node.ts, Issue::mismatched_end});
        open_ = false;
        --remaining_ends;
      }
      for (int i = 0; i < remaining_ends; ++i)
        issues_.push_back({node.ts, Issue::end_without_start});
      (void)end_typed_gap;
    }
    int chosen = -1;
    for (int a = 0; a < kActivityTypeCount; ++a) {
      for (int i = 0; i < starts[a]; ++i) {
        if (open_ || chosen >= 0) issues_.push_back({node.ts, Issue::overlapping_activity});
        open_ = false;
        if (chosen < 0) chosen = a;
      }
    }
    if (chosen >= 0) {
      open_ = true;
      open_type_ = static_cast<uint8_t>(chosen);
      open_op_ = node.start_op[chosen];
      open_instance_ = prev_;
    }
  }

  Pag& pag_;
  std::vector<IssueAt>& issues_;
  int64_t h_;
  uint32_t prev_ = kNone;  // last node of this worker
  bool prev_has_send_ = false, prev_has_recv_ = false, prev_has_local_ = false;
  bool open_ = false;
  uint8_t open_type_ = 0;
  uint32_t open_op_ = kNone;
  uint32_t open_instance_ = kNone;
};

void match_messages(Pag& pag, std::vector<HalfEdge>& half, std::vector<IssueAt>& issues) {
  std::sort(half.begin(), half.end(), [](const HalfEdge& a, const HalfEdge& b) {
    if (a.sender != b.sender) return a.sender < b.sender;
    if (a.receiver != b.receiver) return a.receiver < b.receiver;
    if (a.correlator != b.correlator) return a.correlator < b.correlator;
    if (a.kind != b.kind) return a.kind < b.kind;  // sends before receives
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.node < b.node;
  });
  size_t i = 0;
  while (i < half.size()) {
    size_t j = i;
    while (j < half.size() && half[j].sender == half[i].sender &&
           half[j].receiver == half[i].receiver && half[j].correlator == half[i].correlator)
      ++j;
    size_t sends_end = i;
    while (sends_end < j && half[sends_end].kind == EventKind::send) ++sends_end;
    size_t n_send = sends_end - i, n_recv = j - sends_end;
    if (n_send > 1 || n_recv > 1)
      for (size_t k = i; k < j; ++k)
        if ((half[k].kind == EventKind::send && n_send > 1) ||
            (half[k].kind == EventKind::recv && n_recv > 1))
          issues.push_back({half[k].ts, Issue::duplicate_correlator});
    // Pair the k-th send with the k-th receive in time order.
    size_t pairs = std::min(n_send, n_recv);
    for (size_t k = 0; k < pairs; ++k) {
      const HalfEdge& s = half[i + k];
      const HalfEdge& r = half[sends_end + k];
      int64_t s_ts = pag.node_ts[s.node];
      int64_t r_ts = pag.node_ts[r.node];
      if (r_ts < s_ts) {
        issues.push_back({s.ts, Issue::negative_duration_message});
      } else if (s.node == r.node) {
        issues.push_back({s.ts, Issue::self_loop_message});
      } else {
        pag.messages.push_back({s.node, r.node, s_ts, r_ts, s.worker, r.worker, s.type});
      }
    }
    for (size_t k = pairs; k < n_send; ++k)
      issues.push_back({half[i + k].ts, Issue::unmatched_send});
    for (size_t k = pairs; k < n_recv; ++k)
      issues.push_back({half[sends_end + k].ts, Issue::unmatched_recv});
    i = j;
  }
  std::sort(pag.messages.begin(), pag.messages.end(), [](const Message& a, const Message& b) {
    if (a.src_ts != b.src_ts) return a.src_ts < b.src_ts;
    if (a.dst_ts != b.dst_ts) return a.dst_ts < b.dst_ts;
    if (a.src_node != b.src_node) return a.src_node < b.src_node;
    return a.dst_node < b.dst_node;
  });
}

}  // namespace

Pag build_pag(const Trace& trace, const PagOptions& options) {
  Pag pag;
  const std::vector<Event>& events = trace.events;
  if (events.size() >= kNone) throw TraceError(trace.source, "input", "too many events");
  WorkerIndex index(events);
  pag.worker_ids = index.ids;
  const size_t W = index.ids.size();

  // Stable counting sort of event indices by worker.
  std::vector<uint32_t> dense(events.size());
  std::vector<uint32_t> begin(W + 1, 0);
  for (size_t i = 0; i < events.size(); ++i) {
    dense[i] = index(events[i].worker);
    ++begin[dense[i] + 1];
  }
  for (size_t w = 0; w < W; ++w) begin[w + 1] += begin[w];
  std::vector<uint32_t> order(events.size());
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < events.size(); ++i) order[fill[dense[i]]++] = static_cast<uint32_t>(i);
  }

  pag.node_ts.reserve(events.size());
  pag.edge_type.reserve(events.size());
  pag.edge_op.reserve(events.size());
  pag.edge_instance.reserve(events.size());
  pag.worker_begin.assign(W + 1, 0);
  std::vector<HalfEdge> half;
  std::vector<IssueAt> issues;
  NodeContent content;

  for (size_t w = 0; w < W; ++w) {
    pag.worker_begin[w] = static_cast<uint32_t>(pag.node_ts.size());
    TimelineBuilder builder(pag, issues, options);
    size_t k = begin[w];
    const size_t k_end = begin[w + 1];
    while (k < k_end) {
      const int64_t t = events[order[k]].ts;
      size_t g = k;
      content.reset(t);
      for (; g < k_end && events[order[g]].ts == t; ++g) content.add(events[order[g]]);
      if (g < k_end && events[order[g]].ts < t) {
        const Event& bad = events[order[g]];
        throw TraceError(trace.location(order[g]), "order",
                         fmt::format("events of worker {} go back in time: ts {} after {} ({})",
                                     bad.worker, bad.ts, t, trace.location(order[g - 1])));
      }
      uint32_t node = builder.add(content);
      for (size_t q = k; q < g; ++q) {
        const Event& e = events[order[q]];
        if (!e.is_message()) continue;
        if (!e.has(kHasCorrelator) || !e.has(kHasRemote)) {
          issues.push_back({e.ts, Issue::message_without_correlator});
          continue;
        }
        bool send = e.kind == EventKind::send;
        half.push_back({send ? e.worker : e.remote, send ? e.remote : e.worker, e.correlator, e.ts,
                        node, static_cast<uint32_t>(w), e.kind, e.activity});
      }
      k = g;
    }
    builder.finish();
  }
  pag.worker_begin[W] = static_cast<uint32_t>(pag.node_ts.size());

  match_messages(pag, half, issues);
  std::sort(issues.begin(), issues.end(), [](const IssueAt& a, const IssueAt& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.issue < b.issue;
  });
  pag.issues = std::move(issues);

  pag.event_ts.resize(events.size());
  for (size_t i = 0; i < events.size(); ++i) pag.event_ts[i] = events[i].ts;
  std::sort(pag.event_ts.begin(), pag.event_ts.end());
  if (!events.empty()) {
    pag.first_ts = pag.event_ts.front();
    pag.last_ts = pag.event_ts.back();
  }
  return pag;
}

}  // namespace snailtrail
