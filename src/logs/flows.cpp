// Request identifiers and flows (flows.hpp).
#include "logs/flows.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "trace/setting_error.hpp"

namespace snailtrail::logs {
namespace {

// Small counters (all digits, dots, signs: "12", "0.0", "-3") collide across requests:
// only values with a letter or at least 6 digits can identify one.
bool id_like(std::string_view v) {
  size_t digits = 0;
  bool letter = false;
  for (char c : v) {
    if (c >= '0' && c <= '9')
      ++digits;
    else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      letter = true;
  }
  return digits > 0 && (letter || digits >= 6);
}

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

struct VecHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

}  // namespace

FlowSet build_flows(const LogSet& logs, const FlowOptions& options) {
  FlowSet out;
  const size_t n = logs.records.size();
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> key(n, kNone);  // per record: its group key (before union-find)
  std::vector<std::string> key_names;
  UnionFind uf;
  std::vector<Token> tokens;
  std::vector<std::string_view> params;

  if (!options.id_regex.empty()) {
    out.id_source = "regex";
    std::regex re;
    try {
      re = std::regex(options.id_regex, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw UsageError({field("id_regex"), " '" + options.id_regex + "': " + e.what()});
    }
    std::unordered_map<std::string, uint32_t> ids;
    std::match_results<std::string_view::const_iterator> m;
    for (size_t r = 0; r < n; ++r) {
      const std::string_view c = logs.records[r].content;
      if (!std::regex_search(c.begin(), c.end(), m, re)) continue;
      const size_t g = m.size() > 1 && m[1].matched ? 1 : 0;
      std::string v = m[g].str();
      auto [it, fresh] = ids.try_emplace(v, static_cast<uint32_t>(key_names.size()));
      if (fresh) key_names.push_back(std::move(v)), uf.add();
      key[r] = it->second;
    }
  } else if (!options.by_thread) {
    // Pass 1: every id-like parameter value, per slot.
    const size_t clusters = logs.drain.cluster_count();
    std::vector<uint32_t> slot_base(clusters + 1, 0);
    for (size_t c = 0; c < clusters; ++c) {
      uint32_t k = 0;
      for (const std::string& t : logs.drain.template_tokens(static_cast<uint32_t>(c)))
        k += t.find(kWildcard) != std::string::npos;
      slot_base[c + 1] = slot_base[c] + k;
    }
    struct Value {
      uint64_t records = 0;
      uint32_t first_cluster = kNone;
      bool multi_cluster = false;
      std::vector<uint32_t> slots;  // distinct, at most 32
    };
    std::unordered_map<std::string_view, uint32_t> value_ids;
    std::vector<Value> values;
    std::vector<std::string_view> value_text;
    std::vector<uint64_t> rec_begin(n + 1, 0);
    std::vector<std::pair<uint32_t, uint32_t>> rec_values;  // (value, slot)
    for (size_t r = 0; r < n; ++r) {
      const LogRecord& rec = logs.records[r];
      logs.drain.params(rec.cluster, logs.tokens(rec, tokens), params);
      for (size_t k = 0; k < params.size(); ++k) {
        const std::string_view v = params[k];
        if (!id_like(v)) continue;
        auto [it, fresh] = value_ids.try_emplace(v, static_cast<uint32_t>(values.size()));
        if (fresh) values.emplace_back(), value_text.push_back(v);
        Value& val = values[it->second];
        const uint32_t slot = slot_base[rec.cluster] + static_cast<uint32_t>(k);
        // A value counts once per record.
        bool dup = false;
        for (uint64_t j = rec_begin[r]; j < rec_values.size(); ++j)
          dup |= rec_values[j].first == it->second;
        if (!dup) ++val.records;
        if (val.first_cluster == kNone)
          val.first_cluster = rec.cluster;
        else if (val.first_cluster != rec.cluster)
          val.multi_cluster = true;
        if (val.slots.size() < 32 &&
            std::find(val.slots.begin(), val.slots.end(), slot) == val.slots.end())
          val.slots.push_back(slot);
        rec_values.emplace_back(it->second, slot);
      }
      rec_begin[r + 1] = rec_values.size();
    }
    // Pass 2: identifier slots.
    const uint64_t hub = std::max<uint64_t>(64, n / 100);
    const size_t slots = slot_base[clusters];
    std::vector<IdSlot> stats(slots);
    for (size_t c = 0; c < clusters; ++c)
      for (uint32_t s = slot_base[c]; s < slot_base[c + 1]; ++s)
        stats[s].cluster = static_cast<uint32_t>(c), stats[s].position = s - slot_base[c];
    for (const Value& v : values)
      for (uint32_t s : v.slots) {
        ++stats[s].distinct;
        stats[s].recurring += v.multi_cluster && v.records <= hub;
      }
    for (const auto& [v, s] : rec_values) ++stats[s].records;
    std::vector<bool> is_id(slots, false);
    for (size_t s = 0; s < slots; ++s)
      if (stats[s].recurring > 0 && stats[s].recurring * 10 >= stats[s].distinct * 3) {
        is_id[s] = true;
        out.id_slots.push_back(stats[s]);
      }
    // Kinds of identifier: slots that share a value hold the same kind (block ids,
    // request ids, node addresses, ...). A kind with more distinct values is finer.
    UnionFind kinds;
    for (size_t s = 0; s < slots; ++s) kinds.add();
    for (const Value& v : values)
      for (size_t k = 1; k < v.slots.size(); ++k)
        if (is_id[v.slots[0]] && is_id[v.slots[k]]) kinds.unite(v.slots[0], v.slots[k]);
    std::vector<uint64_t> kind_values(slots, 0);
    std::vector<uint32_t> kind_of_value(values.size(), kNone);
    for (size_t v = 0; v < values.size(); ++v)
      for (uint32_t s : values[v].slots)
        if (is_id[s]) {
          kind_of_value[v] = kinds.find(s);
          ++kind_values[kind_of_value[v]];
          break;
        }
    // Pass 3: union-find over identifier values, as lprof's request accumulators: two
    // groups join only if they do not conflict (hold different values of one kind).
    std::vector<uint32_t> uf_of(values.size(), kNone);
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> held;  // per uf node: (kind, value)
    auto compatible = [&](uint32_t a, uint32_t b) {
      for (const auto& [ka, va] : held[a])
        for (const auto& [kb, vb] : held[b])
          if (ka == kb && va != vb) return false;
      return true;
    };
    std::vector<uint32_t> ids;
    for (size_t r = 0; r < n; ++r) {
      ids.clear();
      for (uint64_t j = rec_begin[r]; j < rec_begin[r + 1]; ++j) {
        const auto [v, s] = rec_values[j];
        if (!is_id[s] || values[v].records > hub) continue;
        // (A value seen in more than 32 slots may have this one unrecorded.)
        if (kind_of_value[v] == kNone) kind_of_value[v] = kinds.find(s);
        if (std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
      }
      if (ids.empty()) continue;
      // The finest identifier first: the record belongs to its group.
      std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) {
        return kind_values[kind_of_value[a]] > kind_values[kind_of_value[b]];
      });
      for (uint32_t v : ids)
        if (uf_of[v] == kNone) {
          uf_of[v] = uf.add();
          key_names.emplace_back(value_text[v]);
          held.push_back({{kind_of_value[v], v}});
        }
      bool conflict = false;
      for (size_t k = 1; k < ids.size(); ++k) {
        uint32_t a = uf.find(uf_of[ids[0]]), b = uf.find(uf_of[ids[k]]);
        if (a == b) continue;
        if (!compatible(a, b)) {
          conflict = true;
          continue;
        }
        uf.unite(a, b);
        const uint32_t root = uf.find(a), other = root == a ? b : a;
        held[root].insert(held[root].end(), held[other].begin(), held[other].end());
        held[other].clear();
        held[other].shrink_to_fit();
      }
      out.multi_id_records += conflict;
      key[r] = uf_of[ids[0]];
    }
    out.id_source = out.id_slots.empty() ? "none" : "auto";
  }
  if (options.by_thread || (options.id_regex.empty() && out.id_slots.empty())) {
    // Fallback: (node, thread), if the header has a thread.
    bool any_thread = false;
    for (const auto& t : logs.threads) any_thread |= !t.second.empty();
    key_names.clear();
    uf = UnionFind{};
    std::fill(key.begin(), key.end(), kNone);
    if (any_thread) {
      out.id_source = "thread";
      for (const auto& t : logs.threads) {
        key_names.push_back(logs.nodes[t.first] + "/" + t.second);
        uf.add();
      }
      for (size_t r = 0; r < n; ++r)
        if (!logs.threads[logs.records[r].thread].second.empty()) key[r] = logs.records[r].thread;
    } else {
      out.id_source = "none";
    }
  }

  // Flows: components in order of their first record.
  std::vector<uint32_t> flow_of_root(uf.parent.size(), kNone);
  for (size_t r = 0; r < n; ++r) {
    if (key[r] == kNone) {
      ++out.records_without_id;
      continue;
    }
    const uint32_t root = uf.find(key[r]);
    if (flow_of_root[root] == kNone) {
      flow_of_root[root] = static_cast<uint32_t>(out.flows.size());
      out.flows.emplace_back();
      out.flows.back().id = key_names[key[r]];
    }
    out.flows[flow_of_root[root]].records.push_back(static_cast<uint32_t>(r));
    ++out.records_in_flows;
  }
  // Order within a flow: by time, then file and line. Logs with coarse clocks (seconds)
  // tie often, across nodes too; ties are then ordered by the precedence of their
  // templates learnt from the untied pairs of all flows (lprof's temporal order, inferred
  // instead of read from the code): x goes before y if template(x) was seen strictly
  // before template(y) more often than after.
  for (Flow& f : out.flows)
    std::stable_sort(f.records.begin(), f.records.end(), [&](uint32_t a, uint32_t b) {
      const LogRecord &x = logs.records[a], &y = logs.records[b];
      if (x.ts != y.ts) return x.ts < y.ts;
      if (x.file != y.file) return x.file < y.file;
      return x.line < y.line;
    });
  std::unordered_map<uint64_t, int64_t> before;  // (a, b) -> #(a strictly before b)
  auto pair_key = [](uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; };
  constexpr size_t kWindow = 8;  // pairs up to 8 records apart
  for (const Flow& f : out.flows)
    for (size_t i = 0; i < f.records.size(); ++i)
      for (size_t j = i + 1; j < f.records.size() && j <= i + kWindow; ++j) {
        const LogRecord &x = logs.records[f.records[i]], &y = logs.records[f.records[j]];
        if (x.ts < y.ts && x.cluster != y.cluster) ++before[pair_key(x.cluster, y.cluster)];
      }
  std::vector<std::pair<int64_t, uint32_t>> run;
  for (Flow& f : out.flows)
    for (size_t i = 0; i < f.records.size();) {
      size_t j = i + 1;
      const int64_t ts = logs.records[f.records[i]].ts;
      while (j < f.records.size() && logs.records[f.records[j]].ts == ts) ++j;
      if (j - i >= 2 && j - i <= 64) {
        run.clear();
        for (size_t a = i; a < j; ++a) {
          int64_t score = 0;
          const uint32_t ca = logs.records[f.records[a]].cluster;
          for (size_t b = i; b < j; ++b) {
            const uint32_t cb = logs.records[f.records[b]].cluster;
            if (ca == cb) continue;
            const auto ab = before.find(pair_key(ca, cb)), ba = before.find(pair_key(cb, ca));
            const int64_t n_ab = ab == before.end() ? 0 : ab->second;
            const int64_t n_ba = ba == before.end() ? 0 : ba->second;
            score += (n_ab > n_ba) - (n_ba > n_ab);
          }
          run.emplace_back(-score, f.records[a]);
        }
        std::stable_sort(run.begin(), run.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
        for (size_t a = i; a < j; ++a) f.records[a] = run[a - i].second;
      }
      i = j;
    }
  std::unordered_map<std::vector<uint32_t>, uint32_t, VecHash> sig_ids;
  std::unordered_map<uint64_t, uint32_t> edge_ids;
  std::vector<uint32_t> seq, nodes;
  for (uint32_t fi = 0; fi < out.flows.size(); ++fi) {
    Flow& f = out.flows[fi];
    f.start = logs.records[f.records.front()].ts;
    f.end = logs.records[f.records.back()].ts;
    seq.clear();
    nodes.clear();
    for (size_t k = 0; k < f.records.size(); ++k) {
      const LogRecord& r = logs.records[f.records[k]];
      seq.push_back(r.cluster);
      if (std::find(nodes.begin(), nodes.end(), r.node) == nodes.end()) nodes.push_back(r.node);
      if (k == 0) continue;
      const LogRecord& p = logs.records[f.records[k - 1]];
      const uint64_t ek = (uint64_t{p.cluster} << 32) | r.cluster;
      auto [it, fresh] = edge_ids.try_emplace(ek, static_cast<uint32_t>(out.edges.size()));
      if (fresh) out.edges.push_back({p.cluster, r.cluster, 0, 0, 0, 0});
      FlowEdge& e = out.edges[it->second];
      ++e.count;
      e.cross_node += p.node != r.node;
      e.total_ns = saturating_add(e.total_ns, r.ts - p.ts);
      e.max_ns = std::max(e.max_ns, r.ts - p.ts);
    }
    f.node_count = static_cast<uint32_t>(nodes.size());
    auto [it, fresh] = sig_ids.try_emplace(seq, static_cast<uint32_t>(out.signatures.size()));
    if (fresh) {
      out.signatures.emplace_back();
      out.signatures.back().templates = seq;
      out.signatures.back().example = fi;
    }
    FlowSignature& s = out.signatures[it->second];
    ++s.count;
    s.total_ns = saturating_add(s.total_ns, f.latency());
    f.signature = it->second;
  }
  std::stable_sort(out.edges.begin(), out.edges.end(),
                   [](const FlowEdge& a, const FlowEdge& b) { return a.count > b.count; });
  std::vector<uint32_t> order(out.signatures.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return out.signatures[a].count > out.signatures[b].count;
  });
  std::vector<uint32_t> rank(order.size());
  std::vector<FlowSignature> sorted;
  for (uint32_t i = 0; i < order.size(); ++i) {
    rank[order[i]] = i;
    sorted.push_back(std::move(out.signatures[order[i]]));
  }
  out.signatures = std::move(sorted);
  for (Flow& f : out.flows) f.signature = rank[f.signature];
  return out;
}

}  // namespace snailtrail::logs
