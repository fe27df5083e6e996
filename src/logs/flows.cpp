// Request identifiers and flows (flows.hpp). build_flows is four steps: group the records
// into requests (by --id, by inferred identifiers or by thread), collect the groups into
// flows, order each flow's records, and count the flows' edges and signatures.
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

constexpr uint32_t kNone = UINT32_MAX;

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

// Records grouped into requests: key[r] is record r's union-find node (kNone: in no
// request), key_names[node] the identifier that named the node.
struct Grouping {
  std::vector<uint32_t> key;
  std::vector<std::string> key_names;
  UnionFind uf;
  explicit Grouping(size_t records) : key(records, kNone) {}
  void reset() {
    key_names.clear();
    uf = UnionFind{};
    std::fill(key.begin(), key.end(), kNone);
  }
};

// --id REGEX: the first match of every message (its first group if any) names its request.
void group_by_regex(const LogSet& logs, const std::string& id_regex, Grouping& g) {
  std::regex re;
  try {
    re = std::regex(id_regex, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw UsageError({field("id_regex"), " '" + id_regex + "': " + e.what()});
  }
  std::unordered_map<std::string, uint32_t> ids;
  std::match_results<std::string_view::const_iterator> m;
  for (size_t r = 0; r < logs.records.size(); ++r) {
    const std::string_view c = logs.records[r].content;
    if (!std::regex_search(c.begin(), c.end(), m, re)) continue;
    const size_t group = m.size() > 1 && m[1].matched ? 1 : 0;
    std::string v = m[group].str();
    auto [it, fresh] = ids.try_emplace(v, static_cast<uint32_t>(g.key_names.size()));
    if (fresh) g.key_names.push_back(std::move(v)), g.uf.add();
    g.key[r] = it->second;
  }
}

// Identifier inference, pass 1: every id-like parameter value, the template slots it
// occurs in (a slot is a (template, parameter position)), and the values of each record.
struct ParamValue {
  uint64_t records = 0;
  uint32_t first_cluster = kNone;
  bool multi_cluster = false;
  std::vector<uint32_t> slots;  // distinct, at most 32
};
struct ValueCensus {
  std::vector<uint32_t> slot_base;  // per template: its first slot; [clusters] = all slots
  std::vector<ParamValue> values;
  std::vector<std::string_view> value_text;
  std::vector<uint64_t> rec_begin;                           // per record: into rec_values
  std::vector<std::pair<uint32_t, uint32_t>> rec_values;     // (value, slot)
  std::unordered_map<std::string_view, uint32_t> value_ids;  // text -> value
  size_t slots() const { return slot_base.back(); }
};

std::vector<uint32_t> slot_bases(const Drain& drain) {
  const size_t clusters = drain.cluster_count();
  std::vector<uint32_t> slot_base(clusters + 1, 0);
  for (size_t c = 0; c < clusters; ++c) {
    uint32_t k = 0;
    for (const std::string& t : drain.template_tokens(static_cast<uint32_t>(c)))
      k += t.find(kWildcard) != std::string::npos;
    slot_base[c + 1] = slot_base[c] + k;
  }
  return slot_base;
}

ValueCensus census_values(const LogSet& logs) {
  const size_t n = logs.records.size();
  ValueCensus vc;
  vc.slot_base = slot_bases(logs.drain);
  vc.rec_begin.assign(n + 1, 0);
  std::vector<Token> tokens;
  std::vector<std::string_view> params;
  for (size_t r = 0; r < n; ++r) {
    const LogRecord& rec = logs.records[r];
    logs.drain.params(rec.cluster, logs.tokens(rec, tokens), params);
    for (size_t k = 0; k < params.size(); ++k) {
      const std::string_view v = params[k];
      if (!id_like(v)) continue;
      auto [it, fresh] = vc.value_ids.try_emplace(v, static_cast<uint32_t>(vc.values.size()));
      if (fresh) vc.values.emplace_back(), vc.value_text.push_back(v);
      ParamValue& val = vc.values[it->second];
      const uint32_t slot = vc.slot_base[rec.cluster] + static_cast<uint32_t>(k);
      // A value counts once per record.
      bool dup = false;
      for (uint64_t j = vc.rec_begin[r]; j < vc.rec_values.size(); ++j)
        dup |= vc.rec_values[j].first == it->second;
      if (!dup) ++val.records;
      if (val.first_cluster == kNone)
        val.first_cluster = rec.cluster;
      else if (val.first_cluster != rec.cluster)
        val.multi_cluster = true;
      if (val.slots.size() < 32 &&
          std::find(val.slots.begin(), val.slots.end(), slot) == val.slots.end())
        val.slots.push_back(slot);
      vc.rec_values.emplace_back(it->second, slot);
    }
    vc.rec_begin[r + 1] = vc.rec_values.size();
  }
  return vc;
}

// Pass 2: a slot holds identifiers if at least 30 % of its distinct values recur in
// another template and are not hubs (on more than `hub` records). Appends them to id_slots.
std::vector<bool> identifier_slots(const ValueCensus& vc, uint64_t hub,
                                   std::vector<IdSlot>& id_slots) {
  const size_t slots = vc.slots();
  std::vector<IdSlot> stats(slots);
  for (size_t c = 0; c + 1 < vc.slot_base.size(); ++c)
    for (uint32_t s = vc.slot_base[c]; s < vc.slot_base[c + 1]; ++s)
      stats[s].cluster = static_cast<uint32_t>(c), stats[s].position = s - vc.slot_base[c];
  for (const ParamValue& v : vc.values)
    for (uint32_t s : v.slots) {
      ++stats[s].distinct;
      stats[s].recurring += v.multi_cluster && v.records <= hub;
    }
  for (const auto& [v, s] : vc.rec_values) ++stats[s].records;
  std::vector<bool> is_id(slots, false);
  for (size_t s = 0; s < slots; ++s)
    if (stats[s].recurring > 0 && stats[s].recurring * 10 >= stats[s].distinct * 3) {
      is_id[s] = true;
      id_slots.push_back(stats[s]);
    }
  return is_id;
}

// Kinds of identifier: slots that share a value hold the same kind (block ids, request
// ids, node addresses, ...). A kind with more distinct values is finer.
struct IdKinds {
  UnionFind slots;                      // slots of one kind are united
  std::vector<uint64_t> kind_values;    // per kind (its root slot): distinct values
  std::vector<uint32_t> kind_of_value;  // per value: its kind, kNone if not an identifier
};

IdKinds identifier_kinds(const ValueCensus& vc, const std::vector<bool>& is_id) {
  IdKinds k;
  const size_t slots = vc.slots();
  for (size_t s = 0; s < slots; ++s) k.slots.add();
  for (const ParamValue& v : vc.values)
    for (size_t i = 1; i < v.slots.size(); ++i)
      if (is_id[v.slots[0]] && is_id[v.slots[i]]) k.slots.unite(v.slots[0], v.slots[i]);
  k.kind_values.assign(slots, 0);
  k.kind_of_value.assign(vc.values.size(), kNone);
  for (size_t v = 0; v < vc.values.size(); ++v)
    for (uint32_t s : vc.values[v].slots)
      if (is_id[s]) {
        k.kind_of_value[v] = k.slots.find(s);
        ++k.kind_values[k.kind_of_value[v]];
        break;
      }
  return k;
}

// std::stable_sort's order, without its buffer allocation for the few values of a record.
template <class Less>
void stable_sort_small(std::vector<uint32_t>& v, Less less) {
  if (v.size() > 16) return std::stable_sort(v.begin(), v.end(), less);
  for (size_t i = 1; i < v.size(); ++i) {
    const uint32_t x = v[i];
    size_t j = i;
    for (; j > 0 && less(x, v[j - 1]); --j) v[j] = v[j - 1];
    v[j] = x;
  }
}

// Pass 3: union-find over identifier values, as lprof's request accumulators: two groups
// join only if they do not conflict (hold different values of one kind). A record goes
// to the group of its finest identifier. Returns the records whose values conflicted.
uint64_t join_requests(const ValueCensus& vc, const std::vector<bool>& is_id, uint64_t hub,
                       IdKinds& kinds, Grouping& g) {
  std::vector<uint32_t> uf_of(vc.values.size(), kNone);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> held;  // per uf node: (kind, value)
  auto compatible = [&](uint32_t a, uint32_t b) {
    for (const auto& [ka, va] : held[a])
      for (const auto& [kb, vb] : held[b])
        if (ka == kb && va != vb) return false;
    return true;
  };
  uint64_t multi_id_records = 0;
  std::vector<uint32_t> ids;
  for (size_t r = 0; r + 1 < vc.rec_begin.size(); ++r) {
    ids.clear();
    for (uint64_t j = vc.rec_begin[r]; j < vc.rec_begin[r + 1]; ++j) {
      const auto [v, s] = vc.rec_values[j];
      if (!is_id[s] || vc.values[v].records > hub) continue;
      // (A value seen in more than 32 slots may have this one unrecorded.)
      if (kinds.kind_of_value[v] == kNone) kinds.kind_of_value[v] = kinds.slots.find(s);
      if (std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
    }
    if (ids.empty()) continue;
    // The finest identifier first: the record belongs to its group.
    stable_sort_small(ids, [&](uint32_t a, uint32_t b) {
      return kinds.kind_values[kinds.kind_of_value[a]] > kinds.kind_values[kinds.kind_of_value[b]];
    });
    for (uint32_t v : ids)
      if (uf_of[v] == kNone) {
        uf_of[v] = g.uf.add();
        g.key_names.emplace_back(vc.value_text[v]);
        held.push_back({{kinds.kind_of_value[v], v}});
      }
    bool conflict = false;
    for (size_t k = 1; k < ids.size(); ++k) {
      uint32_t a = g.uf.find(uf_of[ids[0]]), b = g.uf.find(uf_of[ids[k]]);
      if (a == b) continue;
      if (!compatible(a, b)) {
        conflict = true;
        continue;
      }
      g.uf.unite(a, b);
      const uint32_t root = g.uf.find(a), other = root == a ? b : a;
      held[root].insert(held[root].end(), held[other].begin(), held[other].end());
      held[other].clear();
      held[other].shrink_to_fit();
    }
    multi_id_records += conflict;
    g.key[r] = uf_of[ids[0]];
  }
  return multi_id_records;
}

void group_by_identifiers(const LogSet& logs, FlowSet& out, Grouping& g) {
  const ValueCensus vc = census_values(logs);
  const uint64_t hub = std::max<uint64_t>(64, logs.records.size() / 100);
  const std::vector<bool> is_id = identifier_slots(vc, hub, out.id_slots);
  IdKinds kinds = identifier_kinds(vc, is_id);
  out.multi_id_records += join_requests(vc, is_id, hub, kinds, g);
  out.id_source = out.id_slots.empty() ? "none" : "auto";
}

// Fallback: a request per (node, thread), if the header has a thread.
void group_by_thread(const LogSet& logs, FlowSet& out, Grouping& g) {
  bool any_thread = false;
  for (const auto& t : logs.threads) any_thread |= !t.second.empty();
  g.reset();
  if (!any_thread) {
    out.id_source = "none";
    return;
  }
  out.id_source = "thread";
  for (const auto& t : logs.threads) {
    g.key_names.push_back(logs.nodes[t.first] + "/" + t.second);
    g.uf.add();
  }
  for (size_t r = 0; r < logs.records.size(); ++r)
    if (!logs.threads[logs.records[r].thread].second.empty()) g.key[r] = logs.records[r].thread;
}

// Flows: the groups' components in order of their first record. Counted first, so that
// each flow's records are allocated once.
void collect_flows(const LogSet& logs, Grouping& g, FlowSet& out) {
  std::vector<uint32_t> flow_of_root(g.uf.parent.size(), kNone);
  std::vector<uint32_t> sizes;  // per flow
  for (size_t r = 0; r < logs.records.size(); ++r) {
    if (g.key[r] == kNone) {
      ++out.records_without_id;
      continue;
    }
    const uint32_t root = g.uf.find(g.key[r]);
    if (flow_of_root[root] == kNone) {
      flow_of_root[root] = static_cast<uint32_t>(out.flows.size());
      out.flows.emplace_back();
      out.flows.back().id = g.key_names[g.key[r]];
      sizes.push_back(0);
    }
    ++sizes[flow_of_root[root]];
  }
  for (size_t f = 0; f < out.flows.size(); ++f) out.flows[f].records.reserve(sizes[f]);
  for (size_t r = 0; r < logs.records.size(); ++r) {
    if (g.key[r] == kNone) continue;
    out.flows[flow_of_root[g.uf.find(g.key[r])]].records.push_back(static_cast<uint32_t>(r));
    ++out.records_in_flows;
  }
}

// Order within a flow: by time, then file and line. Logs with coarse clocks (seconds)
// tie often, across nodes too; ties are then ordered by the precedence of their
// templates learnt from the untied pairs of all flows (lprof's temporal order, inferred
// instead of read from the code): x goes before y if template(x) was seen strictly
// before template(y) more often than after.
class FlowOrder {
 public:
  explicit FlowOrder(const LogSet& logs) : logs_(logs) {}

  void operator()(std::vector<Flow>& flows) {
    for (Flow& f : flows) sort_by_time(f);
    for (const Flow& f : flows) learn_precedence(f);
    for (Flow& f : flows) break_ties(f);
  }

 private:
  static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }

  void sort_by_time(Flow& f) const {
    std::stable_sort(f.records.begin(), f.records.end(), [&](uint32_t a, uint32_t b) {
      const LogRecord &x = logs_.records[a], &y = logs_.records[b];
      if (x.ts != y.ts) return x.ts < y.ts;
      if (x.file != y.file) return x.file < y.file;
      return x.line < y.line;
    });
  }

  // Counts the untied pairs of templates up to kWindow records apart.
  void learn_precedence(const Flow& f) {
    constexpr size_t kWindow = 8;
    for (size_t i = 0; i < f.records.size(); ++i)
      for (size_t j = i + 1; j < f.records.size() && j <= i + kWindow; ++j) {
        const LogRecord &x = logs_.records[f.records[i]], &y = logs_.records[f.records[j]];
        if (x.ts < y.ts && x.cluster != y.cluster) ++before_[pair_key(x.cluster, y.cluster)];
      }
  }

  int64_t count_before(uint32_t a, uint32_t b) const {
    const auto it = before_.find(pair_key(a, b));
    return it == before_.end() ? 0 : it->second;
  }

  // Runs of 2 to 64 records with one time: by the templates' precedence score.
  void break_ties(Flow& f) {
    for (size_t i = 0; i < f.records.size();) {
      size_t j = i + 1;
      const int64_t ts = logs_.records[f.records[i]].ts;
      while (j < f.records.size() && logs_.records[f.records[j]].ts == ts) ++j;
      if (j - i >= 2 && j - i <= 64) sort_run(f, i, j);
      i = j;
    }
  }

  void sort_run(Flow& f, size_t i, size_t j) {
    run_.clear();
    for (size_t a = i; a < j; ++a) {
      int64_t score = 0;
      const uint32_t ca = logs_.records[f.records[a]].cluster;
      for (size_t b = i; b < j; ++b) {
        const uint32_t cb = logs_.records[f.records[b]].cluster;
        if (ca == cb) continue;
        const int64_t n_ab = count_before(ca, cb), n_ba = count_before(cb, ca);
        score += (n_ab > n_ba) - (n_ba > n_ab);
      }
      run_.emplace_back(-score, f.records[a]);
    }
    std::stable_sort(run_.begin(), run_.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t a = i; a < j; ++a) f.records[a] = run_[a - i].second;
  }

  const LogSet& logs_;
  std::unordered_map<uint64_t, int64_t> before_;  // (a, b) -> #(a strictly before b)
  std::vector<std::pair<int64_t, uint32_t>> run_;
};

// The flow graph's edges: consecutive records' templates, by count, descending.
void count_edges(const LogSet& logs, FlowSet& out) {
  std::unordered_map<uint64_t, uint32_t> edge_ids;
  for (const Flow& f : out.flows)
    for (size_t k = 1; k < f.records.size(); ++k) {
      const LogRecord& p = logs.records[f.records[k - 1]];
      const LogRecord& r = logs.records[f.records[k]];
      const uint64_t ek = (uint64_t{p.cluster} << 32) | r.cluster;
      auto [it, fresh] = edge_ids.try_emplace(ek, static_cast<uint32_t>(out.edges.size()));
      if (fresh) out.edges.push_back({p.cluster, r.cluster, 0, 0, 0, 0});
      FlowEdge& e = out.edges[it->second];
      ++e.count;
      e.cross_node += p.node != r.node;
      e.total_ns = saturating_add(e.total_ns, r.ts - p.ts);
      e.max_ns = std::max(e.max_ns, r.ts - p.ts);
    }
  std::stable_sort(out.edges.begin(), out.edges.end(),
                   [](const FlowEdge& a, const FlowEdge& b) { return a.count > b.count; });
}

// Each flow's times, nodes and signature (its sequence of templates).
void summarize_flows(const LogSet& logs, FlowSet& out) {
  std::unordered_map<std::vector<uint32_t>, uint32_t, VecHash> sig_ids;
  std::vector<uint32_t> seq, nodes;
  for (uint32_t fi = 0; fi < out.flows.size(); ++fi) {
    Flow& f = out.flows[fi];
    f.start = logs.records[f.records.front()].ts;
    f.end = logs.records[f.records.back()].ts;
    seq.clear();
    nodes.clear();
    for (uint32_t ri : f.records) {
      const LogRecord& r = logs.records[ri];
      seq.push_back(r.cluster);
      if (std::find(nodes.begin(), nodes.end(), r.node) == nodes.end()) nodes.push_back(r.node);
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
}

// Signatures by count, descending; the flows' signature indices follow.
void rank_signatures(FlowSet& out) {
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
}

}  // namespace

FlowSet build_flows(const LogSet& logs, const FlowOptions& options) {
  FlowSet out;
  Grouping groups(logs.records.size());
  if (!options.id_regex.empty()) {
    out.id_source = "regex";
    group_by_regex(logs, options.id_regex, groups);
  } else if (!options.by_thread) {
    group_by_identifiers(logs, out, groups);
  }
  if (options.by_thread || (options.id_regex.empty() && out.id_slots.empty()))
    group_by_thread(logs, out, groups);
  collect_flows(logs, groups, out);
  FlowOrder{logs}(out.flows);
  count_edges(logs, out);
  summarize_flows(logs, out);
  rank_signatures(out);
  return out;
}

}  // namespace snailtrail::logs
