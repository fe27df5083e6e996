// Grouping the records of plain logs into requests (flows.hpp): by --id, or by the
// identifiers inferred from the templates' parameters (identifiers.cpp). Internal to
// src/logs: the flows' steps (flows.cpp) read the groups.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
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

// Inferred identifiers from the records' messages; sets out.id_source, id_slots, sampled
// and their counts. With copy_values the identifiers are copied (into out.id_arena): the
// messages need not outlive the call.
void group_by_identifiers(const LogSet& logs, const MessageSource& messages, bool copy_values,
                          FlowSet& out, Grouping& g);

}  // namespace snailtrail::logs::detail
