#include "pag/timeline.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <thread>
#include <unordered_map>

#include "pag/message_join.hpp"
#include "pag/timeline_builder.hpp"
#include "trace/parallel.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {
using detail::HalfEdge;
using detail::NodeContent;
using detail::NodeSlots;
using detail::TimelineBuilder;

// Per worker while scanning: its timeline builder, the node being collected, and the
// message events of that node (their node is known once the node is placed).
struct WorkerScan {
  TimelineBuilder builder;
  NodeContent pending;
  uint32_t last_event = kNone;  // index of the worker's previous event (for errors)
  uint32_t slot = 0;            // first node/event slot of this worker
  uint32_t events = 0;          // events seen so far
  std::vector<uint32_t> pending_messages;
};

// What one thread's share of the workers produced.
struct ScanOutput {
  std::vector<HalfEdge> sends, recvs;
  std::vector<IssueAt> issues;
  size_t bad_event = SIZE_MAX;  // first event going back in time
};

// Threads for a pass over all n events: as many as asked (PagOptions::threads,
// `--threads`), else up to 4 for traces of over 1 M events.
unsigned default_threads(size_t n, unsigned asked = 0) {
  if (asked > 0) return asked;
  return n >= (size_t{1} << 20) ? std::min(4u, std::max(1u, std::thread::hardware_concurrency()))
                                : 1;
}

// Pass 1: the workers (ids and event counts) and operators, from the reader if it
// counted them, else counted here on threads, each over a contiguous share.
const TraceCensus& census_of(const Trace& trace, unsigned asked, TraceCensus& counted) {
  const size_t n = trace.events.size();
  if (trace.census && trace.census->events == n) return *trace.census;
  const unsigned threads = default_threads(n, asked);
  std::vector<CensusBuilder> parts(threads);
  run_parallel(threads, [&](unsigned t) {
    for (size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) parts[t].add(trace.events[i]);
  });
  for (unsigned t = 1; t < threads; ++t) parts[0].merge(parts[t]);
  counted = parts[0].finish();
  return counted;
}

// Workers in ascending id order, with their event counts. Worker id -> final index
// through a table for small ids and a map for large ones.
class WorkerIndex {
 public:
  // Fills pag.worker_ids and pag.event_begin.
  WorkerIndex(const TraceCensus& census, Pag& pag) {
    constexpr uint32_t kTableIds = 1u << 22;
    for (const auto& [id, c] : census.workers) {
      const uint32_t index = static_cast<uint32_t>(pag.worker_ids.size());
      if (id < kTableIds) {
        if (id >= table_.size()) table_.resize(id + 1, kNone);
        table_[id] = index;
      } else {
        sparse_.emplace(id, index);
      }
      pag.worker_ids.push_back(id);
      counts.push_back(c);
    }
    const size_t W = pag.worker_ids.size();
    pag.event_begin.assign(W + 1, 0);
    for (uint32_t k = 0; k < W; ++k) pag.event_begin[k + 1] = pag.event_begin[k] + counts[k].events;
  }

  uint32_t final_of(uint32_t id) const {
    if (id < table_.size()) return table_[id];
    auto it = sparse_.find(id);
    return it != sparse_.end() ? it->second : kNone;  // kNone: unreachable, all ids seen
  }

  std::vector<WorkerCensus> counts;

 private:
  std::vector<uint32_t> table_;
  std::unordered_map<uint32_t, uint32_t> sparse_;
};

// Pass 2: one sequential scan; each worker writes its nodes into its own slot range
// (nodes <= events), so no gather over the event array is needed.
class TimelineScan {
 public:
  TimelineScan(const Trace& trace, Pag& pag, const WorkerIndex& index, int64_t gap_threshold)
      : trace_(trace), pag_(pag), index_(index), h_(gap_threshold), scan_(pag.worker_count()) {
    const size_t n = trace.events.size();
    for (size_t w = 0; w < scan_.size(); ++w) scan_[w].slot = pag.event_begin[w];
    pag.node_ts.resize(n);
    pag.edge_type.resize(n);
    pag.edge_op.resize(n);
    pag.edge_instance.resize(n);
    pag.event_ts.resize(n);
  }

  // Scans all events, handling only workers [w_begin, w_end).
  void scan_workers(uint32_t w_begin, uint32_t w_end, ScanOutput& out) {
    prepare(w_begin, w_end, out);
    const auto& events = trace_.events;
    const size_t n = events.size();
    uint32_t last = kNone, w = 0;
    for (size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      if (e.worker != last) {
        last = e.worker;
        w = index_.final_of(e.worker);
      }
      if (w < w_begin || w >= w_end) continue;
      WorkerScan& ws = scan_[w];
      if (ws.pending.empty || e.ts != ws.pending.ts) {
        if (!ws.pending.empty) {
          if (e.ts < ws.pending.ts) {
            out.bad_event = i;
            return;
          }
          flush(w, out);
        }
        ws.pending.reset(e.ts);
      }
      ws.pending.add(e);
      if (e.is_message()) ws.pending_messages.push_back(static_cast<uint32_t>(i));
      pag_.event_ts[ws.slot + ws.events++] = e.ts;
      ws.last_event = static_cast<uint32_t>(i);
    }
    for (uint32_t w2 = w_begin; w2 < w_end; ++w2) {
      if (!scan_[w2].pending.empty) flush(w2, out);
      scan_[w2].builder.finish(slots_of(w2), out.issues);
    }
  }

  // The event `bad` (found by a scan) goes back in time.
  [[noreturn]] void throw_back_in_time(size_t bad) const {
    const Event& e = trace_.events[bad];
    const WorkerScan& ws = scan_[index_.final_of(e.worker)];
    throw TraceError(trace_.location(bad), "order",
                     fmt::format("events of worker {} go back in time: ts {} after {} ({})",
                                 e.worker, e.ts, ws.pending.ts, trace_.location(ws.last_event)));
  }

  // Compacts the node ranges in place (each moves left, in order), sets
  // pag.worker_begin, and makes the half messages' nodes global.
  void compact(std::vector<std::vector<HalfEdge>>& send_lists,
               std::vector<std::vector<HalfEdge>>& recv_lists) {
    const size_t W = scan_.size();
    std::vector<uint32_t> node_base(W);
    pag_.worker_begin.assign(W + 1, 0);
    uint32_t total = 0;
    for (uint32_t w = 0; w < W; ++w) {
      const uint32_t from = scan_[w].slot, cnt = scan_[w].builder.count();
      node_base[w] = total;
      pag_.worker_begin[w] = total;
      if (from != total) {
        std::copy_n(pag_.node_ts.begin() + from, cnt, pag_.node_ts.begin() + total);
        std::copy_n(pag_.edge_type.begin() + from, cnt, pag_.edge_type.begin() + total);
        std::copy_n(pag_.edge_op.begin() + from, cnt, pag_.edge_op.begin() + total);
        std::copy_n(pag_.edge_instance.begin() + from, cnt, pag_.edge_instance.begin() + total);
      }
      for (uint32_t j = 0; j < cnt; ++j) {
        uint32_t& inst = pag_.edge_instance[total + j];
        if (inst != kNone) inst += total;
      }
      total += cnt;
    }
    pag_.worker_begin[W] = total;
    pag_.node_ts.resize(total);
    pag_.edge_type.resize(total);
    pag_.edge_op.resize(total);
    pag_.edge_instance.resize(total);
    // One slot per event was faulted in; a node stands for about two events. The unused
    // tails are not needed again: their pages go back to the kernel (-70 MB of peak RSS
    // for the 256 s benchmark window).
    big_memory::release_spare_capacity(pag_.node_ts);
    big_memory::release_spare_capacity(pag_.edge_type);
    big_memory::release_spare_capacity(pag_.edge_op);
    big_memory::release_spare_capacity(pag_.edge_instance);
    for (auto* lists : {&send_lists, &recv_lists})
      for (auto& list : *lists)
        for (HalfEdge& e : list) e.node += node_base[e.worker];
  }

 private:
  NodeSlots slots_of(size_t w) {
    const uint32_t s = scan_[w].slot;
    return NodeSlots{pag_.node_ts.data() + s, pag_.edge_type.data() + s, pag_.edge_op.data() + s,
                     pag_.edge_instance.data() + s};
  }

  // Faults in this thread's part of the node arrays in one call per array (cheaper than
  // a page fault per 4 KiB, and done by each thread for its own part), and makes room for
  // every message event of these workers in either list: no regrowth.
  void prepare(uint32_t w_begin, uint32_t w_end, ScanOutput& out) {
    const size_t lo = pag_.event_begin[w_begin], hi = pag_.event_begin[w_end];
    detail::prefault(pag_.node_ts.data() + lo, (hi - lo) * sizeof(int64_t));
    detail::prefault(pag_.event_ts.data() + lo, (hi - lo) * sizeof(int64_t));
    detail::prefault(pag_.edge_op.data() + lo, (hi - lo) * sizeof(uint32_t));
    detail::prefault(pag_.edge_instance.data() + lo, (hi - lo) * sizeof(uint32_t));
    detail::prefault(pag_.edge_type.data() + lo, (hi - lo) * sizeof(uint8_t));
    size_t sends = 0, recvs = 0;
    for (uint32_t w = w_begin; w < w_end; ++w)
      sends += index_.counts[w].sends, recvs += index_.counts[w].recvs;
    detail::reserve_prefaulted(out.sends, sends);
    detail::reserve_prefaulted(out.recvs, recvs);
  }

  // Places worker w's pending node and its message events.
  void flush(uint32_t w, ScanOutput& out) {
    WorkerScan& ws = scan_[w];
    uint32_t node = ws.builder.add(ws.pending, slots_of(w), out.issues, h_);
    for (uint32_t i : ws.pending_messages) {
      const Event& e = trace_.events[i];
      if (!e.has(kHasCorrelator) || !e.has(kHasRemote)) {
        out.issues.push_back({e.ts, Issue::message_without_correlator});
        continue;
      }
      if (e.kind == EventKind::send)
        out.sends.push_back({e.worker, e.remote, e.correlator, e.ts, w, node, e.activity});
      else
        out.recvs.push_back({e.remote, e.worker, e.correlator, e.ts, w, node, e.activity});
    }
    ws.pending_messages.clear();
  }

  const Trace& trace_;
  Pag& pag_;
  const WorkerIndex& index_;
  const int64_t h_;
  std::vector<WorkerScan> scan_;
};

// Large traces: the workers split into contiguous groups of about equal event counts,
// one per thread ([split[t], split[t + 1])). Every thread reads all events but handles
// only its workers, so the result is the same as with one thread.
std::vector<uint32_t> split_workers(const Pag& pag, size_t n, unsigned threads) {
  const size_t W = pag.worker_count();
  if (threads == 0) threads = default_threads(n);
  threads =
      std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(W, 1))));
  std::vector<uint32_t> split = {0};
  for (uint32_t w = 0, t = 1; w < W && t < threads; ++w)
    if (pag.event_begin[w + 1] >= n * t / threads) {
      split.push_back(w + 1);
      ++t;
    }
  split.push_back(static_cast<uint32_t>(W));
  split.erase(std::unique(split.begin(), split.end()), split.end());
  return split;
}

// The first and last event timestamps over all workers.
void set_time_range(Pag& pag) {
  pag.first_ts = INT64_MAX;
  pag.last_ts = INT64_MIN;
  for (uint32_t k = 0; k < pag.worker_count(); ++k) {
    if (pag.event_begin[k] == pag.event_begin[k + 1]) continue;
    pag.first_ts = std::min(pag.first_ts, pag.event_ts[pag.event_begin[k]]);
    pag.last_ts = std::max(pag.last_ts, pag.event_ts[pag.event_begin[k + 1] - 1]);
  }
}

}  // namespace

Pag build_pag(const Trace& trace, const PagOptions& options) {
  Pag pag;
  const size_t n = trace.events.size();
  if (n >= kNone) throw TraceError(trace.source, "input", "too many events");
  TraceCensus counted;
  const TraceCensus& census = census_of(trace, options.threads, counted);
  pag.operator_ids = census.operators;
  const WorkerIndex index(census, pag);

  TimelineScan scan(trace, pag, index, options.gap_threshold_ns);
  const std::vector<uint32_t> split = split_workers(pag, n, options.threads);
  std::vector<ScanOutput> outputs(split.size() - 1);
  run_parallel(static_cast<unsigned>(outputs.size()),
               [&](unsigned t) { scan.scan_workers(split[t], split[t + 1], outputs[t]); });
  size_t bad = SIZE_MAX;
  for (const ScanOutput& o : outputs) bad = std::min(bad, o.bad_event);
  if (bad != SIZE_MAX) scan.throw_back_in_time(bad);
  std::vector<std::vector<HalfEdge>> send_lists, recv_lists;
  std::vector<IssueAt> issues;
  for (ScanOutput& o : outputs) {
    send_lists.push_back(std::move(o.sends));
    recv_lists.push_back(std::move(o.recvs));
    issues.insert(issues.end(), o.issues.begin(), o.issues.end());
  }
  outputs.clear();
  scan.compact(send_lists, recv_lists);

  detail::match_messages(pag, send_lists, recv_lists, issues, options.threads);
  std::stable_sort(issues.begin(), issues.end(), [](const IssueAt& a, const IssueAt& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.issue < b.issue;
  });
  pag.issues = std::move(issues);
  if (n > 0) set_time_range(pag);
  return pag;
}

}  // namespace snailtrail
