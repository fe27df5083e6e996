// Incremental PAG construction for live streams (`snailtrail serve`): events arrive
// worker by worker in time order, interleaved across workers in any way; windows are
// cut out of the PAG as soon as every worker has moved past them, and what no later
// window needs is dropped, so memory stays bounded.
//
// The timeline of each worker is built by the same gap-filling code as the batch
// builder (timeline_builder.hpp), and a cut is a small Pag whose snapshots equal those
// of the whole trace's PAG for the cut's windows, so `serve` reports exactly what
// `analyze` reports on the same events. Where a live stream cannot know the future
// (docs/SERVE.md): a message counts as unmatched if its partner has not arrived when
// its window is cut, and a correlator repeated after its first use was cut is not
// reported as a duplicate.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "pag/correlator_table.hpp"
#include "pag/open_halves.hpp"
#include "pag/timeline.hpp"
#include "pag/timeline_builder.hpp"

namespace snailtrail {

class StreamingPag {
 public:
  explicit StreamingPag(const PagOptions& options = {})
      : gap_threshold_(options.gap_threshold_ns) {}

  enum class Added { ok, out_of_order, before_horizon };
  // Adds one event. Events of one worker must come in time order: an event older than
  // the worker's previous one is rejected (out_of_order), as is one before the horizon
  // (the start of the first window not cut yet, see retire()).
  Added add(const Event& e);

  // True when worker `id`'s nodes before `end` are final and the node after them is
  // known: the window ending at `end` does not depend on the worker's future events.
  bool complete_before(uint32_t worker_id, int64_t end) const;
  // The worker has gone quiet: its last node is closed as if no more events came at its
  // timestamp (a later event there is then out of order).
  void flush(uint32_t worker_id);
  void flush_all();
  // End of the stream: every worker's last node is closed, and activities still open
  // are reported (unterminated_activity), as the batch builder does at a trace's end;
  // those of workers silent since before the horizon at the horizon (the next window
  // cut). Returns how many were reported.
  size_t finish();

  // Makes a worker known before its first event (from a producer's metadata), so that it
  // holds windows back like any other active worker.
  void declare(uint32_t worker_id) { index_of(worker_id); }

  // Batch reading of a file whose facts are known up front (summary/streamed.hpp):
  // an operator id of the whole trace, listed in every cut as the batch PAG lists it.
  void declare_operator(uint32_t op);
  // Every event before `t` has been added: nodes of workers collecting events before `t`
  // are complete, so they are closed now.
  void flush_before(int64_t t);
  // The worker's last event has been added: its last node is closed and an activity
  // still open is reported at that node (unterminated_activity), as the batch builder
  // does at the end of a trace. At most once per worker; later events of it are refused.
  void finish_worker(uint32_t worker_id);
  // The trace's facts say no (sender, receiver, correlator) is used by two sends or by
  // two receives (TraceFacts::correlators_unique): halves are matched through a map
  // of the open ones only (no per-key history for duplicate reports). Same results on
  // such traces; set before the first event.
  void assume_unique_correlators() { unique_correlators_ = true; }
  // Timestamp of the worker's last closed node (INT64_MIN if none).
  int64_t last_node_ts(uint32_t worker_id) const;

  // Latest event timestamp of a worker, or INT64_MIN if it is unknown.
  int64_t watermark(uint32_t worker_id) const;
  bool empty() const { return events_ == 0; }
  int64_t first_ts() const { return first_ts_; }
  int64_t last_ts() const { return last_ts_; }
  uint64_t events() const { return events_; }
  std::vector<uint32_t> worker_ids() const;

  // A PAG for the windows covering [start, end] (end included when `closed_end`):
  // snapshots of those windows cut from it equal those cut from the whole trace's PAG.
  // Half messages before the end that are still unmatched are declared unmatched first
  // (expire_halves; `expire` false: the caller did that already for this end or later).
  Pag cut(int64_t start, int64_t end, bool closed_end, bool expire = true);
  // Declares half messages before `end` (or at it, when `closed_end`) unmatched: their
  // partner can no longer come once the windows up to `end` are cut.
  void expire_halves(int64_t end, bool closed_end);
  // Only the events' times of the windows of width `width` covering [start, end]
  // (worker_ids, event_ts, event_begin), and of those only each worker's first one per
  // window: all plan_window_range reads to plan them. No nodes or messages.
  Pag cut_events(int64_t start, int64_t end, bool closed_end, int64_t width) const;

  // Forgets everything only windows before `horizon` needed; later events before it
  // are rejected.
  void retire(int64_t horizon);

  // A large window read block by block (summary/streamed.cpp): room for a worker's
  // `events` events and as many nodes, reserved before its first event, so that its
  // arrays never grow by copying (address space only: pages are touched as written).
  void reserve_worker(uint32_t worker_id, size_t events);
  // The last cut: the Pag cut() returns, built while this PAG's arrays are freed worker
  // by worker (never both whole copies at once). Nothing may be added, cut or retired
  // afterwards.
  Pag take(int64_t start, int64_t end, bool closed_end);

  // serve --shard: a matched message is kept only if `needed(send ts, receive ts)`; the
  // others lie in windows no cut will ask for (they are still matched, so that their
  // halves are neither unmatched nor duplicates elsewhere). Unset: every message is kept.
  void keep_messages_if(std::function<bool(int64_t, int64_t)> needed) {
    needed_ = std::move(needed);
  }
  // Matched messages not kept (keep_messages_if).
  uint64_t dropped_messages() const { return dropped_messages_; }
  // serve --shard: of the events in a window of width `width` for which `needed(k)` is
  // false (another shard's window k), only each worker's first event time is retained:
  // all cut_events() reads to plan those windows; no cut() covers them. Windows needed
  // keep every event time. Unset: every event time is retained.
  void keep_event_times_if(int64_t width, std::function<bool(int64_t)> needed) {
    times_width_ = width;
    times_needed_ = std::move(needed);
  }
  // Event times retained (tests of keep_event_times_if).
  size_t retained_event_times() const;

  // Retained sizes, for metrics and tests of bounded memory.
  size_t retained_nodes() const;
  size_t retained_messages() const { return messages_.size(); }
  // Halves waiting for their partner (with assume_unique_correlators()).
  size_t open_halves() const { return open_.size(); }

 private:
  using Half = CorrelatorTable::Half;
  using Key = CorrelatorTable::Key;
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Matched {
    int64_t src_ts, dst_ts;
    uint32_t src_worker, dst_worker;  // indices into workers_
    uint64_t src_node, dst_node;      // absolute node numbers
    ActivityType type;
  };
  struct Worker {
    uint32_t id = 0;
    detail::TimelineBuilder builder;
    detail::NodeContent pending;  // the node being collected (pending.empty: none)
    std::vector<Event> pending_messages;
    // Retained nodes: local index i is absolute node number base + i.
    uint64_t base = 0;
    std::vector<int64_t> node_ts;
    std::vector<uint8_t> type;
    std::vector<uint32_t> op, instance;
    std::vector<int64_t> event_ts;  // retained raw event times
    // keep_event_times_if: events before times_end lie in the window of the last event
    // time retained; in another shard's window (times_sparse) they are not retained.
    int64_t times_end = INT64_MIN;
    bool times_sparse = false;
    int64_t watermark = INT64_MIN;
    bool finished = false;  // finish_worker() was called
  };

  uint32_t index_of(uint32_t id);
  const Worker* find(uint32_t id) const;
  void flush_pending(Worker& w);
  void keep_event_time(Worker& w, int64_t ts);
  void on_half(const Event& e, uint32_t worker, uint64_t node);
  void pair(const Half& send, const Half& recv);
  // The pieces of cut(): halves whose partner can no longer come are reported; each
  // worker's retained nodes and events in the range; the messages overlapping it.
  struct CutLayout;
  // A worker's nodes a cut of [start, end) copies: [first, second).
  static std::pair<size_t, size_t> node_range(const Worker& w, int64_t start, int64_t end);
  // A cut's issues in the range, sorted, and its operators and time range.
  void finish_cut(int64_t start, int64_t end, bool closed_end, Pag& pag) const;
  // Appends nodes [lo, hi) of `w` and their edges (the last one without) to `pag`.
  static void append_nodes(const Worker& w, size_t lo, size_t hi, Pag& pag);
  void cut_timelines(int64_t start, int64_t end, bool closed_end, Pag& pag,
                     CutLayout& layout) const;
  void cut_messages(int64_t start, int64_t end, Pag& pag, const CutLayout& layout) const;
  // take()'s pieces: cut_timelines and cut_messages, freeing what they copied.
  void take_timelines(int64_t start, int64_t end, bool closed_end, Pag& pag, CutLayout& layout);
  void take_messages(int64_t start, int64_t end, Pag& pag, const CutLayout& layout);

  int64_t gap_threshold_;
  int64_t horizon_ = INT64_MIN;
  std::vector<Worker> workers_;
  std::unordered_map<uint32_t, uint32_t> index_;  // worker id -> index into workers_
  static constexpr uint32_t kDenseIds = 1u << 16;
  std::vector<uint32_t> dense_;  // the same for ids below kDenseIds (kNone: unknown)
  CorrelatorTable keys_;         // the halves of every key (unless unique_correlators_)
  OpenHalves open_;              // with unique correlators: the halves waiting for their partner
  bool unique_correlators_ = false;
  std::vector<Matched> messages_;
  std::function<bool(int64_t, int64_t)> needed_;
  uint64_t dropped_messages_ = 0;
  int64_t times_width_ = 0;
  std::function<bool(int64_t)> times_needed_;
  std::vector<IssueAt> issues_;
  std::vector<uint32_t> operator_ids_;  // sorted
  uint64_t events_ = 0;
  int64_t first_ts_ = INT64_MAX, last_ts_ = INT64_MIN;
};

}  // namespace snailtrail
