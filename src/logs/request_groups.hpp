// Grouping the records of plain logs into requests (flows.hpp): by --id, or by the
// identifiers inferred from the templates' parameters (identifiers.cpp). Internal to
// src/logs: the flows' steps (flows.cpp) read the groups.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
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
// request), key_names[node] the identifier that named the node.
struct Grouping {
  std::vector<uint32_t> key;
  std::vector<std::string_view> key_names;  // into the logs, or into `owned`
  std::deque<std::string> owned;
  UnionFind uf;
  explicit Grouping(size_t records) : key(records, kNone) {}
  void reset() {
    key_names.clear();
    owned.clear();
    uf = UnionFind{};
    std::fill(key.begin(), key.end(), kNone);
  }
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
