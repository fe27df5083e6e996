// Lane packing and per-lane timelines (slices.hpp).
#include "importers/common/slices.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

#include "trace/make_event.hpp"

namespace snailtrail::importers {

uint32_t Lanes::first_lane(uint32_t group) {
  if (group >= group_first.size()) group_first.resize(group + 1, kNoSlice);
  if (group_first[group] == kNoSlice) {
    group_first[group] = static_cast<uint32_t>(group_of.size());
    group_of.push_back(group);
    index_in_group.push_back(0);
    slices.emplace_back();
  }
  return group_first[group];
}

namespace {

// The order slices are placed in: by group, then start; at equal starts the longer (the
// parent) first, then the shallower.
std::vector<uint32_t> placement_order(const std::vector<Slice>& s) {
  std::vector<uint32_t> order(s.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Slice &x = s[a], &y = s[b];
    if (x.group != y.group) return x.group < y.group;
    if (x.start != y.start) return x.start < y.start;
    if (x.end != y.end) return x.end > y.end;
    if (x.depth != y.depth) return x.depth < y.depth;
    return a < b;
  });
  return order;
}

}  // namespace

Lanes assign_lanes(const std::vector<Slice>& s, uint32_t group_count, bool require_parent) {
  Lanes lanes;
  lanes.lane_of.assign(s.size(), kNoSlice);
  lanes.group_first.assign(group_count, kNoSlice);
  const std::vector<uint32_t> order = placement_order(s);
  // Per group: lanes in the order created, their stacks of open slices, lanes whose root
  // has ended (reusable, lowest index first) and busy lanes by root end.
  std::vector<std::vector<uint32_t>> stacks;
  using EndLane = std::pair<int64_t, uint32_t>;
  std::priority_queue<EndLane, std::vector<EndLane>, std::greater<>> busy;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> free_lanes;
  std::vector<uint32_t> group_lanes;  // global lane ids of the current group, by index
  constexpr size_t kScanLimit = 16;   // lanes tried for nesting before taking a free one
  uint32_t current_group = kNoSlice;
  for (uint32_t i : order) {
    const Slice& x = s[i];
    if (x.group != current_group) {
      current_group = x.group;
      busy = {};
      free_lanes = {};
      group_lanes.clear();
    }
    while (!busy.empty() && busy.top().first <= x.start) {
      const uint32_t local = busy.top().second;
      busy.pop();
      stacks[group_lanes[local]].clear();
      free_lanes.push(local);
    }
    auto fits_on = [&](uint32_t lane) {
      std::vector<uint32_t>& st = stacks[lane];
      while (!st.empty() && s[st.back()].end <= x.start && s[st.back()].end < x.end) st.pop_back();
      if (st.empty()) return false;
      const Slice& top = s[st.back()];
      if (top.end < x.end) return false;
      return !require_parent || st.back() == x.parent;
    };
    uint32_t lane = kNoSlice;
    if (require_parent) {
      if (x.parent != kNoSlice && s[x.parent].group == x.group &&
          lanes.lane_of[x.parent] != kNoSlice && fits_on(lanes.lane_of[x.parent]))
        lane = lanes.lane_of[x.parent];
    } else {
      for (size_t k = 0; k < group_lanes.size() && k < kScanLimit; ++k)
        if (fits_on(group_lanes[k])) {
          lane = group_lanes[k];
          break;
        }
    }
    if (lane == kNoSlice) {
      uint32_t local;
      if (!free_lanes.empty()) {
        local = free_lanes.top();
        free_lanes.pop();
      } else {
        local = static_cast<uint32_t>(group_lanes.size());
        const uint32_t global = static_cast<uint32_t>(lanes.group_of.size());
        group_lanes.push_back(global);
        lanes.group_of.push_back(x.group);
        lanes.index_in_group.push_back(local);
        lanes.slices.emplace_back();
        stacks.emplace_back();
        if (local == 0) lanes.group_first[x.group] = global;
      }
      lane = group_lanes[local];
      if (local > 0) ++lanes.moved;
      busy.push({x.end, local});
    }
    stacks[lane].push_back(i);
    lanes.lane_of[i] = lane;
    lanes.slices[lane].push_back(i);
  }
  return lanes;
}

void EventSink::segment(uint32_t worker, int64_t a, int64_t b, ActivityType type, uint32_t op) {
  if (a >= b) return;
  Event e = local_event(worker, a, type, EventKind::start);
  if (op != kNoOperator && type != ActivityType::waiting) set_operator(e, op);
  events_.push_back(e);
  e.ts = b;
  e.kind = EventKind::end;
  events_.push_back(e);
}

void EventSink::add_timelines(const std::vector<Slice>& s, const Lanes& lanes,
                              const std::vector<std::vector<std::pair<int64_t, int64_t>>>* waits,
                              GapsBetweenSlices gaps) {
  std::vector<size_t> wait_cursor(waits ? s.size() : 0, 0);
  // Emits slice x's own time in [a, b): its type, or waiting inside its wait intervals.
  auto emit = [&](uint32_t worker, uint32_t x, int64_t a, int64_t b) {
    if (!waits) return segment(worker, a, b, s[x].type, s[x].op);
    const auto& w = (*waits)[x];
    size_t& c = wait_cursor[x];
    while (a < b) {
      while (c < w.size() && w[c].second <= a) ++c;
      if (c < w.size() && w[c].first <= a) {
        const int64_t to = std::min(w[c].second, b);
        segment(worker, a, to, ActivityType::waiting, kNoOperator);
        a = to;
      } else {
        const int64_t to = c < w.size() ? std::min(w[c].first, b) : b;
        segment(worker, a, to, s[x].type, s[x].op);
        a = to;
      }
    }
  };
  std::vector<uint32_t> stack;
  for (uint32_t lane = 0; lane < lanes.slices.size(); ++lane) {
    stack.clear();
    int64_t cur = 0;
    // Closes the slices that end by t, emitting their remaining time, then runs the
    // innermost open one up to t.
    auto advance = [&](int64_t t) {
      while (!stack.empty()) {
        const uint32_t top = stack.back();
        if (s[top].end <= t) {
          emit(lane, top, cur, s[top].end);
          cur = std::max(cur, s[top].end);
          stack.pop_back();
        } else {
          emit(lane, top, cur, t);
          cur = t;
          break;
        }
      }
    };
    bool any = false;
    for (uint32_t x : lanes.slices[lane]) {
      advance(s[x].start);
      // Nothing open since the last top-level slice ended: the lane was idle.
      if (any && stack.empty() && gaps == GapsBetweenSlices::idle)
        segment(lane, cur, s[x].start, ActivityType::waiting, kNoOperator);
      any = true;
      stack.push_back(x);
      cur = s[x].start;
    }
    advance(INT64_MAX);
  }
}

void EventSink::add_message(uint32_t from, int64_t send_ts, uint32_t to, int64_t recv_ts,
                            ActivityType type) {
  Event e = message_event(from, send_ts, type, EventKind::send, to, next_correlator_++);
  events_.push_back(e);
  e.ts = recv_ts;
  e.worker = to;
  e.remote = from;
  e.kind = EventKind::recv;
  events_.push_back(e);
}

void EventSink::finish(Trace& trace) {
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.worker < b.worker;
  });
  trace.events.resize(events_.size());
  std::copy(events_.begin(), events_.end(), trace.events.begin());
  events_.clear();
  events_.shrink_to_fit();
}

}  // namespace snailtrail::importers
