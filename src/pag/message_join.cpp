#include "pag/message_join.hpp"

#include <algorithm>
#include <span>
#include <thread>

#include "pag/radix_sort.hpp"
#include "trace/parallel.hpp"

namespace snailtrail::detail {
namespace {

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

// The half messages of all lists scattered into partitions by key hash: partition p is
// items[begin[p], begin[p + 1]).
struct Partitions {
  BigVector<HalfEdge> items;  // BigVector: resize does not zero them
  std::vector<size_t> begin;

  std::span<const HalfEdge> part(size_t p) const {
    return std::span<const HalfEdge>(items.data() + begin[p], begin[p + 1] - begin[p]);
  }
};

size_t partition_of(const HalfEdge& h, int bits) {
  return bits == 0 ? 0 : key_hash(h.sender, h.receiver, h.correlator) >> (64 - bits);
}

// Scatters the lists (one per scanning thread, each on its own thread) into 2^bits
// partitions; stable, so each key's half messages, which all come from one worker and
// so from one list, keep time order.
void scatter(std::vector<std::vector<HalfEdge>>& lists, int bits, unsigned cap, bool asked,
             Partitions& out) {
  const size_t parts = size_t{1} << bits;
  const size_t L = lists.size();
  std::vector<std::vector<uint16_t>> part(L);  // each element's partition, hashed once
  std::vector<std::vector<size_t>> fill(L, std::vector<size_t>(parts + 1, 0));
  size_t total = 0;
  for (const auto& l : lists) total += l.size();
  const unsigned threads = asked || total >= (size_t{1} << 16)
                               ? std::max(1u, std::min(cap, static_cast<unsigned>(L)))
                               : 1;
  run_parallel(threads, [&](unsigned t) {
    for (size_t l = t; l < L; l += threads) {
      part[l].resize(lists[l].size());
      for (size_t k = 0; k < lists[l].size(); ++k) {
        part[l][k] = static_cast<uint16_t>(partition_of(lists[l][k], bits));
        ++fill[l][part[l][k]];
      }
    }
  });
  // Partition p holds list 0's elements of p, then list 1's, ...
  out.begin.assign(parts + 1, 0);
  size_t at = 0;
  for (size_t p = 0; p < parts; ++p) {
    out.begin[p] = at;
    for (size_t l = 0; l < L; ++l) {
      const size_t count = fill[l][p];
      fill[l][p] = at;
      at += count;
    }
  }
  out.begin[parts] = at;
  out.items.resize(total);
  run_parallel(threads, [&](unsigned t) {
    for (size_t l = t; l < L; l += threads) {
      for (size_t k = 0; k < lists[l].size(); ++k) out.items[fill[l][part[l][k]]++] = lists[l][k];
      std::vector<HalfEdge>().swap(lists[l]);
    }
  });
}

// Joins the partitions into pag.messages (unsorted) and `issues`. Partitions are
// independent: threads take contiguous ranges of them, and their outputs are
// concatenated in partition order.
void join_partitions(Pag& pag, const Partitions& sends, const Partitions& recvs, size_t parts,
                     unsigned cap, bool asked, std::vector<IssueAt>& issues) {
  const unsigned threads = asked || sends.items.size() + recvs.items.size() >= (size_t{1} << 18)
                               ? std::min<unsigned>({cap, static_cast<unsigned>(parts)})
                               : 1;
  std::vector<std::vector<Message>> found(threads);
  std::vector<std::vector<IssueAt>> found_issues(threads);
  run_parallel(threads, [&](unsigned t) {
    const size_t p_begin = parts * t / threads, p_end = parts * (t + 1) / threads;
    found[t].reserve(sends.begin[p_end] - sends.begin[p_begin]);  // at most one per send
    for (size_t p = p_begin; p < p_end; ++p)
      join_partition(pag, sends.part(p), recvs.part(p), found_issues[t], found[t]);
  });
  size_t total = 0;
  for (const auto& f : found) total += f.size();
  pag.messages.reserve(total);
  for (unsigned t = 0; t < threads; ++t) {
    pag.messages.insert(pag.messages.end(), found[t].begin(), found[t].end());
    issues.insert(issues.end(), found_issues[t].begin(), found_issues[t].end());
  }
}

// Sorts messages by send time with a radix sort, then each run of equal send times by
// (receive time, nodes, type) — a total order, so it never depends on how the
// receives were collected (e.g. by how many threads).
void sort_messages(BigVector<Message>& messages, unsigned cap, bool asked) {
  if (messages.empty()) return;
  std::vector<KeyValue<uint32_t>> keys(messages.size()), scratch;
  int64_t min_src = INT64_MAX;
  for (const Message& m : messages) min_src = std::min(min_src, m.src_ts);
  for (uint32_t i = 0; i < keys.size(); ++i)
    keys[i] = {static_cast<uint64_t>(messages[i].src_ts - min_src), i};
  // Two halves radix-sorted on two threads and merged (ties from the first half first)
  // give the same order as one stable sort.
  const size_t half =
      cap >= 2 && (asked || keys.size() >= (size_t{1} << 16)) ? keys.size() / 2 : keys.size();
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
  BigVector<Message> sorted(messages.size());
  const unsigned gather_threads = upper.empty() ? 1 : 2;
  run_parallel(gather_threads, [&](unsigned t) {
    const size_t lo = keys.size() * t / gather_threads, hi = keys.size() * (t + 1) / gather_threads;
    for (size_t i = lo; i < hi; ++i) sorted[i] = messages[keys[i].value];
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
  messages.swap(sorted);
}

}  // namespace

// The half messages are scattered into partitions by key hash so that each partition's
// hash table stays in cache (a radix-partitioned hash join), then messages are sorted by
// send time.
void match_messages(Pag& pag, std::vector<std::vector<HalfEdge>>& send_lists,
                    std::vector<std::vector<HalfEdge>>& recv_lists, std::vector<IssueAt>& issues,
                    unsigned threads) {
  // Asked for: that many threads whatever the size (so tests cover every split); else up
  // to 4, for large inputs only.
  const bool asked = threads > 0;
  const unsigned cap =
      asked ? threads : std::min(4u, std::max(1u, std::thread::hardware_concurrency()));
  size_t n_sends = 0;
  for (const auto& l : send_lists) n_sends += l.size();
  int bits = 0;
  while (bits < 10 && (n_sends >> bits) > 4096) ++bits;
  while (asked && bits < 10 && (size_t{1} << bits) < 2 * size_t{cap}) ++bits;
  Partitions sends, recvs;
  scatter(send_lists, bits, cap, asked, sends);
  scatter(recv_lists, bits, cap, asked, recvs);
  join_partitions(pag, sends, recvs, size_t{1} << bits, cap, asked, issues);
  sort_messages(pag.messages, cap, asked);
}

}  // namespace snailtrail::detail
