#include "pag/streaming.hpp"

#include <algorithm>
#include <tuple>

#include "pag/snapshot.hpp"

namespace snailtrail {

size_t StreamingPag::KeyHash::operator()(const Key& k) const {
  uint64_t h = (uint64_t{k.sender} << 32 | k.receiver) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(k.correlator) * 0xc2b2ae3d27d4eb4fULL;
  h ^= h >> 29;
  return static_cast<size_t>(h * 0x165667b19e3779f9ULL);
}

uint32_t StreamingPag::index_of(uint32_t id) {
  if (id < dense_.size() && dense_[id] != kNone) return dense_[id];
  auto [it, inserted] = index_.try_emplace(id, static_cast<uint32_t>(workers_.size()));
  if (inserted) {
    workers_.emplace_back();
    workers_.back().id = id;
    if (id < kDenseIds) {
      if (id >= dense_.size()) dense_.resize(id + 1, kNone);
      dense_[id] = it->second;
    }
  }
  return it->second;
}

const StreamingPag::Worker* StreamingPag::find(uint32_t id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &workers_[it->second];
}

StreamingPag::Added StreamingPag::add(const Event& e) {
  if (e.ts < horizon_) return Added::before_horizon;
  const uint32_t wi = index_of(e.worker);
  Worker& w = workers_[wi];
  if (w.finished) return Added::out_of_order;
  if (w.pending.empty || e.ts != w.pending.ts) {
    if (!w.pending.empty) {
      if (e.ts < w.pending.ts) return Added::out_of_order;
      flush_pending(w);
    } else if (!w.builder.empty() && e.ts <= w.node_ts[w.builder.last_node()]) {
      // The worker's last node was closed by flush(): nothing may join or precede it.
      return Added::out_of_order;
    }
    w.pending.reset(e.ts);
  }
  w.pending.add(e);
  if (e.is_message()) w.pending_messages.push_back(e);
  if (times_needed_)
    keep_event_time(w, e.ts);
  else
    w.event_ts.push_back(e.ts);
  w.watermark = e.ts;
  if (e.has(kHasOperator)) {
    auto pos = std::lower_bound(operator_ids_.begin(), operator_ids_.end(), e.op);
    if (pos == operator_ids_.end() || *pos != e.op) operator_ids_.insert(pos, e.op);
  }
  ++events_;
  first_ts_ = std::min(first_ts_, e.ts);
  last_ts_ = std::max(last_ts_, e.ts);
  return Added::ok;
}

// The worker's events come in time order: its first event in each window decides whether
// the window's event times are retained.
void StreamingPag::keep_event_time(Worker& w, int64_t ts) {
  if (ts >= w.times_end) {
    const int64_t k = windowing::window_of(ts, 0, times_width_);
    const int64_t next = windowing::border(0, k + 1, times_width_);
    w.times_end = next > ts ? next : INT64_MAX;  // the last window of the time range
    w.times_sparse = !times_needed_(k);
  } else if (w.times_sparse) {
    // Events on the window's start, like its first one, also belong to the window before
    // when that is the last one (closed at its end): kept whole if it is needed.
    if (w.event_ts.empty() || ts != w.event_ts.back()) return;
    const int64_t k = windowing::window_of(ts, 0, times_width_);
    if (ts != windowing::border(0, k, times_width_) || k == INT64_MIN || !times_needed_(k - 1))
      return;
  }
  w.event_ts.push_back(ts);
}

void StreamingPag::flush_pending(Worker& w) {
  // The builder writes at most one new node: make room for it, then trim.
  const size_t n = w.builder.count();
  w.node_ts.push_back(0);
  w.type.push_back(0);
  w.op.push_back(0);
  w.instance.push_back(0);
  const detail::NodeSlots slots{w.node_ts.data(), w.type.data(), w.op.data(), w.instance.data()};
  const uint32_t node = w.builder.add(w.pending, slots, issues_, gap_threshold_);
  if (w.builder.count() == n) {  // no new node (the slot was not used)
    w.node_ts.pop_back();
    w.type.pop_back();
    w.op.pop_back();
    w.instance.pop_back();
  }
  const uint32_t wi = static_cast<uint32_t>(&w - workers_.data());
  for (const Event& e : w.pending_messages) on_half(e, wi, w.base + node);
  w.pending_messages.clear();
  w.pending.empty = true;
}

void StreamingPag::on_half(const Event& e, uint32_t worker, uint64_t node) {
  if (!e.has(kHasCorrelator) || !e.has(kHasRemote)) {
    issues_.push_back({e.ts, Issue::message_without_correlator});
    return;
  }
  const bool is_send = e.kind == EventKind::send;
  const Key key =
      is_send ? Key{e.worker, e.remote, e.correlator} : Key{e.remote, e.worker, e.correlator};
  const Half half{e.ts, worker, node, e.activity};
  if (unique_correlators_) {
    // The partner, if it came first, waits in open_; else this half waits there.
    Half other{};
    if (!open_.match_or_wait(key, is_send, half, other)) return;
    if (is_send)
      pair(half, other);
    else
      pair(other, half);
    return;
  }
  Half partner{};
  if (!keys_.add(key, is_send, half, issues_, partner)) return;
  if (is_send)
    pair(half, partner);
  else
    pair(partner, half);
}

void StreamingPag::pair(const Half& s, const Half& r) {
  // Message nodes never move, so the nodes' times are the events' times.
  if (r.ts < s.ts)
    issues_.push_back({s.ts, Issue::negative_duration_message});
  else if (s.worker == r.worker && s.node == r.node)
    issues_.push_back({s.ts, Issue::self_loop_message});
  else if (needed_ && !needed_(s.ts, r.ts))
    ++dropped_messages_;
  else
    messages_.push_back({s.ts, r.ts, s.worker, r.worker, s.node, r.node, s.type});
}

bool StreamingPag::complete_before(uint32_t worker_id, int64_t end) const {
  const Worker* w = find(worker_id);
  if (!w || w->builder.empty()) return false;
  // Nodes before the last closed one are final; the last one only moves later in time.
  return w->node_ts[w->builder.last_node()] >= end;
}

void StreamingPag::flush(uint32_t worker_id) {
  auto it = index_.find(worker_id);
  if (it == index_.end()) return;
  Worker& w = workers_[it->second];
  if (!w.pending.empty) flush_pending(w);
}

void StreamingPag::flush_all() {
  for (Worker& w : workers_)
    if (!w.pending.empty) flush_pending(w);
}

size_t StreamingPag::finish() {
  const size_t before = issues_.size();
  for (Worker& w : workers_) {
    if (!w.pending.empty) flush_pending(w);
    if (w.builder.empty()) continue;
    const detail::NodeSlots slots{w.node_ts.data(), w.type.data(), w.op.data(), w.instance.data()};
    w.builder.finish(slots, issues_);
  }
  // An activity whose worker went quiet before windows already cut (a producer cut off)
  // is reported at the horizon: in the first window still to be cut, not lost.
  for (size_t i = before; i < issues_.size(); ++i)
    issues_[i].ts = std::max(issues_[i].ts, horizon_);
  return issues_.size() - before;
}

void StreamingPag::declare_operator(uint32_t op) {
  auto pos = std::lower_bound(operator_ids_.begin(), operator_ids_.end(), op);
  if (pos == operator_ids_.end() || *pos != op) operator_ids_.insert(pos, op);
}

void StreamingPag::flush_before(int64_t t) {
  for (Worker& w : workers_)
    if (!w.pending.empty && w.pending.ts < t) flush_pending(w);
}

void StreamingPag::finish_worker(uint32_t worker_id) {
  auto it = index_.find(worker_id);
  if (it == index_.end()) return;
  Worker& w = workers_[it->second];
  if (w.finished) return;
  w.finished = true;
  if (!w.pending.empty) flush_pending(w);
  if (w.builder.empty()) return;
  const detail::NodeSlots slots{w.node_ts.data(), w.type.data(), w.op.data(), w.instance.data()};
  w.builder.finish(slots, issues_);
}

int64_t StreamingPag::last_node_ts(uint32_t worker_id) const {
  const Worker* w = find(worker_id);
  if (!w || w->builder.empty()) return INT64_MIN;
  return w->node_ts[w->builder.last_node()];
}

int64_t StreamingPag::watermark(uint32_t worker_id) const {
  const Worker* w = find(worker_id);
  return w ? w->watermark : INT64_MIN;
}

std::vector<uint32_t> StreamingPag::worker_ids() const {
  std::vector<uint32_t> ids;
  ids.reserve(workers_.size());
  for (const Worker& w : workers_) ids.push_back(w.id);
  return ids;
}

size_t StreamingPag::retained_event_times() const {
  size_t n = 0;
  for (const Worker& w : workers_) n += w.event_ts.size();
  return n;
}

size_t StreamingPag::retained_nodes() const {
  size_t n = 0;
  for (const Worker& w : workers_) n += w.node_ts.size();
  return n;
}

// Where each worker's retained nodes went in a cut (indexed like workers_).
struct StreamingPag::CutLayout {
  std::vector<uint32_t> slice_of;             // dense worker index in the cut
  std::vector<uint64_t> first_abs, last_abs;  // retained absolute node range in the cut
  std::vector<uint32_t> node_base;            // the cut's node of first_abs
};

Pag StreamingPag::cut(int64_t start, int64_t end, bool closed_end, bool expire) {
  if (expire) expire_halves(end, closed_end);
  Pag pag;
  CutLayout layout;
  cut_timelines(start, end, closed_end, pag, layout);
  cut_messages(start, end, pag, layout);
  finish_cut(start, end, closed_end, pag);
  return pag;
}

void StreamingPag::finish_cut(int64_t start, int64_t end, bool closed_end, Pag& pag) const {
  auto before_end = [&](int64_t t) { return t < end || (closed_end && t == end); };
  for (const IssueAt& is : issues_)
    if (is.ts >= start && before_end(is.ts)) pag.issues.push_back(is);
  std::stable_sort(pag.issues.begin(), pag.issues.end(), [](const IssueAt& a, const IssueAt& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.issue < b.issue;
  });
  pag.operator_ids = operator_ids_;
  pag.first_ts = start;
  pag.last_ts = end;
}

Pag StreamingPag::cut_events(int64_t start, int64_t end, bool closed_end, int64_t width) const {
  auto before_end = [&](int64_t t) { return t < end || (closed_end && t == end); };
  std::vector<uint32_t> order(workers_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return workers_[a].id < workers_[b].id; });
  Pag pag;
  pag.event_begin.push_back(0);
  for (uint32_t wi : order) {
    const Worker& w = workers_[wi];
    pag.worker_ids.push_back(w.id);
    // One binary search per window with events: O(windows), not O(events).
    auto it = std::lower_bound(w.event_ts.begin(), w.event_ts.end(), start);
    while (it != w.event_ts.end() && before_end(*it)) {
      pag.event_ts.push_back(*it);
      const int64_t next = windowing::border(0, windowing::window_of(*it, 0, width) + 1, width);
      if (next <= *it) break;  // the last window of the time range
      it = std::lower_bound(it, w.event_ts.end(), next);
    }
    pag.event_begin.push_back(static_cast<uint32_t>(pag.event_ts.size()));
  }
  pag.first_ts = start;
  pag.last_ts = end;
  return pag;
}

void StreamingPag::expire_halves(int64_t end, bool closed_end) {
  auto before_end = [&](int64_t t) { return t < end || (closed_end && t == end); };
  // Partners can no longer arrive for half messages in these windows.
  keys_.expire(end, closed_end, issues_);
  open_.remove_if([&](const Half& h, bool is_send) {
    if (!before_end(h.ts)) return false;
    issues_.push_back({h.ts, is_send ? Issue::unmatched_send : Issue::unmatched_recv});
    return true;
  });
}

std::pair<size_t, size_t> StreamingPag::node_range(const Worker& w, int64_t start, int64_t end) {
  // From the last node at or before `start` to the first one at or after `end`.
  const size_t n = w.node_ts.size();
  if (n == 0) return {0, 0};
  size_t lo = static_cast<size_t>(std::upper_bound(w.node_ts.begin(), w.node_ts.end(), start) -
                                  w.node_ts.begin());
  lo = lo > 0 ? lo - 1 : 0;
  const size_t hi = static_cast<size_t>(std::lower_bound(w.node_ts.begin(), w.node_ts.end(), end) -
                                        w.node_ts.begin());
  return {lo, std::min(hi + 1, n)};
}

void StreamingPag::append_nodes(const Worker& w, size_t lo, size_t hi, Pag& pag) {
  if (hi <= lo) return;
  const uint32_t base = static_cast<uint32_t>(pag.node_ts.size());
  // Copied range by range (the last node has no edge): no push_back per node.
  pag.node_ts.insert(pag.node_ts.end(), w.node_ts.begin() + lo, w.node_ts.begin() + hi);
  pag.edge_type.insert(pag.edge_type.end(), w.type.begin() + lo, w.type.begin() + hi - 1);
  pag.edge_type.push_back(kNoEdge);
  pag.edge_op.insert(pag.edge_op.end(), w.op.begin() + lo, w.op.begin() + hi - 1);
  pag.edge_op.push_back(kNone);
  // Instances only need to compare equal within the worker: shift them like the nodes.
  const size_t at = pag.edge_instance.size();
  pag.edge_instance.insert(pag.edge_instance.end(), w.instance.begin() + lo,
                           w.instance.begin() + hi - 1);
  for (size_t x = at; x < pag.edge_instance.size(); ++x)
    pag.edge_instance[x] = pag.edge_instance[x] - static_cast<uint32_t>(lo) + base;
  pag.edge_instance.push_back(kNone);
}

void StreamingPag::cut_timelines(int64_t start, int64_t end, bool closed_end, Pag& pag,
                                 CutLayout& layout) const {
  // Workers in ascending id order, as in the batch PAG.
  std::vector<uint32_t> order(workers_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return workers_[a].id < workers_[b].id; });
  const size_t W = order.size();
  std::vector<uint32_t>& slice_of = layout.slice_of;
  std::vector<uint64_t>& first_abs = layout.first_abs;
  std::vector<uint64_t>& last_abs = layout.last_abs;
  std::vector<uint32_t>& node_base = layout.node_base;
  slice_of.assign(W, kNone);
  first_abs.resize(W);
  last_abs.resize(W);
  node_base.resize(W);
  pag.worker_begin.push_back(0);
  pag.event_begin.push_back(0);
  for (uint32_t wi : order) {
    const Worker& w = workers_[wi];
    const uint32_t d = static_cast<uint32_t>(pag.worker_ids.size());
    slice_of[wi] = d;
    pag.worker_ids.push_back(w.id);
    const auto [lo, hi] = node_range(w, start, end);
    const uint32_t base = static_cast<uint32_t>(pag.node_ts.size());
    node_base[wi] = base;
    first_abs[wi] = w.base + lo;
    last_abs[wi] = w.base + hi;  // one past
    append_nodes(w, lo, hi, pag);
    pag.worker_begin.push_back(static_cast<uint32_t>(pag.node_ts.size()));
    const auto from = std::lower_bound(w.event_ts.begin(), w.event_ts.end(), start);
    const auto to = closed_end ? std::upper_bound(from, w.event_ts.end(), end)
                               : std::lower_bound(from, w.event_ts.end(), end);
    pag.event_ts.insert(pag.event_ts.end(), from, to);
    pag.event_begin.push_back(static_cast<uint32_t>(pag.event_ts.size()));
  }
}

void StreamingPag::cut_messages(int64_t start, int64_t end, Pag& pag,
                                const CutLayout& layout) const {
  // Messages overlapping the range, ordered as the batch builder orders them: by send
  // time, then receive time, then nodes (worker id, then position), then type.
  std::vector<uint32_t> picked;
  for (uint32_t i = 0; i < messages_.size(); ++i) {
    const Matched& m = messages_[i];
    if (m.src_ts > end || m.dst_ts < start) continue;
    picked.push_back(i);
  }
  auto key = [&](const Matched& m) {
    return std::make_tuple(m.src_ts, m.dst_ts, workers_[m.src_worker].id, m.src_node,
                           workers_[m.dst_worker].id, m.dst_node, m.type);
  };
  std::sort(picked.begin(), picked.end(),
            [&](uint32_t a, uint32_t b) { return key(messages_[a]) < key(messages_[b]); });
  auto node_in_cut = [&](uint32_t wi, uint64_t abs) -> uint32_t {
    if (abs < layout.first_abs[wi] || abs >= layout.last_abs[wi])
      return kNone;  // clipped: never used
    return layout.node_base[wi] + static_cast<uint32_t>(abs - layout.first_abs[wi]);
  };
  pag.messages.reserve(picked.size());
  for (uint32_t i : picked) {
    const Matched& m = messages_[i];
    pag.messages.push_back({node_in_cut(m.src_worker, m.src_node),
                            node_in_cut(m.dst_worker, m.dst_node), m.src_ts, m.dst_ts,
                            layout.slice_of[m.src_worker], layout.slice_of[m.dst_worker], m.type});
  }
}

void StreamingPag::retire(int64_t horizon) {
  horizon_ = std::max(horizon_, horizon);
  for (Worker& w : workers_) {
    // Keep the last node at or before the horizon: the edge leaving it may overlap.
    size_t keep = static_cast<size_t>(
        std::upper_bound(w.node_ts.begin(), w.node_ts.end(), horizon_) - w.node_ts.begin());
    keep = keep > 0 ? keep - 1 : 0;
    if (keep > 0) {
      const auto k = static_cast<std::ptrdiff_t>(keep);
      w.node_ts.erase(w.node_ts.begin(), w.node_ts.begin() + k);
      w.type.erase(w.type.begin(), w.type.begin() + k);
      w.op.erase(w.op.begin(), w.op.begin() + k);
      w.instance.erase(w.instance.begin(), w.instance.begin() + k);
      for (uint32_t& inst : w.instance) inst -= static_cast<uint32_t>(keep);
      w.builder.rebase(static_cast<uint32_t>(keep));
      w.base += keep;
    }
    const size_t old_events = static_cast<size_t>(
        std::lower_bound(w.event_ts.begin(), w.event_ts.end(), horizon_) - w.event_ts.begin());
    w.event_ts.erase(w.event_ts.begin(),
                     w.event_ts.begin() + static_cast<std::ptrdiff_t>(old_events));
  }
  std::erase_if(messages_, [&](const Matched& m) { return m.dst_ts < horizon_; });
  std::erase_if(issues_, [&](const IssueAt& is) { return is.ts < horizon_; });
  keys_.retire(horizon_);
}

}  // namespace snailtrail

namespace snailtrail {

void StreamingPag::reserve_worker(uint32_t worker_id, size_t events) {
  Worker& w = workers_[index_of(worker_id)];
  w.event_ts.reserve(events);
  // A node per distinct timestamp at most, and one more slot while a node is added.
  w.node_ts.reserve(events + 1);
  w.type.reserve(events + 1);
  w.op.reserve(events + 1);
  w.instance.reserve(events + 1);
}

Pag StreamingPag::take(int64_t start, int64_t end, bool closed_end) {
  expire_halves(end, closed_end);
  Pag pag;
  CutLayout layout;
  take_timelines(start, end, closed_end, pag, layout);
  take_messages(start, end, pag, layout);
  finish_cut(start, end, closed_end, pag);
  std::vector<IssueAt>().swap(issues_);
  return pag;
}

void StreamingPag::take_timelines(int64_t start, int64_t end, bool closed_end, Pag& pag,
                                  CutLayout& layout) {
  // As cut_timelines: workers in ascending id order; each worker's nodes from the last one
  // at or before `start` to the first one at or after `end`, its events in the range.
  std::vector<uint32_t> order(workers_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return workers_[a].id < workers_[b].id; });
  const size_t W = order.size();
  struct Range {
    size_t lo, hi, ev_lo, ev_hi;
  };
  std::vector<Range> ranges(W);
  size_t nodes = 0, events = 0;
  for (uint32_t wi = 0; wi < W; ++wi) {
    const Worker& w = workers_[wi];
    const auto [lo, hi] = node_range(w, start, end);
    const auto from = std::lower_bound(w.event_ts.begin(), w.event_ts.end(), start);
    const auto to = closed_end ? std::upper_bound(from, w.event_ts.end(), end)
                               : std::lower_bound(from, w.event_ts.end(), end);
    ranges[wi] = {lo, hi, static_cast<size_t>(from - w.event_ts.begin()),
                  static_cast<size_t>(to - w.event_ts.begin())};
    nodes += hi - lo;
    events += ranges[wi].ev_hi - ranges[wi].ev_lo;
  }
  // The flat arrays are sized once; each worker's arrays are freed once copied.
  // (pre-faulted: one call each instead of a page fault per 4 KiB).
  big_memory::reserve_prefaulted(pag.node_ts, nodes);
  big_memory::reserve_prefaulted(pag.edge_type, nodes);
  big_memory::reserve_prefaulted(pag.edge_op, nodes);
  big_memory::reserve_prefaulted(pag.edge_instance, nodes);
  big_memory::reserve_prefaulted(pag.event_ts, events);
  layout.slice_of.assign(W, kNone);
  layout.first_abs.resize(W);
  layout.last_abs.resize(W);
  layout.node_base.resize(W);
  pag.worker_begin.push_back(0);
  pag.event_begin.push_back(0);
  for (uint32_t wi : order) {
    Worker& w = workers_[wi];
    const auto [lo, hi, ev_lo, ev_hi] = ranges[wi];
    layout.slice_of[wi] = static_cast<uint32_t>(pag.worker_ids.size());
    pag.worker_ids.push_back(w.id);
    const uint32_t base = static_cast<uint32_t>(pag.node_ts.size());
    layout.node_base[wi] = base;
    layout.first_abs[wi] = w.base + lo;
    layout.last_abs[wi] = w.base + hi;  // one past
    append_nodes(w, lo, hi, pag);
    pag.worker_begin.push_back(static_cast<uint32_t>(pag.node_ts.size()));
    pag.event_ts.insert(pag.event_ts.end(), w.event_ts.begin() + ev_lo, w.event_ts.begin() + ev_hi);
    pag.event_begin.push_back(static_cast<uint32_t>(pag.event_ts.size()));
    std::vector<int64_t>().swap(w.node_ts);
    std::vector<uint8_t>().swap(w.type);
    std::vector<uint32_t>().swap(w.op);
    std::vector<uint32_t>().swap(w.instance);
    std::vector<int64_t>().swap(w.event_ts);
  }
}

void StreamingPag::take_messages(int64_t start, int64_t end, Pag& pag, const CutLayout& layout) {
  // As cut_messages, sorting the matched messages themselves instead of their indices.
  std::erase_if(messages_, [&](const Matched& m) { return m.src_ts > end || m.dst_ts < start; });
  auto key = [&](const Matched& m) {
    return std::make_tuple(m.src_ts, m.dst_ts, workers_[m.src_worker].id, m.src_node,
                           workers_[m.dst_worker].id, m.dst_node, m.type);
  };
  std::sort(messages_.begin(), messages_.end(),
            [&](const Matched& a, const Matched& b) { return key(a) < key(b); });
  auto node_in_cut = [&](uint32_t wi, uint64_t abs) -> uint32_t {
    if (abs < layout.first_abs[wi] || abs >= layout.last_abs[wi])
      return kNone;  // clipped: never used
    return layout.node_base[wi] + static_cast<uint32_t>(abs - layout.first_abs[wi]);
  };
  big_memory::reserve_prefaulted(pag.messages, messages_.size());
  for (const Matched& m : messages_)
    pag.messages.push_back({node_in_cut(m.src_worker, m.src_node),
                            node_in_cut(m.dst_worker, m.dst_node), m.src_ts, m.dst_ts,
                            layout.slice_of[m.src_worker], layout.slice_of[m.dst_worker], m.type});
  std::vector<Matched>().swap(messages_);
}

}  // namespace snailtrail
