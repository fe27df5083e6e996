// Grouping the records of plain logs into requests (flows.hpp): by --id, or by the
// identifiers inferred from the templates' parameters (identifiers.cpp). Internal to
// src/logs: the flows' steps (flows.cpp) read the groups.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "logs/flows.hpp"

namespace snailtrail::logs::detail {

constexpr uint32_t kNone = UINT32_MAX;

struct UnionFind {
  std::vector<uint32_t> parent;
  uint32_t add() {
    parent.push_back(static_cast<uint32_t>(parent.size()));
    return parent.back();
  }
  uint32_t find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(uint32_t a, uint32_t b) {
    a = find(a), b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

// Records grouped into requests: key[r] is record r's union-find node (kNone: in no
// request), name(node) the identifier that named the node.
struct Grouping {
  std::vector<uint32_t> key;
  std::vector<std::string_view> key_names;  // into the logs, or into `owned`
  // Or, for copied identifiers (millions on logs of unique ids), their handles in
  // key_arena (FlowSet::id_arena): 4 bytes a node instead of a 16-byte view.
  std::vector<uint32_t> key_texts;
  const OffsetArena* key_arena = nullptr;
  std::deque<std::string> owned;
  UnionFind uf;
  explicit Grouping(size_t records) : key(records, kNone) {}
  std::string_view name(uint32_t node) const {
    return key_arena ? key_arena->text(key_texts[node]) : key_names[node];
  }
  void reset() {
    key_names.clear();
    key_texts.clear();
    key_arena = nullptr;
    owned.clear();
    uf = UnionFind{};
    std::fill(key.begin(), key.end(), kNone);
  }
};

// Appends, growing by a quarter instead of doubling: the census's per-value and
// per-pair arrays are most of `flows`' peak on logs of unique ids (3.2 M values at 8 M
// lines of scripts/logs-bench.sh's log), and doubling left up to half of them spare.
template <class T>
void push_grown(std::vector<T>& v, const T& x) {
  if (v.size() == v.capacity()) v.reserve(v.size() + v.size() / 4 + 1024);
  v.push_back(x);
}

// Text -> index (identifiers.cpp): open addressing over indices + 1 (0 = empty), at most
// half full (a map node per value was most of `flows`' memory on logs of unique tokens).
// The texts are copied, 4 bytes a value and the text in an OffsetArena (messages read
// again from the files do not stay), or viewed (kept messages: 16 bytes). No hash is
// kept per value (4 bytes, 16 MB at 8 M lines of scripts/logs-bench.sh's log): growing
// hashes the held texts again with `Hash`, which callers' h must equal.
template <class Hash>
class ValueTable {
 public:
  explicit ValueTable(bool copy, Hash hash = {}) : copy_(copy), hash_(hash) {}

  uint32_t intern(std::string_view v, size_t h, bool& fresh) {
    if ((size() + 1) * 2 > table_.size()) rehash(std::max<size_t>(1024, table_.size() * 2));
    const size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint32_t id = table_[i];
      fresh = id == 0;
      if (fresh) {
        table_[i] = static_cast<uint32_t>(size() + 1);
        if (copy_)
          push_grown(handle_, arena_.add(v));
        else
          push_grown(view_, v);
        return table_[i] - 1;
      }
      if (text(id - 1) == v) return id - 1;
    }
  }
  uint32_t find(std::string_view v, size_t h) const {
    if (table_.empty()) return UINT32_MAX;
    const size_t mask = table_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint32_t id = table_[i];
      if (id == 0) return UINT32_MAX;
      if (text(id - 1) == v) return id - 1;
    }
  }
  size_t size() const { return copy_ ? handle_.size() : view_.size(); }
  bool copies() const { return copy_; }
  uint32_t handle(size_t id) const { return handle_[id]; }  // copies(): its text in the arena
  std::string_view text(size_t id) const { return copy_ ? arena_.text(handle_[id]) : view_[id]; }

  // Keeps the values keep(id) says, renumbered in order; returns old -> new index
  // (UINT32_MAX: dropped). Their copies move to a new arena, so the dropped ones are freed.
  template <class Keep>
  std::vector<uint32_t> keep_if(Keep keep) {
    std::vector<uint32_t> to(size(), UINT32_MAX);
    std::vector<uint32_t> kept_handle;
    std::vector<std::string_view> kept_view;
    OffsetArena arena;
    uint32_t n = 0;
    for (size_t id = 0; id < size(); ++id)
      if (keep(id)) {
        to[id] = n++;
        if (copy_)
          kept_handle.push_back(arena.add(text(id)));
        else
          kept_view.push_back(view_[id]);
      }
    handle_.swap(kept_handle);
    view_.swap(kept_view);
    arena_ = std::move(arena);
    rehash(table_.size());
    return to;
  }
  OffsetArena take_arena() { return std::move(arena_); }
  // Frees the lookup (4 to 8 bytes a value; find then finds nothing, intern must not be
  // called): the texts stay.
  void drop_lookup() { std::vector<uint32_t>().swap(table_); }

 private:
  void rehash(size_t slots) {
    table_.assign(slots, 0);
    const size_t mask = slots - 1;
    for (uint32_t id = 0; id < size(); ++id) {
      size_t i = hash_(text(id)) & mask;
      while (table_[i] != 0) i = (i + 1) & mask;
      table_[i] = id + 1;
    }
  }

  bool copy_;
  std::vector<uint32_t> handle_;        // copy_: per value its text in arena_
  std::vector<std::string_view> view_;  // else: per value its text
  Hash hash_;
  std::vector<uint32_t> table_;
  OffsetArena arena_;
};

// A record's (value, slot) pair; the slot's top bit marks a record's first pair.
struct RecordPair {
  static constexpr uint32_t kFirst = uint32_t{1} << 31;
  uint32_t value = 0, slot_bits = 0;
  uint32_t slot() const { return slot_bits & ~kFirst; }
};

// Every record's (value, slot) pairs in record order (the exact census, identifiers.cpp),
// 8 bytes a pair: no pair carries its record (4 bytes more); a bit per record says
// whether it has pairs, and its first pair is marked.
class RecordPairs {
 public:
  // Records ascending, a record's pairs together; slot < 2^31.
  void push(uint32_t record, uint32_t value, uint32_t slot) {
    if (slot >= RecordPair::kFirst) throw std::length_error("more than 2^31 parameter slots");
    if (record >= has_pairs_.size()) has_pairs_.resize(size_t{record} + 1, false);
    const bool first = !has_pairs_[record];
    has_pairs_[record] = true;
    push_grown(pairs_, RecordPair{value, slot | (first ? RecordPair::kFirst : 0)});
  }
  const std::vector<RecordPair>& pairs() const { return pairs_; }
  // visit(record, its pairs) for each record with pairs, in record order.
  template <class Visit>
  void each_record(Visit&& visit) const {
    size_t begin = 0;
    for (size_t r = 0; r < has_pairs_.size(); ++r) {
      if (!has_pairs_[r]) continue;
      size_t end = begin + 1;
      while (end < pairs_.size() && !(pairs_[end].slot_bits & RecordPair::kFirst)) ++end;
      visit(static_cast<uint32_t>(r),
            std::span<const RecordPair>(pairs_.data() + begin, end - begin));
      begin = end;
    }
  }
  void clear() {
    std::vector<RecordPair>().swap(pairs_);
    std::vector<bool>().swap(has_pairs_);
  }

 private:
  std::vector<RecordPair> pairs_;
  std::vector<bool> has_pairs_;  // per record
};

// --id REGEX: the first match in every whole line (its first group if any).
void group_by_regex(const LogSet& logs, const std::string& id_regex, Grouping& g);
// The records' messages, in record order: visit(record, message) for each record.
using MessageVisitor = std::function<void(uint32_t, std::string_view)>;
using MessageSource = std::function<void(const MessageVisitor&)>;
// The records, in record order: kept (LogSet::records), packed (packed_records) or read
// again (reread_records).
using RecordVisitor = std::function<void(uint32_t, const LogRecord&)>;
using RecordSource = std::function<void(const RecordVisitor&)>;
RecordSource kept_records(const LogSet& logs);

// Inferred identifiers from the records' messages, given three times (census, identifier
// values, grouping); sets out.id_source, id_slots, sampled and their counts. With
// copy_values the identifiers are copied (into out.id_arena): the messages need not
// outlive the call. The census holds at most census_cap values (FlowOptions).
void group_by_identifiers(const LogSet& logs, const MessageSource& messages, bool copy_values,
                          size_t census_cap, FlowSet& out, Grouping& g);

// Groups by --id, inferred identifiers (from `messages`) or threads (from `records`,
// flows.cpp); sets out.id_source and the identifiers' fields.
void group_records(const LogSet& logs, const FlowOptions& options, const MessageSource& messages,
                   const RecordSource& records, bool copy_values, FlowSet& out, Grouping& g);

struct VecHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Order within a flow: by time, then file and line. Logs with coarse clocks (seconds)
// tie often, across nodes too; ties are then ordered by the precedence of their
// templates learnt from the untied pairs of all flows (lprof's temporal order, inferred
// instead of read from the code): x goes before y if template(x) was seen strictly
// before template(y) more often than after. Learning needs every flow sorted by time
// first; breaking ties then needs all that was learnt (flows.cpp).
class FlowOrder {
 public:
  // The records the flows' indices point to (LogSet::records, or the open ones held).
  explicit FlowOrder(const std::vector<LogRecord>& records) : records_(records) {}
  void operator()(std::vector<Flow>& flows);  // all three steps on all flows
  void sort_by_time(std::span<uint32_t> records) const;
  void learn_precedence(std::span<const uint32_t> records);  // after sort_by_time
  void break_ties(std::span<uint32_t> records);              // after all learning

 private:
  static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }
  int64_t count_before(uint32_t a, uint32_t b) const;
  void sort_run(std::span<uint32_t> records, size_t i, size_t j);

  const std::vector<LogRecord>& records_;
  std::unordered_map<uint64_t, int64_t> before_;  // (a, b) -> #(a strictly before b)
  std::vector<std::pair<int64_t, uint32_t>> run_;
};

}  // namespace snailtrail::logs::detail
