#include "pag/timeline.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <span>
#include <thread>
#include <unordered_map>

#include "pag/radix_sort.hpp"
#include "pag/timeline_builder.hpp"
#include "trace/parallel.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {
using detail::NodeContent;
using detail::NodeSlots;
using detail::TimelineBuilder;

// A message event waiting for its partner; `node` is local to `worker` until the
// worker's nodes are placed.
struct HalfEdge {
  uint32_t sender;  // worker ids as in the trace
  uint32_t receiver;
  int64_t correlator;
  int64_t ts;
  uint32_t worker;  // provisional worker index of the worker that logged it
  uint32_t node;
  ActivityType type;
};

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

uint64_t key_hash(uint32_t s, uint32_t r, int64_t c) {
  uint64_t h = (uint64_t{s} << 32 | r) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(c) * 0xc2b2ae3d27d4eb4fULL;
  h ^= h >> 29;
  return h * 0x165667b19e3779f9ULL;
}

// Hash join of the half messages of one partition (all of a key's are in one partition).
// The k-th send of a key pairs with its k-th receive (both in time order).
void join_partition(const Pag& pag, std::span<const HalfEdge> sends,
                    std::span<const HalfEdge> recvs, std::vector<IssueAt>& issues,
                    std::vector<Message>& messages) {
  struct Entry {
    uint32_t sender = 0, receiver = 0;
    int64_t correlator = 0;
    uint32_t first = kNone;  // first send with this key (chained through next[])
    uint32_t last = kNone;
    uint32_t n_send = 0, n_recv = 0;
  };
  size_t cap = 16;
  while (cap < 2 * sends.size() + 16) cap <<= 1;
  std::vector<Entry> table(cap);
  std::vector<uint32_t> next(sends.size(), kNone);
  auto find = [&](uint32_t s, uint32_t r, int64_t c, bool insert) -> Entry* {
    size_t i = key_hash(s, r, c) & (cap - 1);
    for (;; i = (i + 1) & (cap - 1)) {
      Entry& e = table[i];
      if (e.first == kNone) {  // empty slot: only sends insert
        if (!insert) return nullptr;
        e.sender = s, e.receiver = r, e.correlator = c;
        return &e;
      }
      if (e.sender == s && e.receiver == r && e.correlator == c) return &e;
    }
  };
  bool duplicate_sends = false, duplicate_recvs = false;
  for (uint32_t k = 0; k < sends.size(); ++k) {
    const HalfEdge& h = sends[k];
    Entry* e = find(h.sender, h.receiver, h.correlator, true);
    if (e->first == kNone) {
      e->first = k;
    } else {
      next[e->last] = k;
      duplicate_sends = true;
    }
    e->last = k;
    ++e->n_send;
  }
  // The next unpaired send of each key, chained in time order.
  std::vector<uint32_t> cursor(cap);
  for (size_t i = 0; i < cap; ++i) cursor[i] = table[i].first;
  std::vector<uint8_t> paired(sends.size(), 0);
  for (const HalfEdge& r : recvs) {
    Entry* e = find(r.sender, r.receiver, r.correlator, false);
    if (!e) {
      issues.push_back({r.ts, Issue::unmatched_recv});
      continue;
    }
    if (++e->n_recv > 1) duplicate_recvs = true;
    uint32_t& c = cursor[static_cast<size_t>(e - table.data())];
    if (c == kNone) {
      issues.push_back({r.ts, Issue::unmatched_recv});
      continue;
    }
    const HalfEdge& s = sends[c];
    paired[c] = 1;
    c = next[c];
    const int64_t s_ts = pag.node_ts[s.node], r_ts = pag.node_ts[r.node];
    if (r_ts < s_ts)
      issues.push_back({s.ts, Issue::negative_duration_message});
    else if (s.node == r.node)
      issues.push_back({s.ts, Issue::self_loop_message});
    else
      messages.push_back({s.node, r.node, s_ts, r_ts, s.worker, r.worker, s.type});
  }
  for (uint32_t k = 0; k < sends.size(); ++k)
    if (!paired[k]) issues.push_back({sends[k].ts, Issue::unmatched_send});
  // Every half message of a key that has more than one send (or receive) is counted.
  if (duplicate_sends)
    for (const HalfEdge& s : sends)
      if (find(s.sender, s.receiver, s.correlator, false)->n_send > 1)
        issues.push_back({s.ts, Issue::duplicate_correlator});
  if (duplicate_recvs)
    for (const HalfEdge& r : recvs) {
      Entry* e = find(r.sender, r.receiver, r.correlator, false);
      if (e && e->n_recv > 1) issues.push_back({r.ts, Issue::duplicate_correlator});
    }
}

// Matches sends with receives by (sender, receiver, correlator): the half messages are
// scattered into partitions by key hash so that each partition's hash table stays in
// cache (a radix-partitioned hash join), then messages are sorted by send time.
void match_messages(Pag& pag, std::vector<std::vector<HalfEdge>>& send_lists,
                    std::vector<std::vector<HalfEdge>>& recv_lists, std::vector<IssueAt>& issues) {
  size_t n_sends = 0;
  for (const auto& l : send_lists) n_sends += l.size();
  int bits = 0;
  while (bits < 10 && (n_sends >> bits) > 4096) ++bits;
  const size_t parts = size_t{1} << bits;
  auto part_of = [&](const HalfEdge& h) -> size_t {
    return bits == 0 ? 0 : key_hash(h.sender, h.receiver, h.correlator) >> (64 - bits);
  };
  // Scatters the lists (one per scanning thread, each on its own thread) into
  // partitions; stable, so each key's half messages, which all come from one worker and
  // so from one list, keep time order.
  auto scatter = [&](std::vector<std::vector<HalfEdge>>& lists, BigVector<HalfEdge>& out,
                     std::vector<size_t>& begin) {
    const size_t L = lists.size();
    std::vector<std::vector<uint16_t>> part(L);  // each element's partition, hashed once
    std::vector<std::vector<size_t>> fill(L, std::vector<size_t>(parts + 1, 0));
    size_t total = 0;
    for (const auto& l : lists) total += l.size();
    const unsigned threads = total >= (size_t{1} << 16) ? static_cast<unsigned>(L) : 1;
    run_parallel(threads, [&](unsigned t) {
      for (size_t l = t; l < L; l += threads) {
        part[l].resize(lists[l].size());
        for (size_t k = 0; k < lists[l].size(); ++k) {
          part[l][k] = static_cast<uint16_t>(part_of(lists[l][k]));
          ++fill[l][part[l][k]];
        }
      }
    });
    // Partition p holds list 0's elements of p, then list 1's, ...
    begin.assign(parts + 1, 0);
    size_t at = 0;
    for (size_t p = 0; p < parts; ++p) {
      begin[p] = at;
      for (size_t l = 0; l < L; ++l) {
        const size_t count = fill[l][p];
        fill[l][p] = at;
        at += count;
      }
    }
    begin[parts] = at;
    out.resize(total);
    run_parallel(threads, [&](unsigned t) {
      for (size_t l = t; l < L; l += threads) {
        for (size_t k = 0; k < lists[l].size(); ++k) out[fill[l][part[l][k]]++] = lists[l][k];
        std::vector<HalfEdge>().swap(lists[l]);
      }
    });
  };
  BigVector<HalfEdge> sends, recvs;  // BigVector: resize does not zero them
  std::vector<size_t> send_begin, recv_begin;
  scatter(send_lists, sends, send_begin);
  scatter(recv_lists, recvs, recv_begin);
  // Partitions are independent: threads take contiguous ranges of them, and their
  // outputs are concatenated in partition order.
  const unsigned threads =
      sends.size() + recvs.size() >= (size_t{1} << 18)
          ? std::min<unsigned>({4u, std::max(1u, std::thread::hardware_concurrency()),
                                static_cast<unsigned>(parts)})
          : 1;
  std::vector<std::vector<Message>> found(threads);
  std::vector<std::vector<IssueAt>> found_issues(threads);
  auto join_range = [&](unsigned t) {
    const size_t p_begin = parts * t / threads, p_end = parts * (t + 1) / threads;
    found[t].reserve(send_begin[p_end] - send_begin[p_begin]);  // at most one per send
    for (size_t p = parts * t / threads; p < parts * (t + 1) / threads; ++p)
      join_partition(pag,
                     std::span<const HalfEdge>(sends.data() + send_begin[p],
                                               send_begin[p + 1] - send_begin[p]),
                     std::span<const HalfEdge>(recvs.data() + recv_begin[p],
                                               recv_begin[p + 1] - recv_begin[p]),
                     found_issues[t], found[t]);
  };
  run_parallel(threads, join_range);
  size_t total = 0;
  for (const auto& f : found) total += f.size();
  pag.messages.reserve(total);
  for (unsigned t = 0; t < threads; ++t) {
    pag.messages.insert(pag.messages.end(), found[t].begin(), found[t].end());
    issues.insert(issues.end(), found_issues[t].begin(), found_issues[t].end());
  }
  // Sort messages by send time with a radix sort, then each run of equal send times by
  // (receive time, nodes, type) — a total order, so it never depends on how the
  // receives were collected (e.g. by how many threads).
  if (pag.messages.empty()) return;
  std::vector<KeyValue<uint32_t>> keys(pag.messages.size()), scratch;
  int64_t min_src = INT64_MAX;
  for (const Message& m : pag.messages) min_src = std::min(min_src, m.src_ts);
  for (uint32_t i = 0; i < keys.size(); ++i)
    keys[i] = {static_cast<uint64_t>(pag.messages[i].src_ts - min_src), i};
  // Two halves radix-sorted on two threads and merged (ties from the first half first)
  // give the same order as one stable sort.
  const size_t half = keys.size() >= (size_t{1} << 16) ? keys.size() / 2 : keys.size();
  std::vector<KeyValue<uint32_t>> upper(keys.begin() + static_cast<std::ptrdiff_t>(half),
                                        keys.end());
  keys.resize(half);
  std::vector<KeyValue<uint32_t>> scratch2;
  run_parallel(upper.empty() ? 1 : 2, [&](unsigned t) {
    t == 0 ? radix_sort(keys, scratch) : radix_sort(upper, scratch2);
  });
  scratch.resize(keys.size() + upper.size());
  std::merge(keys.begin(), keys.end(), upper.begin(), upper.end(), scratch.begin(),
             [](const auto& a, const auto& b) { return a.key < b.key; });
  keys.swap(scratch);
  BigVector<Message> sorted(pag.messages.size());
  const unsigned gather_threads = upper.empty() ? 1 : 2;
  run_parallel(gather_threads, [&](unsigned t) {
    const size_t lo = keys.size() * t / gather_threads, hi = keys.size() * (t + 1) / gather_threads;
    for (size_t i = lo; i < hi; ++i) sorted[i] = pag.messages[keys[i].value];
  });
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i + 1;
    while (j < sorted.size() && sorted[j].src_ts == sorted[i].src_ts) ++j;
    if (j - i > 1)
      std::sort(sorted.begin() + static_cast<std::ptrdiff_t>(i),
                sorted.begin() + static_cast<std::ptrdiff_t>(j),
                [](const Message& x, const Message& y) {
                  if (x.dst_ts != y.dst_ts) return x.dst_ts < y.dst_ts;
                  if (x.src_node != y.src_node) return x.src_node < y.src_node;
                  if (x.dst_node != y.dst_node) return x.dst_node < y.dst_node;
                  return x.type < y.type;
                });
    i = j;
  }
  pag.messages.swap(sorted);
}

}  // namespace

Pag build_pag(const Trace& trace, const PagOptions& options) {
  Pag pag;
  const auto& events = trace.events;
  const size_t n = events.size();
  if (n >= kNone) throw TraceError(trace.source, "input", "too many events");

  // Pass 1: the workers (ids and event counts) and operators, from the reader if it
  // counted them, else counted here on threads, each over a contiguous share.
  TraceCensus counted;
  const TraceCensus* census = trace.census && trace.census->events == n ? &*trace.census : nullptr;
  if (!census) {
    const unsigned threads = n >= (size_t{1} << 20)
                                 ? std::min(4u, std::max(1u, std::thread::hardware_concurrency()))
                                 : 1;
    std::vector<CensusBuilder> parts(threads);
    run_parallel(threads, [&](unsigned t) {
      for (size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) parts[t].add(events[i]);
    });
    for (unsigned t = 1; t < threads; ++t) parts[0].merge(parts[t]);
    counted = parts[0].finish();
    census = &counted;
  }
  pag.operator_ids = census->operators;

  // Workers in ascending id order. Worker id -> final index through a table for small
  // ids and a map for large ones.
  constexpr uint32_t kTableIds = 1u << 22;
  std::vector<uint32_t> table;
  std::unordered_map<uint32_t, uint32_t> sparse;
  std::vector<WorkerCensus> counts;
  for (const auto& [id, c] : census->workers) {
    const uint32_t index = static_cast<uint32_t>(pag.worker_ids.size());
    if (id < kTableIds) {
      if (id >= table.size()) table.resize(id + 1, kNone);
      table[id] = index;
    } else {
      sparse.emplace(id, index);
    }
    pag.worker_ids.push_back(id);
    counts.push_back(c);
  }
  const size_t W = pag.worker_ids.size();
  pag.event_begin.assign(W + 1, 0);
  for (uint32_t k = 0; k < W; ++k) pag.event_begin[k + 1] = pag.event_begin[k] + counts[k].events;
  auto final_of = [&](uint32_t id) -> uint32_t {
    if (id < table.size()) return table[id];
    auto it = sparse.find(id);
    return it != sparse.end() ? it->second : kNone;  // kNone: unreachable, all ids seen
  };

  // Pass 2: one sequential scan; each worker writes its nodes into its own slot range
  // (nodes <= events), so no gather over the event array is needed.
  std::vector<WorkerScan> scan(W);
  for (size_t w = 0; w < W; ++w) scan[w].slot = pag.event_begin[w];
  pag.node_ts.resize(n);
  pag.edge_type.resize(n);
  pag.edge_op.resize(n);
  pag.edge_instance.resize(n);
  pag.event_ts.resize(n);
  auto slots_of = [&](size_t w) {
    const uint32_t s = scan[w].slot;
    return NodeSlots{pag.node_ts.data() + s, pag.edge_type.data() + s, pag.edge_op.data() + s,
                     pag.edge_instance.data() + s};
  };
  const int64_t h = options.gap_threshold_ns;

  // What one thread's share of the workers produced.
  struct ScanOutput {
    std::vector<HalfEdge> sends, recvs;
    std::vector<IssueAt> issues;
    size_t bad_event = SIZE_MAX;  // first event going back in time
  };
  // Scans all events, handling only workers [w_begin, w_end).
  auto scan_workers = [&](uint32_t w_begin, uint32_t w_end, ScanOutput& out) {
    // Fault in this thread's part of the node arrays in one call per array (cheaper than
    // a page fault per 4 KiB, and done by each thread for its own part).
    const size_t lo = pag.event_begin[w_begin], hi = pag.event_begin[w_end];
    detail::prefault(pag.node_ts.data() + lo, (hi - lo) * sizeof(int64_t));
    detail::prefault(pag.event_ts.data() + lo, (hi - lo) * sizeof(int64_t));
    detail::prefault(pag.edge_op.data() + lo, (hi - lo) * sizeof(uint32_t));
    detail::prefault(pag.edge_instance.data() + lo, (hi - lo) * sizeof(uint32_t));
    detail::prefault(pag.edge_type.data() + lo, (hi - lo) * sizeof(uint8_t));
    // Room for every message event of these workers in either list: no regrowth.
    size_t sends = 0, recvs = 0;
    for (uint32_t w = w_begin; w < w_end; ++w) sends += counts[w].sends, recvs += counts[w].recvs;
    detail::reserve_prefaulted(out.sends, sends);
    detail::reserve_prefaulted(out.recvs, recvs);
    auto flush = [&](uint32_t w) {
      WorkerScan& ws = scan[w];
      uint32_t node = ws.builder.add(ws.pending, slots_of(w), out.issues, h);
      for (uint32_t i : ws.pending_messages) {
        const Event& e = events[i];
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
    };
    uint32_t last = kNone, w = 0;
    for (size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      if (e.worker != last) {
        last = e.worker;
        w = final_of(e.worker);
      }
      if (w < w_begin || w >= w_end) continue;
      WorkerScan& ws = scan[w];
      if (ws.pending.empty || e.ts != ws.pending.ts) {
        if (!ws.pending.empty) {
          if (e.ts < ws.pending.ts) {
            out.bad_event = i;
            return;
          }
          flush(w);
        }
        ws.pending.reset(e.ts);
      }
      ws.pending.add(e);
      if (e.is_message()) ws.pending_messages.push_back(static_cast<uint32_t>(i));
      pag.event_ts[ws.slot + ws.events++] = e.ts;
      ws.last_event = static_cast<uint32_t>(i);
    }
    for (uint32_t w2 = w_begin; w2 < w_end; ++w2) {
      if (!scan[w2].pending.empty) flush(w2);
      scan[w2].builder.finish(slots_of(w2), out.issues);
    }
  };

  // Large traces: split the workers into contiguous groups of about equal event counts,
  // one per thread. Every thread reads all events but handles only its workers, so the
  // result is the same as with one thread.
  unsigned threads = options.threads;
  if (threads == 0)
    threads = n >= (size_t{1} << 20)
                  ? std::min(4u, std::max(1u, std::thread::hardware_concurrency()))
                  : 1;
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
  std::vector<ScanOutput> outputs(split.size() - 1);
  run_parallel(static_cast<unsigned>(outputs.size()),
               [&](unsigned t) { scan_workers(split[t], split[t + 1], outputs[t]); });
  size_t bad = SIZE_MAX;
  for (const ScanOutput& o : outputs) bad = std::min(bad, o.bad_event);
  if (bad != SIZE_MAX) {
    const Event& e = events[bad];
    const WorkerScan& ws = scan[final_of(e.worker)];
    throw TraceError(trace.location(bad), "order",
                     fmt::format("events of worker {} go back in time: ts {} after {} ({})",
                                 e.worker, e.ts, ws.pending.ts, trace.location(ws.last_event)));
  }
  std::vector<std::vector<HalfEdge>> send_lists, recv_lists;
  std::vector<IssueAt> issues;
  for (ScanOutput& o : outputs) {
    send_lists.push_back(std::move(o.sends));
    recv_lists.push_back(std::move(o.recvs));
    issues.insert(issues.end(), o.issues.begin(), o.issues.end());
  }
  outputs.clear();

  // Compact the node ranges in place (each moves left, in order).
  std::vector<uint32_t> node_base(W);
  pag.worker_begin.assign(W + 1, 0);
  uint32_t total = 0;
  for (uint32_t w = 0; w < W; ++w) {
    const uint32_t from = scan[w].slot, cnt = scan[w].builder.count();
    node_base[w] = total;
    pag.worker_begin[w] = total;
    if (from != total) {
      std::copy_n(pag.node_ts.begin() + from, cnt, pag.node_ts.begin() + total);
      std::copy_n(pag.edge_type.begin() + from, cnt, pag.edge_type.begin() + total);
      std::copy_n(pag.edge_op.begin() + from, cnt, pag.edge_op.begin() + total);
      std::copy_n(pag.edge_instance.begin() + from, cnt, pag.edge_instance.begin() + total);
    }
    for (uint32_t j = 0; j < cnt; ++j) {
      uint32_t& inst = pag.edge_instance[total + j];
      if (inst != kNone) inst += total;
    }
    total += cnt;
  }
  pag.worker_begin[W] = total;
  pag.node_ts.resize(total);
  pag.edge_type.resize(total);
  pag.edge_op.resize(total);
  pag.edge_instance.resize(total);
  for (auto* lists : {&send_lists, &recv_lists})
    for (auto& list : *lists)
      for (HalfEdge& e : list) e.node += node_base[e.worker];

  match_messages(pag, send_lists, recv_lists, issues);
  std::stable_sort(issues.begin(), issues.end(), [](const IssueAt& a, const IssueAt& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.issue < b.issue;
  });
  pag.issues = std::move(issues);
  if (n > 0) {
    pag.first_ts = INT64_MAX;
    pag.last_ts = INT64_MIN;
    for (uint32_t k = 0; k < W; ++k) {
      if (pag.event_begin[k] == pag.event_begin[k + 1]) continue;
      pag.first_ts = std::min(pag.first_ts, pag.event_ts[pag.event_begin[k]]);
      pag.last_ts = std::max(pag.last_ts, pag.event_ts[pag.event_begin[k + 1] - 1]);
    }
  }
  return pag;
}

}  // namespace snailtrail
