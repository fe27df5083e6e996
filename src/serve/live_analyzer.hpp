// Event-time windowing of a live event stream: events go into a StreamingPag, and a
// window is analyzed (PAG cut, snapshot, CP, summaries) as soon as every active worker
// has moved past its end plus the allowed lateness. Independent of where events come
// from (sockets, files, tests); not thread-safe: one thread feeds it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "output/names.hpp"
#include "output/writers.hpp"
#include "pag/streaming.hpp"

namespace snailtrail {

struct LiveOptions {
  PagOptions pag;
  int64_t window_ns = 1'000'000'000;
  int64_t lateness_ns = 200'000'000;
  // An event more than this ahead of the latest event accepted so far (from any worker)
  // is refused and counted (time_jumps): one absurd timestamp must not close every
  // window up to it. 0: no limit.
  int64_t max_jump_ns = 0;
  SummaryOptions summary;
  SummarySelection selection;
  // serve --shard I/N: only windows whose index is I mod N are analyzed and emitted (a run
  // of windows without events by its first index). The others' events still go through
  // the gap filling and message matching (a window needs what came before), but no PAG is
  // cut for them and they cost no snapshot, CP or summary.
  uint32_t shard_index = 0, shard_count = 1;
  // serve --nats after a restart: the windows up to this index are in --out already; they
  // are skipped the same way.
  int64_t written_through = -1;
};

struct LiveStats {
  uint64_t events = 0;           // accepted
  uint64_t late_events = 0;      // before the start of the first open window: dropped
  uint64_t out_of_order = 0;     // older than the worker's previous event: dropped
  uint64_t windows = 0;          // emitted (analyzed)
  uint64_t skipped_windows = 0;  // other shards' windows with events: not analyzed
  uint64_t time_jumps = 0;       // more than max_jump_ns ahead of the latest event: dropped
  uint64_t empty_windows = 0;    // in runs of windows without events (not analyzed)
  uint64_t empty_runs = 0;       // `empty_windows` records emitted
  uint64_t unterminated_at_shutdown = 0;  // activities still open at finish()
  // Size of the PAGs cut for analysis: timeline nodes and message edges. A shard cuts
  // them only around its own windows, so N shards each cut about 1/N of them.
  uint64_t cut_nodes = 0;
  uint64_t cut_messages = 0;
};

// One analyzed window: its summary and its JSON line (the schema of `analyze --format
// jsonl`, no newline). For a run of windows without events (summary.window.empty_run >
// 0) the line is its `empty_windows` record, as `analyze` writes it.
struct LiveWindow {
  WindowSummary summary;
  std::string json;
};

class LiveAnalyzer {
 public:
  LiveAnalyzer(const LiveOptions& options, std::function<void(LiveWindow&)> on_window);
  // The stream's PAG refers back to it (a shard's message filter): it stays in place.
  LiveAnalyzer(const LiveAnalyzer&) = delete;
  LiveAnalyzer& operator=(const LiveAnalyzer&) = delete;

  // Also called for every window, with its PAG cut and names (e.g. for the dashboard's
  // report, which keeps some windows' timelines).
  void on_view(std::function<void(const WindowView&, const Names&)> f) { on_view_ = std::move(f); }

  // True when the event was accepted (not late, not out of order).
  bool add(const Event& e);
  // Worker and operator names from metadata. Named workers that have not sent events
  // yet hold windows back (until they are idle).
  void add_names(const Trace& names);

  // Idle workers stop holding windows back (their last node is closed); a worker is
  // active again as soon as it sends an event.
  void set_idle(uint32_t worker_id);
  bool is_idle(uint32_t worker_id) const { return idle_.count(worker_id) != 0; }
  // While held (e.g. until the expected producers have connected) no window closes.
  void hold(bool on) { held_ = on; }

  // Analyzes every window that is ready; returns how many were emitted.
  size_t advance();
  // End of the stream: every remaining window is analyzed, the last one including
  // events at its end (as `analyze` does).
  size_t finish();

  const LiveStats& stats() const { return stats_; }
  const StreamingPag& pag() const { return pag_; }
  // End of the last emitted window (INT64_MIN before the first).
  int64_t closed_until() const;

 private:
  bool ready(int64_t end) const;
  size_t close(int64_t k_end, bool last_closed_end);
  void emit_run();  // the pending run of windows without events, if any
  void emit_window(const WindowView& view, const Names& names);
  void skip_window();
  void pass(const Window& window, size_t index);
  void begin();
  // Whether a message sent at `src` and received at `dst` overlaps a window of this shard.
  bool overlaps_mine(int64_t src, int64_t dst) const;
  bool mine(uint64_t index) const {
    return static_cast<int64_t>(index) > options_.written_through &&
           index % options_.shard_count == options_.shard_index;
  }

  LiveOptions options_;
  std::function<void(LiveWindow&)> on_window_;
  std::function<void(const WindowView&, const Names&)> on_view_;
  StreamingPag pag_;
  Trace names_;
  std::unordered_set<uint32_t> idle_;
  bool held_ = false;
  bool started_ = false;
  int64_t k0_ = 0;      // number of the first window (start = k * width)
  int64_t next_k_ = 0;  // first window not emitted yet
  uint64_t late_since_last_window_ = 0;
  uint64_t out_of_order_since_last_window_ = 0;
  uint64_t jumps_since_last_window_ = 0;
  uint64_t empty_before_ = 0;  // windows without events right before next_k_
  EmptyRunMerger runs_;        // pending run of windows without events
  LiveStats stats_;
};

}  // namespace snailtrail
