// `logs flows` with memory bounded by the requests open at a time (flows.hpp stream_flows).
// After the grouping, each pass walks the records in record order and gathers a request's
// records only while it is open: a request grows only through a record holding one of
// its values, so after the last record of its union-find root it is closed, handed on
// and its records freed. Three passes give build_flows' outputs byte for byte:
//   A: each flow sorted by time, the templates' precedence learnt (FlowOrder);
//   B: each flow ordered (ties broken), summed into signatures and edges, the slowest kept;
//   C (JSONL only): each flow again, with its signature's rank, in order of first record.
// Orders that build_flows gets from the flows' order are rebuilt from first appearances:
// a signature's rank ties by its first flow, an edge's by its first (flow, step).
#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "logs/flows.hpp"
#include "logs/request_groups.hpp"

namespace snailtrail::logs {
namespace {

using detail::Grouping;
using detail::kNone;

// The records of each open request, in record order; a request is numbered by the order
// of its first record (build_flows' flow order). Each pass takes the records from
// `records` (kept, packed, or the files read again) and holds copies of the open requests' ones
// only: a request's indices point into held(), freed when it closes.
class OpenRequests {
 public:
  OpenRequests(Grouping& g, detail::RecordSource records) : g_(g), records_(std::move(records)) {
    last_.assign(g.uf.parent.size(), kNone);
    for (uint32_t r = 0; r < g.key.size(); ++r)
      if (g.key[r] != kNone) last_[g.uf.find(g.key[r])] = r;
  }

  // close(index, id, records) after each request's last record; the records are freed
  // (their buffer reused) once it returns.
  template <class Close>
  void pass(Close&& close) {
    slot_of_.assign(last_.size(), kNone);
    uint32_t next_index = 0;
    records_([&](uint32_t r, const LogRecord& rec) {
      const uint32_t key = g_.key[r];
      if (key == kNone) return;
      const uint32_t root = g_.uf.find(key);
      uint32_t s = slot_of_[root];
      if (s == kNone) s = slot_of_[root] = open(next_index++, g_.name(key));
      Open& o = open_[s];
      o.records.push_back(hold(rec));
      if (last_[root] != r) return;
      close(o.index, o.id, std::span<uint32_t>(o.records));
      free_held_.insert(free_held_.end(), o.records.begin(), o.records.end());
      o.records.clear();
      if (o.records.capacity() > 4096) std::vector<uint32_t>().swap(o.records);
      free_.push_back(s);
      slot_of_[root] = kNone;
    });
    std::vector<uint32_t>().swap(slot_of_);
  }

  size_t most_open() const { return open_.size(); }
  size_t most_held() const { return held_.size(); }
  const std::vector<LogRecord>& held() const { return held_; }

 private:
  struct Open {
    uint32_t index = 0;
    std::string_view id;
    std::vector<uint32_t> records;  // into held_
  };

  uint32_t open(uint32_t index, std::string_view id) {
    uint32_t s;
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      s = static_cast<uint32_t>(open_.size());
      open_.emplace_back();
    }
    open_[s].index = index;
    open_[s].id = id;
    return s;
  }

  uint32_t hold(const LogRecord& rec) {
    if (free_held_.empty()) {
      held_.push_back(rec);
      return static_cast<uint32_t>(held_.size() - 1);
    }
    const uint32_t at = free_held_.back();
    free_held_.pop_back();
    held_[at] = rec;
    return at;
  }

  Grouping& g_;
  detail::RecordSource records_;
  std::vector<uint32_t> last_;     // per union-find root: its request's last record
  std::vector<uint32_t> slot_of_;  // per union-find root: its open slot, during a pass
  std::vector<Open> open_;
  std::vector<uint32_t> free_;
  std::vector<LogRecord> held_;  // the open requests' records (high-water: most_held)
  std::vector<uint32_t> free_held_;
};

// A flow's times, nodes and templates (its signature), as summarize_flows makes them;
// `records` index `held`.
Flow describe(const std::vector<LogRecord>& held, std::string_view id, std::span<uint32_t> records,
              std::vector<uint32_t>& seq, std::vector<uint32_t>& nodes) {
  Flow f;
  f.id = id;
  f.records = records;
  f.held = held.data();
  f.start = held[records.front()].ts;
  f.end = held[records.back()].ts;
  seq.clear();
  nodes.clear();
  for (uint32_t ri : records) {
    const LogRecord& r = held[ri];
    seq.push_back(r.cluster);
    if (std::find(nodes.begin(), nodes.end(), r.node) == nodes.end()) nodes.push_back(r.node);
  }
  f.node_count = static_cast<uint32_t>(nodes.size());
  return f;
}

// Pass B: the flows' sums and the `top` slowest, whatever order the flows close in.
class FlowTotals {
 public:
  FlowTotals(const std::vector<LogRecord>& held, size_t top) : held_(held), top_(top) {}

  void add(uint32_t index, std::string_view id, std::span<uint32_t> records) {
    Flow f = describe(held_, id, records, seq_, nodes_);
    auto [it, fresh] = sig_ids_.try_emplace(seq_, static_cast<uint32_t>(sigs_.size()));
    if (fresh) {
      sigs_.emplace_back();
      sigs_.back().templates = seq_;
      sigs_.back().example = index;
      sigs_.back().example_id = id;
    }
    FlowSignature& s = sigs_[it->second];
    ++s.count;
    s.total_ns = saturating_add(s.total_ns, f.latency());
    if (index < s.example) s.example = index, s.example_id = id;
    f.signature = it->second;
    total_latency_ = saturating_add(total_latency_, f.latency());
    ++flows_;
    records_ += records.size();
    add_edges(index, records);
    keep_if_slow(index, f);
  }

  // The sums ranked as build_flows ranks them; signature ids become ranks.
  void finish(FlowSet& out) {
    rank_signatures(out);
    std::vector<uint32_t> order(edges_.size());
    for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (edges_[a].count != edges_[b].count) return edges_[a].count > edges_[b].count;
      return edge_first_[a] < edge_first_[b];
    });
    for (uint32_t k : order) out.edges.push_back(edges_[k]);
    std::sort_heap(slow_.begin(), slow_.end(), slower);
    size_t n = 0;
    for (const Slow& s : slow_) n += s.records.size();
    out.record_ids.reserve(n);
    out.held.reserve(n);  // the flows view into both: never reallocated
    for (Slow& s : slow_) {
      const size_t at = out.record_ids.size();
      for (const LogRecord& r : s.records) {
        out.record_ids.push_back(static_cast<uint32_t>(out.held.size()));
        out.held.push_back(r);
      }
      s.flow.records = std::span<uint32_t>(out.record_ids.data() + at, s.records.size());
      s.flow.held = out.held.data();
      s.flow.signature = rank_[s.flow.signature];
      out.flows.push_back(s.flow);
    }
    slow_.clear();
    out.only_slowest = true;
    out.flow_count = flows_;
    out.records_in_flows = records_;
    out.total_latency = total_latency_;
  }

  // Pass C: a flow's signature rank (after finish).
  uint32_t rank_of(const std::vector<uint32_t>& seq) const { return rank_[sig_ids_.at(seq)]; }

 private:
  struct Slow {
    uint32_t index = 0;
    Flow flow;
    std::vector<LogRecord> records;  // copies: the held ones are reused
  };
  // build_flows' slowest order: by latency, descending, then by flow.
  static bool slower(const Slow& a, const Slow& b) {
    if (a.flow.latency() != b.flow.latency()) return a.flow.latency() > b.flow.latency();
    return a.index < b.index;
  }

  void add_edges(uint32_t index, std::span<const uint32_t> records) {
    for (uint32_t k = 1; k < records.size(); ++k) {
      const LogRecord& p = held_[records[k - 1]];
      const LogRecord& r = held_[records[k]];
      const uint64_t ek = (uint64_t{p.cluster} << 32) | r.cluster;
      auto [it, fresh] = edge_ids_.try_emplace(ek, static_cast<uint32_t>(edges_.size()));
      const uint64_t at = (uint64_t{index} << 32) | k;  // first (flow, step)
      if (fresh) {
        edges_.push_back({p.cluster, r.cluster, 0, 0, 0, 0});
        edge_first_.push_back(at);
      }
      FlowEdge& e = edges_[it->second];
      edge_first_[it->second] = std::min(edge_first_[it->second], at);
      ++e.count;
      e.cross_node += p.node != r.node;
      e.total_ns = saturating_add(e.total_ns, r.ts - p.ts);
      e.max_ns = std::max(e.max_ns, r.ts - p.ts);
    }
  }

  // A bounded heap whose top is the kept flow that would be shown last.
  void keep_if_slow(uint32_t index, const Flow& f) {
    if (top_ == 0) return;
    Slow s{index, f, {}};
    if (slow_.size() == top_) {
      if (!slower(s, slow_.front())) return;
      std::pop_heap(slow_.begin(), slow_.end(), slower);
      slow_.pop_back();
    }
    for (uint32_t ri : f.records) s.records.push_back(held_[ri]);
    slow_.push_back(std::move(s));
    std::push_heap(slow_.begin(), slow_.end(), slower);
  }

  // By count, descending, then by first flow (build_flows' stable sort of first seen).
  void rank_signatures(FlowSet& out) {
    std::vector<uint32_t> order(sigs_.size());
    for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (sigs_[a].count != sigs_[b].count) return sigs_[a].count > sigs_[b].count;
      return sigs_[a].example < sigs_[b].example;
    });
    rank_.assign(order.size(), 0);
    for (uint32_t i = 0; i < order.size(); ++i) {
      rank_[order[i]] = i;
      out.signatures.push_back(sigs_[order[i]]);
    }
    std::vector<FlowSignature>().swap(sigs_);
  }

  const std::vector<LogRecord>& held_;
  size_t top_;
  std::vector<uint32_t> seq_, nodes_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, detail::VecHash> sig_ids_;
  std::vector<FlowSignature> sigs_;
  std::vector<uint32_t> rank_;  // per signature id: its rank
  std::unordered_map<uint64_t, uint32_t> edge_ids_;
  std::vector<FlowEdge> edges_;
  std::vector<uint64_t> edge_first_;
  std::vector<Slow> slow_;
  uint64_t flows_ = 0, records_ = 0;
  int64_t total_latency_ = 0;
};

// Pass C: every flow in order of first record; a flow that closes before an earlier one
// waits (with its records) until that one has been given.
void each_flow_in_order(OpenRequests& open, detail::FlowOrder& order, const FlowTotals& totals,
                        const FlowVisitor& visit) {
  struct Waiting {
    Flow flow;
    std::vector<uint32_t> records;  // 0, 1, ... into held
    std::vector<LogRecord> held;
  };
  std::map<uint32_t, Waiting> waiting;
  uint32_t next = 0;
  std::vector<uint32_t> seq, nodes;
  open.pass([&](uint32_t index, std::string_view id, std::span<uint32_t> records) {
    order.sort_by_time(records);
    order.break_ties(records);
    Flow f = describe(open.held(), id, records, seq, nodes);
    f.signature = totals.rank_of(seq);
    if (index != next) {
      Waiting& w = waiting[index];
      for (uint32_t ri : records) {
        w.records.push_back(static_cast<uint32_t>(w.held.size()));
        w.held.push_back(open.held()[ri]);
      }
      w.flow = f;
      return;
    }
    visit(f);
    for (++next; !waiting.empty() && waiting.begin()->first == next; ++next) {
      Waiting& w = waiting.begin()->second;
      w.flow.records = std::span<uint32_t>(w.records);
      w.flow.held = w.held.data();
      visit(w.flow);
      waiting.erase(waiting.begin());
    }
  });
}

}  // namespace

FlowSet stream_flows(const LogSet& logs, const LogOptions& read_options, const FlowOptions& options,
                     size_t top, const FlowVisitor& each_flow) {
  const bool reread = read_options.keep == KeepText::none;
  if (reread && !options.id_regex.empty())
    throw std::logic_error("stream_flows: --id needs the kept lines (KeepText::whole_lines)");
  const detail::MessageSource messages = [&](const detail::MessageVisitor& visit) {
    if (reread) return reread_messages(logs, read_options, visit);
    for (size_t r = 0; r < logs.records.size(); ++r)
      visit(static_cast<uint32_t>(r), logs.content(r));
  };
  // No records kept (keep_clusters): each pass over them takes them from the packed
  // header fields (pack_records), or else reads the files again.
  const detail::RecordSource records =
      logs.records.size() == logs.record_count ? detail::kept_records(logs)
      : logs.packed.size() == logs.record_count
          ? detail::RecordSource([&](const detail::RecordVisitor& visit) {
              packed_records(
                  logs, [&](uint32_t r, const LogRecord& rec, std::string_view) { visit(r, rec); });
            })
          : detail::RecordSource([&](const detail::RecordVisitor& visit) {
              reread_records(
                  logs, read_options,
                  [&](uint32_t r, const LogRecord& rec, std::string_view) { visit(r, rec); });
            });
  FlowSet out;
  Grouping groups(logs.record_count);
  detail::group_records(logs, options, messages, records, reread, out, groups);
  for (uint32_t key : groups.key) out.records_without_id += key == kNone;
  OpenRequests open(groups, records);
  detail::FlowOrder order(open.held());
  open.pass([&](uint32_t, std::string_view, std::span<uint32_t> records) {
    order.sort_by_time(records);
    order.learn_precedence(records);
  });
  FlowTotals totals(open.held(), top);
  open.pass([&](uint32_t index, std::string_view id, std::span<uint32_t> records) {
    order.sort_by_time(records);
    order.break_ties(records);
    totals.add(index, id, records);
  });
  totals.finish(out);
  if (each_flow) each_flow_in_order(open, order, totals, each_flow);
  out.most_open = open.most_open();
  out.most_held = open.most_held();
  out.id_texts = std::move(groups.owned);  // the flows view into them
  return out;
}

}  // namespace snailtrail::logs
