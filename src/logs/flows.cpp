// Request identifiers and flows (flows.hpp). build_flows is four steps: group the records
// into requests (by --id, by inferred identifiers or by thread), collect the groups into
// flows, order each flow's records, and count the flows' edges and signatures.
#include "logs/flows.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "logs/request_groups.hpp"

namespace snailtrail::logs {
namespace {

using detail::group_by_identifiers;
using detail::group_by_regex;
using detail::Grouping;
using detail::kNone;
using detail::VecHash;

// Fallback: a request per (node, thread), if the header has a thread.
void group_by_thread(const LogSet& logs, const detail::RecordSource& records, FlowSet& out,
                     Grouping& g) {
  bool any_thread = false;
  for (const auto& t : logs.threads) any_thread |= !t.second.empty();
  g.reset();
  if (!any_thread) {
    out.id_source = "none";
    return;
  }
  out.id_source = "thread";
  for (const auto& t : logs.threads) {
    g.key_names.push_back(g.owned.emplace_back(logs.nodes[t.first] + "/" + t.second));
    g.uf.add();
  }
  records([&](uint32_t r, const LogRecord& rec) {
    if (!logs.threads[rec.thread].second.empty()) g.key[r] = rec.thread;
  });
}

// Flows: the groups' components in order of their first record. Counted first, so that
// the flows and each flow's records are allocated once, at their size (a log of unique
// request ids has a flow every few lines: growing the flows by doubling held 1.5 times
// their size, and 2.5 times while moving).
void collect_flows(const LogSet& logs, Grouping& g, FlowSet& out) {
  std::vector<uint32_t> flow_of_root(g.uf.parent.size(), kNone);
  std::vector<uint32_t> sizes;  // per flow
  std::vector<uint32_t> first;  // per flow: its first record's key
  for (size_t r = 0; r < logs.records.size(); ++r) {
    if (g.key[r] == kNone) {
      ++out.records_without_id;
      continue;
    }
    const uint32_t root = g.uf.find(g.key[r]);
    if (flow_of_root[root] == kNone) {
      flow_of_root[root] = static_cast<uint32_t>(sizes.size());
      first.push_back(g.key[r]);
      sizes.push_back(0);
    }
    ++sizes[flow_of_root[root]];
  }
  out.flows.resize(sizes.size());
  for (size_t f = 0; f < out.flows.size(); ++f) out.flows[f].id = g.name(first[f]);
  std::vector<uint32_t>().swap(first);
  // One flat array: each flow's records are a span of it, filled in record order.
  std::vector<uint64_t> fill(out.flows.size() + 1, 0);
  for (size_t f = 0; f < out.flows.size(); ++f) fill[f + 1] = fill[f] + sizes[f];
  out.record_ids.resize(fill.back());
  for (size_t f = 0; f < out.flows.size(); ++f)
    out.flows[f].records = std::span<uint32_t>(out.record_ids.data() + fill[f], sizes[f]);
  for (size_t r = 0; r < logs.records.size(); ++r) {
    if (g.key[r] == kNone) continue;
    out.record_ids[fill[flow_of_root[g.uf.find(g.key[r])]]++] = static_cast<uint32_t>(r);
    ++out.records_in_flows;
  }
}

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
      out.signatures.back().example_id = f.id;
    }
    FlowSignature& s = out.signatures[it->second];
    ++s.count;
    s.total_ns = saturating_add(s.total_ns, f.latency());
    f.signature = it->second;
    out.total_latency = saturating_add(out.total_latency, f.latency());
  }
  out.flow_count = out.flows.size();
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

// Groups the records, then makes the flows.
FlowSet flows_of(const LogSet& logs, const FlowOptions& options,
                 const detail::MessageSource& messages, bool copy_values) {
  FlowSet out;
  Grouping groups(logs.records.size());
  detail::group_records(logs, options, messages, detail::kept_records(logs), copy_values, out,
                        groups);
  collect_flows(logs, groups, out);
  out.id_texts = std::move(groups.owned);  // the flows view into them
  groups = Grouping(0);                    // freed before the flows are ordered
  detail::FlowOrder{logs.records}(out.flows);
  count_edges(logs, out);
  summarize_flows(logs, out);
  rank_signatures(out);
  return out;
}

}  // namespace

namespace detail {

void FlowOrder::operator()(std::vector<Flow>& flows) {
  for (Flow& f : flows) sort_by_time(f.records);
  for (const Flow& f : flows) learn_precedence(f.records);
  for (Flow& f : flows) break_ties(f.records);
}

void FlowOrder::sort_by_time(std::span<uint32_t> records) const {
  std::stable_sort(records.begin(), records.end(), [&](uint32_t a, uint32_t b) {
    const LogRecord &x = records_[a], &y = records_[b];
    if (x.ts != y.ts) return x.ts < y.ts;
    if (x.file != y.file) return x.file < y.file;
    return x.line < y.line;
  });
}

// Counts the untied pairs of templates up to kWindow records apart.
void FlowOrder::learn_precedence(std::span<const uint32_t> records) {
  constexpr size_t kWindow = 8;
  for (size_t i = 0; i < records.size(); ++i)
    for (size_t j = i + 1; j < records.size() && j <= i + kWindow; ++j) {
      const LogRecord &x = records_[records[i]], &y = records_[records[j]];
      if (x.ts < y.ts && x.cluster != y.cluster) ++before_[pair_key(x.cluster, y.cluster)];
    }
}

int64_t FlowOrder::count_before(uint32_t a, uint32_t b) const {
  const auto it = before_.find(pair_key(a, b));
  return it == before_.end() ? 0 : it->second;
}

// Runs of 2 to 64 records with one time: by the templates' precedence score.
void FlowOrder::break_ties(std::span<uint32_t> records) {
  for (size_t i = 0; i < records.size();) {
    size_t j = i + 1;
    const int64_t ts = records_[records[i]].ts;
    while (j < records.size() && records_[records[j]].ts == ts) ++j;
    if (j - i >= 2 && j - i <= 64) sort_run(records, i, j);
    i = j;
  }
}

void FlowOrder::sort_run(std::span<uint32_t> records, size_t i, size_t j) {
  run_.clear();
  for (size_t a = i; a < j; ++a) {
    int64_t score = 0;
    const uint32_t ca = records_[records[a]].cluster;
    for (size_t b = i; b < j; ++b) {
      const uint32_t cb = records_[records[b]].cluster;
      if (ca == cb) continue;
      const int64_t n_ab = count_before(ca, cb), n_ba = count_before(cb, ca);
      score += (n_ab > n_ba) - (n_ba > n_ab);
    }
    run_.emplace_back(-score, records[a]);
  }
  std::stable_sort(run_.begin(), run_.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (size_t a = i; a < j; ++a) records[a] = run_[a - i].second;
}

RecordSource kept_records(const LogSet& logs) {
  return [&logs](const RecordVisitor& visit) {
    for (size_t r = 0; r < logs.records.size(); ++r)
      visit(static_cast<uint32_t>(r), logs.records[r]);
  };
}

void group_records(const LogSet& logs, const FlowOptions& options, const MessageSource& messages,
                   const RecordSource& records, bool copy_values, FlowSet& out, Grouping& g) {
  if (!options.id_regex.empty()) {
    out.id_source = "regex";
    group_by_regex(logs, options.id_regex, g);
  } else if (!options.by_thread) {
    group_by_identifiers(logs, messages, copy_values, options.census_cap, out, g);
  }
  if (options.by_thread || (options.id_regex.empty() && out.id_slots.empty()))
    group_by_thread(logs, records, out, g);
}

}  // namespace detail

FlowSet build_flows(const LogSet& logs, const FlowOptions& options) {
  const detail::MessageSource kept = [&](const detail::MessageVisitor& visit) {
    for (size_t r = 0; r < logs.records.size(); ++r)
      visit(static_cast<uint32_t>(r), logs.content(r));
  };
  return flows_of(logs, options, kept, false);
}

FlowSet build_flows_rereading(const LogSet& logs, const LogOptions& read_options,
                              const FlowOptions& options) {
  if (!options.id_regex.empty())
    throw std::logic_error("build_flows_rereading: --id needs the kept lines (build_flows)");
  const detail::MessageSource reread = [&](const detail::MessageVisitor& visit) {
    reread_messages(logs, read_options, visit);
  };
  return flows_of(logs, options, reread, true);
}

}  // namespace snailtrail::logs
