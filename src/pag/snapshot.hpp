// Windows and PAG snapshots (thesis Def. 10-11): every edge overlapping a window is
// clipped to it; messages crossing a border get artificial nodes at the border.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "pag/timeline.hpp"

namespace snailtrail {

struct WindowSpec {
  int64_t width_ns = 0;  // 0: one window from the first to the last event ("whole")
  std::optional<int64_t> from_ns;
  std::optional<int64_t> to_ns;
};

// A window [start, end]. Positive-duration edges belong to it if they overlap
// (start, end); events and zero-duration messages if start <= t < end, or t <= end
// when `closed_end` (the last window of the analyzed range).
struct Window {
  int64_t start = 0;
  int64_t end = 0;
  bool closed_end = false;
  // 0: a window to analyze. n > 0: a run of n consecutive windows [start, end) without
  // any event, following kEmptyWindowsAnalyzed windows without events: not analyzed,
  // written as one `empty_windows` record (docs/OUTPUT.md), so that a gap costs nothing.
  uint64_t empty_run = 0;
  uint64_t count() const { return empty_run > 0 ? empty_run : 1; }  // windows it stands for
};

// In a stretch of windows without events, the first this many are analyzed (long
// activities spanning them have CP like any other); the rest of the stretch is one run.
constexpr uint64_t kEmptyWindowsAnalyzed = 16;

// The arithmetic of tumbling windows of width w > 0 aligned to `origin`, exact over the
// whole int64 range (shared by the window planners and the streamed pipeline).
namespace windowing {
// Floor division that is correct for negative operands too.
int64_t floor_div(int64_t a, int64_t b);
// origin + k * w, saturated to the int64 range.
int64_t border(int64_t origin, int64_t k, int64_t w);
// The number k of the window [origin + k w, origin + (k + 1) w) holding t.
int64_t window_of(int64_t t, int64_t origin, int64_t w);
// The last window of a range from window k0 to the instant hi: the one holding hi, but a
// range ending exactly on a border does not open a window of zero length.
int64_t last_window(int64_t k0, int64_t hi, int64_t origin, int64_t w);
}  // namespace windowing

// Tumbling windows aligned to multiples of the width (or to --from), covering the
// trace's time range clipped to [from, to]. Empty when there is nothing to analyze.
// A window without events that follows kEmptyWindowsAnalyzed windows without events
// starts a run: the run up to the next window with events is one entry
// (Window::empty_run), so the plan has at most kEmptyWindowsAnalyzed + 2 entries per
// window with events, however long the gaps.
std::vector<Window> plan_windows(const Pag& pag, const WindowSpec& spec);

// Windows k0..k1 (inclusive) of width w aligned to `origin`: [origin + k w, origin +
// (k + 1) w), ends saturated at INT64_MAX and capped at `to`; the last one has a closed
// end when `last_closed`. Empty windows are run-length compacted as in plan_windows;
// `empty_before` is the number of windows without events right before k0 (for a plan
// continued in pieces: serve's windows; at most kEmptyWindowsAnalyzed matters), updated
// to the number right after k1.
std::vector<Window> plan_window_range(const Pag& pag, int64_t origin, int64_t w, int64_t k0,
                                      int64_t k1, bool last_closed, std::optional<int64_t> to,
                                      uint64_t& empty_before);

// One window's snapshot. Nodes of one worker are contiguous and in time order; the
// timeline edge leaving node v (if any) goes to node v + 1. Nodes that only carry
// clipped messages of a worker with no timeline edge in the window come last.
struct Snapshot {
  Window window;
  BigVector<int64_t> ts;        // per node
  BigVector<uint32_t> worker;   // per node, dense worker index
  BigVector<uint32_t> edge;     // per node: global PAG node whose timeline edge leaves it, or kNone
  BigVector<uint8_t> type;      // per node: ActivityType of the edge leaving it, or kNoEdge
  BigVector<uint32_t> msg_src;  // per message edge: snapshot nodes
  BigVector<uint32_t> msg_dst;
  BigVector<uint32_t> msg_index;  // index into Pag::messages
  // Per message edge: how many identical clipped pieces of messages it stands for (a
  // segmented window's parallel pieces, cp/segments.hpp; msg_index is the first one's).
  // Empty: 1 each, as Snapshotter builds it.
  BigVector<uint32_t> msg_mult;
  uint64_t events = 0;  // raw events in the window
  size_t timeline_edges = 0;
  size_t merged_pieces = 0;  // sum of msg_mult - 1

  size_t node_count() const { return ts.size(); }
  size_t edge_count() const { return timeline_edges + msg_src.size() + merged_pieces; }
  uint32_t mult(size_t k) const { return msg_mult.empty() ? 1 : msg_mult[k]; }
  bool has_timeline_edge(uint32_t v) const { return edge[v] != kNone; }
  // A timeline edge that can lie on a critical path (waiting edges cannot).
  bool counts(uint32_t v) const {
    return type[v] != kNoEdge && type[v] != static_cast<uint8_t>(ActivityType::waiting);
  }
};

// Cuts consecutive windows out of a PAG. Windows must be requested in increasing
// time order; state (per-worker positions, messages in flight) carries over.
class Snapshotter {
 public:
  explicit Snapshotter(const Pag& pag);
  void build(const Window& window, Snapshot& out);

  // The timeline edges of a worker overlapping a window: global nodes [first_edge,
  // last_node], at snapshot nodes from `offset`, their ends clipped to the window.
  struct Range {
    uint32_t first_edge = kNone;  // global node index of the first overlapping edge
    uint32_t last_node = 0;       // global node index of the last node reached
    uint32_t offset = 0;          // snapshot index of the first node
    int64_t first_ts = 0, last_ts = 0;
  };
  // What build() would cut, without building the node arrays (a segmented window is
  // planned from this, cp/segments.hpp): every worker's range and the messages
  // overlapping the window (into Pag::messages, in build()'s order); returns the
  // timeline nodes. Advances the same state as build(): one or the other per window.
  uint32_t scan(const Window& window, std::vector<Range>& ranges, std::vector<uint32_t>& messages);
  // The snapshot node of range r where build() puts a message endpoint at (clipped) time
  // t, global node g, or kNone: a node of its own at t, after the timelines.
  static uint32_t place(const Range& r, int64_t t, uint32_t g, bool clipped) {
    if (r.first_edge != kNone && t >= r.first_ts && t <= r.last_ts) {
      if (!clipped && g >= r.first_edge && g <= r.last_node) return r.offset + (g - r.first_edge);
      if (clipped && t == r.first_ts) return r.offset;
      if (clipped && t == r.last_ts) return r.offset + (r.last_node - r.first_edge);
    }
    return kNone;
  }
  // Only out.window and out.events (no nodes): for a window analyzed from the snapshots
  // of its parts. The other state catches up at the next build().
  void count_only(const Window& window, Snapshot& out);

 private:
  void count_events(const Window& win, Snapshot& out);
  uint32_t find_ranges(const Window& win, std::vector<Range>& ranges, size_t& timeline_edges);
  void select_messages(const Window& win, std::vector<uint32_t>& overlapping);
  void cut_timelines(const Window& win, Snapshot& out, std::vector<Range>& ranges);
  void cut_messages(const Window& win, Snapshot& out, const std::vector<Range>& ranges);
  void add_extra_nodes(Snapshot& out);

  const Pag& pag_;
  std::vector<uint32_t> cursor_;        // per worker: first edge that may overlap the next window
  size_t next_message_ = 0;             // next message (by send time) not yet in flight
  std::vector<uint32_t> in_flight_;     // messages that may overlap the next window
  std::vector<uint32_t> overlapping_;   // the window's messages (build)
  std::vector<uint32_t> event_cursor_;  // per worker: first event not yet counted
  struct Extra {
    uint32_t worker;
    int64_t ts;
    uint32_t msg;  // position in the snapshot's message list
    bool is_src;
  };
  std::vector<Extra> extras_;
};

}  // namespace snailtrail
