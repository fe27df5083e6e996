// Gap filling of one worker's timeline (docs/PAG.md §1-2), shared by the batch PAG
// builder (timeline.cpp) and the streaming one (streaming.cpp) so that both produce the
// same nodes and edges from the same events.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "pag/pag.hpp"

namespace snailtrail::detail {

// The events of one worker at one timestamp, as multisets (their order must not
// matter). Only the counters named in the masks are non-zero, so reset is cheap.
struct NodeContent {
  int64_t ts = 0;
  uint16_t start_mask = 0, end_mask = 0;
  bool has_send = false;
  bool has_recv = false;
  bool has_local = false;  // any start or end event
  bool empty = true;
  std::array<uint16_t, kActivityTypeCount> starts{};
  std::array<uint16_t, kActivityTypeCount> ends{};
  std::array<uint32_t, kActivityTypeCount> start_op{};  // smallest operator per started type
  std::array<uint32_t, kActivityTypeCount> end_op{};

  NodeContent() {
    start_op.fill(kNone);
    end_op.fill(kNone);
  }

  void reset(int64_t t) {
    for (uint16_t m = start_mask; m; m &= m - 1) {
      int a = __builtin_ctz(m);
      starts[a] = 0;
      start_op[a] = kNone;
    }
    for (uint16_t m = end_mask; m; m &= m - 1) {
      int a = __builtin_ctz(m);
      ends[a] = 0;
      end_op[a] = kNone;
    }
    start_mask = end_mask = 0;
    ts = t;
    has_send = has_recv = has_local = false;
    empty = false;
  }

  void add(const Event& e) {
    int a = static_cast<int>(e.activity);
    uint32_t op = e.has(kHasOperator) ? e.op : kNone;
    switch (e.kind) {
      case EventKind::start:
        ++starts[a];
        start_op[a] = std::min(start_op[a], op);
        start_mask |= static_cast<uint16_t>(1u << a);
        has_local = true;
        break;
      case EventKind::end:
        ++ends[a];
        end_op[a] = std::min(end_op[a], op);
        end_mask |= static_cast<uint16_t>(1u << a);
        has_local = true;
        break;
      case EventKind::send:
        has_send = true;
        break;
      case EventKind::recv:
        has_recv = true;
        break;
    }
  }

  bool has_message() const { return has_send || has_recv; }
};

// Node arrays of one worker: a window into the PAG's arrays, indices local to it.
struct NodeSlots {
  int64_t* ts;
  uint8_t* type;
  uint32_t* op;
  uint32_t* instance;
};

// Walks one worker's nodes and writes its gap-filled timeline (docs/PAG.md §1-2).
class TimelineBuilder {
 public:
  // Returns the local node index that holds `b`'s events.
  uint32_t add(const NodeContent& b, const NodeSlots& s, std::vector<IssueAt>& issues, int64_t h) {
    if (count_ == 0) {
      prev_ = emit(b.ts, s);
      set_prev_flags(b);
      apply(b, issues);
      return prev_;
    }
    if (open_) {
      uint32_t node = emit_edge(b.ts, open_type_, open_op_, open_instance_, s);
      set_prev_flags(b);
      apply(b, issues);
      return node;
    }
    // A gap: nothing was recorded between the previous node and this one.
    int unmatched_end = first_unmatched_end(b);
    if (unmatched_end >= 0) {
      // An end without a start: assume the activity filled the gap.
      uint32_t node =
          emit_edge(b.ts, static_cast<uint8_t>(unmatched_end), b.end_op[unmatched_end], prev_, s);
      set_prev_flags(b);
      apply(b, issues);
      return node;
    }
    const bool a_message_only = !prev_has_local_;
    const bool b_message_only = b.has_message() && !b.has_local;
    uint8_t type;
    if (a_message_only && b_message_only) {
      // Between two message events the threshold does not apply.
      type = static_cast<uint8_t>(prev_has_send_ && b.has_recv ? ActivityType::waiting
                                                               : ActivityType::unknown);
    } else {
      const bool a_movable = !prev_has_send_ && !prev_has_recv_;
      const bool b_movable = !b.has_message();
      if (b.ts - s.ts[prev_] < h && (a_movable || b_movable)) {
        // Close the gap by alignment: a local side moves, message nodes never do.
        if (a_movable) s.ts[prev_] = b.ts;
        prev_has_send_ |= b.has_send;
        prev_has_recv_ |= b.has_recv;
        prev_has_local_ |= b.has_local;
        apply(b, issues);
        return prev_;
      }
      type = static_cast<uint8_t>(b.has_recv ? ActivityType::waiting : ActivityType::unknown);
    }
    uint32_t node = emit_edge(b.ts, type, kNone, prev_, s);
    set_prev_flags(b);
    apply(b, issues);
    return node;
  }

  void finish(const NodeSlots& s, std::vector<IssueAt>& issues) const {
    if (open_) issues.push_back({s.ts[prev_], Issue::unterminated_activity});
  }

  uint32_t count() const { return count_; }
  uint32_t last_node() const { return prev_; }
  bool empty() const { return count_ == 0; }

  // Streaming: the first `dropped` nodes were removed from the slots, so local indices
  // shift down. An open activity that began in a dropped node keeps a wrapped-around
  // instance index: instances are only compared with each other.
  void rebase(uint32_t dropped) {
    count_ -= dropped;
    prev_ -= dropped;
    open_instance_ -= dropped;
  }

 private:
  uint32_t emit(int64_t ts, const NodeSlots& s) {
    s.ts[count_] = ts;
    s.type[count_] = kNoEdge;
    s.op[count_] = kNone;
    s.instance[count_] = kNone;
    return count_++;
  }

  uint32_t emit_edge(int64_t ts, uint8_t type, uint32_t op, uint32_t instance, const NodeSlots& s) {
    s.type[prev_] = type;
    s.op[prev_] = op;
    s.instance[prev_] = instance;
    prev_ = emit(ts, s);
    return prev_;
  }

  void set_prev_flags(const NodeContent& b) {
    prev_has_send_ = b.has_send;
    prev_has_recv_ = b.has_recv;
    prev_has_local_ = b.has_local;
  }

  static int first_unmatched_end(const NodeContent& b) {
    for (uint16_t m = b.end_mask; m; m &= m - 1) {
      int a = __builtin_ctz(m);
      if (b.ends[a] > b.starts[a]) return a;
    }
    return -1;
  }

  // Applies the node's ends and starts to the open-activity state.
  void apply(const NodeContent& node, std::vector<IssueAt>& issues) {
    if ((node.start_mask | node.end_mask) == 0) return;
    std::array<uint16_t, kActivityTypeCount> ends = node.ends;
    std::array<uint16_t, kActivityTypeCount> starts = node.starts;
    if (open_ && ends[open_type_] > 0) {
      --ends[open_type_];
      open_ = false;
    }
    // A start and an end of one type at one node: a zero-duration activity.
    int remaining_ends = 0;
    for (uint16_t m = node.end_mask & node.start_mask; m; m &= m - 1) {
      int a = __builtin_ctz(m);
      uint16_t k = std::min(ends[a], starts[a]);
      ends[a] -= k;
      starts[a] -= k;
    }
    for (uint16_t m = node.end_mask; m; m &= m - 1) remaining_ends += ends[__builtin_ctz(m)];
    if (remaining_ends > 0) {
      if (open_) {
        issues.push_back({node.ts, Issue::mismatched_end});
        open_ = false;
        --remaining_ends;
      }
      for (int i = 0; i < remaining_ends; ++i)
        issues.push_back({node.ts, Issue::end_without_start});
    }
    int chosen = -1;
    for (uint16_t m = node.start_mask; m; m &= m - 1) {
      int a = __builtin_ctz(m);
      for (int i = 0; i < starts[a]; ++i) {
        if (open_ || chosen >= 0) issues.push_back({node.ts, Issue::overlapping_activity});
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

  uint32_t count_ = 0;
  uint32_t prev_ = 0;  // last node of this worker
  bool prev_has_send_ = false, prev_has_recv_ = false, prev_has_local_ = false;
  bool open_ = false;
  uint8_t open_type_ = 0;
  uint32_t open_op_ = kNone;
  uint32_t open_instance_ = kNone;
};

}  // namespace snailtrail::detail
