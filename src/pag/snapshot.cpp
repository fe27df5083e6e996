#include "pag/snapshot.hpp"

#include <algorithm>

namespace snailtrail {

int64_t windowing::floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

int64_t windowing::border(int64_t origin, int64_t k, int64_t w) {
  const __int128 t = static_cast<__int128>(origin) + static_cast<__int128>(k) * w;
  if (t > INT64_MAX) return INT64_MAX;
  if (t < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(t);
}

int64_t windowing::window_of(int64_t t, int64_t origin, int64_t w) {
  int64_t d;
  if (!__builtin_sub_overflow(t, origin, &d)) return floor_div(d, w);
  const __int128 x = static_cast<__int128>(t) - origin;
  return static_cast<int64_t>(x / w - ((x % w != 0) && x < 0));
}

int64_t windowing::last_window(int64_t k0, int64_t hi, int64_t origin, int64_t w) {
  const int64_t k1 = window_of(hi, origin, w);
  return k1 > k0 && border(origin, k1, w) == hi ? k1 - 1 : k1;
}

using namespace windowing;

std::vector<Window> plan_window_range(const Pag& pag, int64_t origin, int64_t w, int64_t k0,
                                      int64_t k1, bool last_closed, std::optional<int64_t> to,
                                      uint64_t& empty_before) {
  std::vector<Window> windows;
  if (k1 < k0) return windows;
  auto window = [&](int64_t k) {
    Window x{border(origin, k, w), border(origin, k + 1, w), last_closed && k == k1};
    if (to && x.end > *to) x.end = *to;
    return x;
  };
  // The windows that hold events: each worker's events are in time order, so one binary
  // search per such window and worker finds them. O(windows with events * log).
  const Window last = window(k1);
  const int64_t lo = border(origin, k0, w);
  std::vector<int64_t> busy;
  for (size_t wk = 0; wk + 1 < pag.event_begin.size(); ++wk) {
    const auto first = pag.event_ts.begin() + pag.event_begin[wk];
    const auto end = pag.event_ts.begin() + pag.event_begin[wk + 1];
    for (auto it = std::lower_bound(first, end, lo); it != end;) {
      const int64_t t = *it;
      if (t > last.end || (t == last.end && !last.closed_end)) break;
      const int64_t k =
          std::min(window_of(t, origin, w), k1);  // an event at the closed end of the last window
      if (busy.empty() || busy.back() != k) busy.push_back(k);
      if (k == k1) break;
      it = std::lower_bound(it, end, border(origin, k + 1, w));
    }
  }
  std::sort(busy.begin(), busy.end());
  busy.erase(std::unique(busy.begin(), busy.end()), busy.end());
  // Walk the windows, jumping over runs: window k is analyzed unless it has no events and
  // neither have the kEmptyWindowsAnalyzed windows before it.
  size_t b = 0;
  int64_t k = k0;
  for (;;) {
    const bool has = b < busy.size() && busy[b] == k;
    if (has || empty_before < kEmptyWindowsAnalyzed) {
      windows.push_back(window(k));
      empty_before = has ? 0 : empty_before + 1;
      if (has) ++b;
      if (k == k1) break;
      ++k;
      continue;
    }
    // A run from k to the next window with events (exclusive) or to k1 (inclusive).
    const int64_t run_last = b < busy.size() ? busy[b] - 1 : k1;
    Window run = window(k);
    run.end = window(run_last).end;
    run.closed_end = false;
    run.empty_run = static_cast<uint64_t>(static_cast<__int128>(run_last) - k + 1);
    windows.push_back(run);
    if (run_last == k1) break;
    k = run_last + 1;
  }
  return windows;
}

std::vector<Window> plan_windows(const Pag& pag, const WindowSpec& spec) {
  std::vector<Window> windows;
  if (pag.event_ts.empty()) return windows;
  // Every message ends at a receive event, whose node never moves: last_ts covers it.
  int64_t lo = pag.first_ts, hi = pag.last_ts;
  if (spec.from_ns) lo = std::max(lo, *spec.from_ns);
  if (spec.to_ns) hi = std::min(hi, *spec.to_ns);
  if (hi < lo) return windows;
  if (spec.width_ns <= 0) {
    windows.push_back({lo, hi, true});
    return windows;
  }
  const int64_t w = spec.width_ns;
  const int64_t origin = spec.from_ns.value_or(0);
  const int64_t k0 = window_of(lo, origin, w);
  const int64_t k1 = last_window(k0, hi, origin, w);
  uint64_t empty_before = 0;
  return plan_window_range(pag, origin, w, k0, k1, true, spec.to_ns, empty_before);
}

Snapshotter::Snapshotter(const Pag& pag)
    : pag_(pag), cursor_(pag.worker_begin), event_cursor_(pag.event_begin) {
  if (!cursor_.empty()) cursor_.pop_back();
  if (!event_cursor_.empty()) event_cursor_.pop_back();
}

void Snapshotter::build(const Window& win, Snapshot& out) {
  count_only(win, out);
  extras_.clear();
  static thread_local std::vector<Range> ranges;
  cut_timelines(win, out, ranges);
  cut_messages(win, out, ranges);
  add_extra_nodes(out);
}

uint32_t Snapshotter::scan(const Window& win, std::vector<Range>& ranges,
                           std::vector<uint32_t>& messages) {
  size_t timeline_edges = 0;
  const uint32_t nodes = find_ranges(win, ranges, timeline_edges);
  select_messages(win, messages);
  return nodes;
}

void Snapshotter::count_only(const Window& win, Snapshot& out) {
  out.window = win;
  out.ts.clear();
  out.worker.clear();
  out.edge.clear();
  out.type.clear();
  out.msg_src.clear();
  out.msg_dst.clear();
  out.msg_index.clear();
  out.msg_mult.clear();
  out.timeline_edges = 0;
  out.merged_pieces = 0;
  count_events(win, out);
}

// Raw events in [ts, te) or [ts, te], counted per worker (each in time order).
void Snapshotter::count_events(const Window& win, Snapshot& out) {
  const int64_t ts = win.start, te = win.end;
  const auto& ev = pag_.event_ts;
  out.events = 0;
  for (size_t w = 0; w + 1 < pag_.event_begin.size(); ++w) {
    uint32_t& c = event_cursor_[w];
    const auto first = ev.begin() + c, last = ev.begin() + pag_.event_begin[w + 1];
    const auto from = std::lower_bound(first, last, ts);
    const auto to =
        win.closed_end ? std::upper_bound(from, last, te) : std::lower_bound(from, last, te);
    out.events += static_cast<uint64_t>(to - from);
    c = static_cast<uint32_t>(to - ev.begin());
  }
}

// Each worker's range of timeline edges overlapping (ts, te); returns the node count.
uint32_t Snapshotter::find_ranges(const Window& win, std::vector<Range>& ranges,
                                  size_t& timeline_edges) {
  const int64_t ts = win.start, te = win.end;
  const size_t W = pag_.worker_count();
  ranges.assign(W, Range{});
  const auto& node_ts = pag_.node_ts;
  uint32_t nodes = 0;
  for (size_t w = 0; w < W; ++w) {
    const uint32_t last = pag_.worker_begin[w + 1];  // one past the worker's last node
    uint32_t i = cursor_[w];
    // Skip edges that end at or before ts: i is the last node at or before ts.
    if (i + 1 < last && node_ts[i + 1] <= ts)
      i = static_cast<uint32_t>(
          std::upper_bound(node_ts.begin() + i + 1, node_ts.begin() + last, ts) - node_ts.begin() -
          1);
    cursor_[w] = i;
    if (i + 1 >= last || node_ts[i] >= te) continue;  // no edge overlaps (ts, te)
    // j: the first node at or after te, or the worker's last node.
    const uint32_t j = static_cast<uint32_t>(
        std::lower_bound(node_ts.begin() + i + 1, node_ts.begin() + last - 1, te) -
        node_ts.begin());
    Range& r = ranges[w];
    r.first_edge = i;
    r.last_node = j;
    r.offset = nodes;
    r.first_ts = std::max(node_ts[i], ts);
    r.last_ts = std::min(node_ts[j], te);
    nodes += j - i + 1;
    timeline_edges += j - i;
  }
  return nodes;
}

// Timeline edges overlapping (ts, te), worker by worker: first each worker's range of
// edges, then the node arrays in one go. Remembers each worker's first global edge and
// snapshot offset to place message endpoints in O(1).
void Snapshotter::cut_timelines(const Window& win, Snapshot& out, std::vector<Range>& ranges) {
  const size_t W = pag_.worker_count();
  const auto& node_ts = pag_.node_ts;
  const uint32_t nodes = find_ranges(win, ranges, out.timeline_edges);
  out.ts.resize(nodes);
  out.worker.resize(nodes);
  out.edge.resize(nodes);
  out.type.resize(nodes);
  for (size_t w = 0; w < W; ++w) {
    const Range& r = ranges[w];
    if (r.first_edge == kNone) continue;
    const uint32_t i = r.first_edge, j = r.last_node, o = r.offset, k = j - i;
    std::copy(node_ts.begin() + i, node_ts.begin() + j + 1, out.ts.begin() + o);
    out.ts[o] = r.first_ts;
    out.ts[o + k] = r.last_ts;
    std::fill_n(out.worker.begin() + o, k + 1, static_cast<uint32_t>(w));
    for (uint32_t x = 0; x < k; ++x) out.edge[o + x] = i + x;
    out.edge[o + k] = kNone;
    std::copy(pag_.edge_type.begin() + i, pag_.edge_type.begin() + j, out.type.begin() + o);
    out.type[o + k] = kNoEdge;
  }
}

// Admits the messages sent before the window's end, keeps those not yet delivered, and
// lists those overlapping the window.
void Snapshotter::select_messages(const Window& win, std::vector<uint32_t>& overlapping) {
  const int64_t ts = win.start, te = win.end;
  const auto& msgs = pag_.messages;
  while (next_message_ < msgs.size() && (msgs[next_message_].src_ts < te ||
                                         (win.closed_end && msgs[next_message_].src_ts == te))) {
    in_flight_.push_back(static_cast<uint32_t>(next_message_));
    ++next_message_;
  }
  overlapping.clear();
  size_t keep = 0;
  for (uint32_t mi : in_flight_) {
    const Message& m = msgs[mi];
    bool zero = m.src_ts == m.dst_ts;
    bool overlaps = zero ? (m.src_ts >= ts && (m.src_ts < te || (win.closed_end && m.src_ts == te)))
                         : (m.src_ts < te && m.dst_ts > ts);
    bool later = zero ? m.src_ts >= te : m.dst_ts > te;
    if (later) in_flight_[keep++] = mi;
    if (overlaps) overlapping.push_back(mi);
  }
  in_flight_.resize(keep);
}

// Messages overlapping the window, their endpoints clipped to it.
void Snapshotter::cut_messages(const Window& win, Snapshot& out, const std::vector<Range>& ranges) {
  const int64_t ts = win.start, te = win.end;
  const auto& msgs = pag_.messages;
  select_messages(win, overlapping_);
  // Endpoint on worker w at time t (clipped), at global node g when not clipped.
  auto at = [&](uint32_t w, int64_t t, uint32_t g, bool clipped, bool is_src) -> uint32_t {
    const uint32_t v = place(ranges[w], t, g, clipped);
    if (v == kNone) extras_.push_back({w, t, static_cast<uint32_t>(out.msg_src.size()), is_src});
    return v;
  };
  for (uint32_t mi : overlapping_) {
    const Message& m = msgs[mi];
    const int64_t s_t = std::max(m.src_ts, ts);
    const int64_t d_t = std::min(m.dst_ts, te);
    const uint32_t s = at(m.src_worker, s_t, m.src_node, m.src_ts < ts, true);
    const uint32_t d = at(m.dst_worker, d_t, m.dst_node, m.dst_ts > te, false);
    out.msg_src.push_back(s);
    out.msg_dst.push_back(d);
    out.msg_index.push_back(mi);
  }
}

// Standalone nodes for message endpoints outside every timeline range (deduplicated).
void Snapshotter::add_extra_nodes(Snapshot& out) {
  if (!extras_.empty()) {
    std::sort(extras_.begin(), extras_.end(), [](const Extra& a, const Extra& b) {
      return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
    });
    for (size_t k = 0; k < extras_.size(); ++k) {
      if (k == 0 || extras_[k].worker != extras_[k - 1].worker ||
          extras_[k].ts != extras_[k - 1].ts) {
        out.ts.push_back(extras_[k].ts);
        out.worker.push_back(extras_[k].worker);
        out.edge.push_back(kNone);
        out.type.push_back(kNoEdge);
      }
      uint32_t node = static_cast<uint32_t>(out.ts.size() - 1);
      (extras_[k].is_src ? out.msg_src : out.msg_dst)[extras_[k].msg] = node;
    }
  }
}

}  // namespace snailtrail
