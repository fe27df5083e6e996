#include "summary/summary.hpp"

#include "pag/radix_sort.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace snailtrail {
namespace {

constexpr uint8_t kWaiting = static_cast<uint8_t>(ActivityType::waiting);
constexpr uint8_t kUnknown = static_cast<uint8_t>(ActivityType::unknown);

// Dense cell numbers for (sender, receiver) pairs of one window: an open-addressing
// table cleared per window through the list of used cells.
class PairIndex {
 public:
  void clear() {
    for (uint32_t slot : used_) keys_[slot] = kEmpty;
    used_.clear();
    pairs_.clear();
  }
  uint32_t operator()(uint32_t src, uint32_t dst) {
    if (2 * (pairs_.size() + 1) > keys_.size()) grow();
    const uint64_t key = (uint64_t{src} << 32) | dst;
    size_t i = (key * 0x9e3779b97f4a7c15ULL) >> shift_;
    for (;; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == key) return cell_[i];
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        cell_[i] = static_cast<uint32_t>(pairs_.size());
        used_.push_back(static_cast<uint32_t>(i));
        pairs_.emplace_back(src, dst);
        return cell_[i];
      }
    }
  }
  const std::vector<std::pair<uint32_t, uint32_t>>& pairs() const { return pairs_; }
  // The cells in (src, dst) order.
  const std::vector<uint32_t>& sorted_cells() {
    order_keys_.resize(pairs_.size());
    for (uint32_t c = 0; c < pairs_.size(); ++c)
      order_keys_[c] = {(uint64_t{pairs_[c].first} << 32) | pairs_[c].second, c};
    radix_sort(order_keys_, order_scratch_);
    order_.resize(pairs_.size());
    for (size_t k = 0; k < order_keys_.size(); ++k) order_[k] = order_keys_[k].value;
    return order_;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  void grow() {
    std::vector<std::pair<uint32_t, uint32_t>> pairs = pairs_;
    size_t cap = keys_.empty() ? 64 : keys_.size() * 2;
    keys_.assign(cap, kEmpty);
    cell_.assign(cap, 0);
    shift_ = 64 - __builtin_ctzll(cap);
    used_.clear();
    pairs_.clear();
    for (const auto& [s, d] : pairs) (*this)(s, d);
  }
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> cell_;
  std::vector<uint32_t> used_;
  std::vector<std::pair<uint32_t, uint32_t>> pairs_;
  std::vector<KeyValue<uint32_t>> order_keys_, order_scratch_;
  std::vector<uint32_t> order_;
  int shift_ = 58;
};

// Accumulates one measure into Groups with dense operator and pair slots.
struct Accumulator {
  Groups groups;
  std::vector<double> op_values;
  std::vector<double> comm_values;

  void reset(size_t workers, size_t ops) {
    groups.activity.fill(0);
    groups.worker.assign(workers, 0);
    groups.op.clear();
    groups.op_per_worker.clear();
    groups.communication.clear();
    op_values.assign(ops, 0);
    comm_values.clear();
  }
  void add_comm(uint32_t cell, double v) {
    if (cell >= comm_values.size()) comm_values.resize(cell + 1, 0.0);
    comm_values[cell] += v;
  }
  // Emits the communication cells in (src, dst) order.
  void finish_comm(const PairIndex& index, const std::vector<uint32_t>& sorted_cells) {
    const auto& pairs = index.pairs();
    for (uint32_t c : sorted_cells)
      groups.communication.push_back(
          {pairs[c].first, pairs[c].second, c < comm_values.size() ? comm_values[c] : 0.0});
  }
  void finish(const std::vector<uint32_t>& op_ids, const std::vector<uint32_t>& op_workers) {
    for (size_t s = 0; s < op_values.size(); ++s)
      if (op_workers[s] > 0) {
        groups.op.emplace_back(op_ids[s], op_values[s]);
        groups.op_per_worker.emplace_back(op_ids[s], op_values[s] / op_workers[s]);
      }
  }
};

// Keeps the k largest activities seen, as a min-heap on CP (ties: earlier first).
class TopK {
 public:
  explicit TopK(size_t k) : k_(k) {}
  void offer(const TopActivity& a) {
    if (k_ == 0 || a.cp <= 0) return;
    if (heap_.size() < k_) {
      heap_.push_back(a);
      std::push_heap(heap_.begin(), heap_.end(), worse_first);
    } else if (better(a, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), worse_first);
      heap_.back() = a;
      std::push_heap(heap_.begin(), heap_.end(), worse_first);
    }
  }
  std::vector<TopActivity> take() {
    std::sort(heap_.begin(), heap_.end(), better);
    return std::move(heap_);
  }
  static bool better(const TopActivity& a, const TopActivity& b) {
    if (a.cp != b.cp) return a.cp > b.cp;
    if (a.start != b.start) return a.start < b.start;
    if (a.worker != b.worker) return a.worker < b.worker;
    if (a.remote != b.remote) return a.remote < b.remote;
    // A total order, so that the list never depends on the order activities were offered
    // in (merged message pieces offer theirs together).
    if (a.end != b.end) return a.end < b.end;
    if (a.type != b.type) return a.type < b.type;
    return a.op < b.op;
  }

 private:
  static bool worse_first(const TopActivity& a, const TopActivity& b) { return better(a, b); }
  size_t k_;
  std::vector<TopActivity> heap_;
};

// The three measures of one window (CP, the conventional profile's shares, the sampled
// single path's shares), each grouped four ways, and the window's (sender, receiver)
// cells. Kept per thread: the buffers are reused from window to window.
struct WindowGroups {
  Accumulator cp, conv, single;
  PairIndex pairs;
  std::vector<uint32_t> op_workers;      // slot -> workers with an edge of the operator
  std::vector<uint32_t> op_last_worker;  // slot -> last worker counted in op_workers

  void reset(size_t workers, size_t ops) {
    pairs.clear();
    cp.reset(workers, ops);
    conv.reset(workers, ops);
    single.reset(workers, ops);
    op_workers.assign(ops, 0);
    op_last_worker.assign(ops, kNone);
  }
  // Communication cells in (src, dst) order, operators by id, into the summary.
  void finish(const std::vector<uint32_t>& op_ids, WindowSummary& out) {
    const std::vector<uint32_t>& sorted_cells = pairs.sorted_cells();
    cp.finish_comm(pairs, sorted_cells);
    conv.finish_comm(pairs, sorted_cells);
    single.finish_comm(pairs, sorted_cells);
    cp.finish(op_ids, op_workers);
    conv.finish(op_ids, op_workers);
    single.finish(op_ids, op_workers);
    out.cp = cp.groups;
    out.conventional = conv.groups;
    out.single_path = single.groups;
  }
};

// The window's sizes and CP span, copied from the snapshot and the CP result.
void fill_window_facts(const Snapshot& snap, const CpResult& cp, WindowSummary& out) {
  out.window = snap.window;
  out.span_start = cp.span_start;
  out.span_end = cp.span_end;
  out.cp_ns = cp.cp_ns;
  out.events = snap.events;
  out.nodes = snap.node_count();
  out.edges = snap.edge_count();
  out.has_paths = cp.has_paths();
  out.paths_log10 = cp.paths.is_zero() ? 0 : cp.paths.log10();
}

// The timeline activity starting at node v: consecutive timeline edges of one activity
// instance are one activity. Returns it and the node after it.
std::pair<TopActivity, size_t> timeline_activity(const Pag& pag, const Snapshot& snap,
                                                 const CpResult& cp, size_t v) {
  const size_t n = snap.node_count();
  const uint32_t g = snap.edge[v];
  TopActivity a{snap.worker[v],   kNone,      static_cast<ActivityType>(snap.type[v]),
                pag.edge_op[g],   snap.ts[v], snap.ts[v + 1],
                cp.timeline_cp[v]};
  size_t u = v + 1;
  for (;;) {
    // A segmented window breaks a timeline at a segment border into two nodes at
    // one instant: the activity goes on across it.
    if (u + 2 < n && snap.edge[u] == kNone && snap.edge[u + 1] != kNone &&
        snap.worker[u + 1] == snap.worker[u] && snap.ts[u + 1] == snap.ts[u] &&
        pag.edge_instance[snap.edge[u + 1]] == pag.edge_instance[g] &&
        snap.type[u + 1] == snap.type[v])
      ++u;
    if (!(u + 1 < n && snap.edge[u] != kNone &&
          pag.edge_instance[snap.edge[u]] == pag.edge_instance[g] && snap.type[u] == snap.type[v]))
      break;
    a.end = snap.ts[u + 1];
    a.cp += cp.timeline_cp[u];
    ++u;
  }
  return {a, u};
}

// The k activities (timeline activities and messages) with the most CP.
std::vector<TopActivity> top_activities(const Pag& pag, const Snapshot& snap, const CpResult& cp,
                                        size_t k) {
  if (k == 0 || !cp.has_paths()) return {};
  TopK top(k);
  const size_t n = snap.node_count();
  size_t v = 0;
  while (v + 1 < n) {
    if (snap.edge[v] == kNone) {
      ++v;
      continue;
    }
    auto [a, next] = timeline_activity(pag, snap, cp, v);
    top.offer(a);
    v = next;
  }
  for (size_t m = 0; m < snap.msg_src.size(); ++m) {
    if (cp.message_cp[m] <= 0) continue;
    const Message& msg = pag.messages[snap.msg_index[m]];
    // A merged edge is that many identical pieces: more than k of them cannot make it.
    const size_t copies = std::min<size_t>(snap.mult(m), k);
    for (size_t i = 0; i < copies; ++i)
      top.offer({msg.src_worker, msg.dst_worker, msg.type, kNone, snap.ts[snap.msg_src[m]],
                 snap.ts[snap.msg_dst[m]], cp.message_cp[m]});
  }
  return top.take();
}

// The totals the shares of the conventional profile and of the single path divide by.
struct ProfileTotals {
  double timeline = 0;  // all timeline edges
  double unknown = 0, waiting = 0;
  double inv_total = 0;  // 1 / (timeline edges + messages)
  // The worker and operator groupings of the conventional profile rank busy (non-waiting)
  // time: every worker's timeline spans the whole window, so plain durations would all be
  // equal (and an operator's instances wait with its id in many traces).
  double inv_busy = 0;
  // The single path covers the time CP is spread over (the segments with paths).
  double inv_span = 0;
};

ProfileTotals profile_totals(const Snapshot& snap, const CpResult& cp) {
  ProfileTotals t;
  const size_t n = snap.node_count();
  for (size_t v = 0; v + 1 < n; ++v)
    if (snap.edge[v] != kNone) {
      double w = static_cast<double>(snap.ts[v + 1] - snap.ts[v]);
      t.timeline += w;
      uint8_t type = snap.type[v];
      if (type == kUnknown) t.unknown += w;
      if (type == kWaiting) t.waiting += w;
    }
  double total = t.timeline;
  const double busy_total = t.timeline - t.waiting;
  t.inv_busy = busy_total > 0 ? 1.0 / busy_total : 0.0;
  for (size_t k = 0; k < snap.msg_src.size(); ++k)
    total += static_cast<double>(snap.ts[snap.msg_dst[k]] - snap.ts[snap.msg_src[k]]) *
             static_cast<double>(snap.mult(k));
  t.inv_total = total > 0 ? 1.0 / total : 0.0;
  const double span = static_cast<double>(cp.cp_ns);
  t.inv_span = span > 0 ? 1.0 / span : 0.0;
  return t;
}

// The edges of the sampled single path, as flags per timeline edge and per message
// (both empty when no path was sampled).
struct SampledPath {
  std::vector<uint8_t> timeline, message;
  SampledPath(const std::vector<uint32_t>& sampled, size_t nodes, size_t messages) {
    if (sampled.empty()) return;
    timeline.assign(nodes, 0);
    message.assign(messages, 0);
    for (uint32_t e : sampled) {
      if (e & 0x80000000u)
        message[~e] = 1;
      else
        timeline[e] = 1;
    }
  }
};

// Timeline edges into the groupings by activity type, worker and operator.
void group_timeline_edges(const Pag& pag, const Snapshot& snap, const CpResult& cp,
                          const ProfileTotals& t, const SampledPath& path,
                          const std::vector<uint32_t>& op_ids, WindowGroups& g) {
  const size_t n = snap.node_count();
  uint32_t last_op = kNone;  // consecutive edges mostly share their operator
  size_t last_slot = 0;
  for (size_t v = 0; v + 1 < n; ++v) {
    if (snap.edge[v] == kNone) continue;
    const uint32_t e = snap.edge[v];
    const uint8_t type = snap.type[v];
    const uint32_t w = snap.worker[v];
    const double dur = static_cast<double>(snap.ts[v + 1] - snap.ts[v]);
    const double c = cp.timeline_cp[v];
    const double conv = dur * t.inv_total;
    const double single = !path.timeline.empty() && path.timeline[v] ? dur * t.inv_span : 0.0;
    g.cp.groups.activity[type] += c;
    g.conv.groups.activity[type] += conv;
    g.single.groups.activity[type] += single;
    g.cp.groups.worker[w] += c;
    g.conv.groups.worker[w] += type == kWaiting ? 0.0 : dur * t.inv_busy;
    g.single.groups.worker[w] += single;
    // Operators: every edge carrying the operator id, whatever its type.
    if (const uint32_t op = pag.edge_op[e]; op != kNone) {
      if (op != last_op) {
        last_op = op;
        last_slot = static_cast<size_t>(std::lower_bound(op_ids.begin(), op_ids.end(), op) -
                                        op_ids.begin());
      }
      const size_t s = last_slot;
      g.cp.op_values[s] += c;
      // Like workers, operators rank by busy time: their instances' waiting is not work.
      g.conv.op_values[s] += type == kWaiting ? 0.0 : dur * t.inv_busy;
      g.single.op_values[s] += single;
      if (g.op_last_worker[s] != w) {
        g.op_last_worker[s] = w;
        ++g.op_workers[s];
      }
    }
  }
}

// Messages into the groupings by activity type and (sender, receiver) pair.
void group_messages(const Pag& pag, const Snapshot& snap, const CpResult& cp,
                    const ProfileTotals& t, const SampledPath& path, WindowGroups& g) {
  for (size_t k = 0; k < snap.msg_src.size(); ++k) {
    const Message& m = pag.messages[snap.msg_index[k]];
    const double dur = static_cast<double>(snap.ts[snap.msg_dst[k]] - snap.ts[snap.msg_src[k]]);
    // A merged edge (Snapshot::msg_mult) is that many pieces; a sampled path takes one.
    const double mult = static_cast<double>(snap.mult(k));
    const double c = cp.message_cp[k] * mult;
    const double conv = dur * t.inv_total * mult;
    const double single = !path.message.empty() && path.message[k] ? dur * t.inv_span : 0.0;
    const int type = static_cast<int>(m.type);
    g.cp.groups.activity[type] += c;
    g.conv.groups.activity[type] += conv;
    g.single.groups.activity[type] += single;
    const uint32_t cell = g.pairs(m.src_worker, m.dst_worker);
    g.cp.add_comm(cell, c);
    g.conv.add_comm(cell, conv);
    g.single.add_comm(cell, single);
  }
}

// The CP computation's counts and the shares of unknown and waiting time.
void fill_diagnostics(const CpResult& cp, const ProfileTotals& t, Diagnostics& d) {
  d = Diagnostics{};
  d.no_paths = !cp.has_paths();
  d.property1_violations = cp.property1_violations;
  d.zero_duration_cycles = cp.zero_duration_cycles;
  d.unknown_share = t.timeline > 0 ? t.unknown / t.timeline : 0;
  d.waiting_share = t.timeline > 0 ? t.waiting / t.timeline : 0;
  d.property2_violations = cp.property2_violations;
  d.property2_ns = cp.property2_ns;
  d.input_idle_ns = cp.input_idle_ns;
  d.segments = cp.segments;
  d.no_path_segments = cp.no_path_segments;
}

// Counts the PAG's issues inside the window; `cursor` walks the issues (in time order)
// across consecutive windows.
void count_issues(const std::vector<IssueAt>& issues, const Window& window, size_t& cursor,
                  Diagnostics& d) {
  while (cursor < issues.size() && issues[cursor].ts < window.start) ++cursor;
  while (cursor < issues.size() && (issues[cursor].ts < window.end ||
                                    (window.closed_end && issues[cursor].ts == window.end))) {
    ++d.issues[static_cast<int>(issues[cursor].issue)];
    ++cursor;
  }
}

}  // namespace

Summarizer::Summarizer(const Pag& pag) : pag_(pag), op_ids_(pag.operator_ids) {}

void Summarizer::summarize(const Snapshot& snap, const CpResult& cp,
                           const std::vector<uint32_t>& sampled, const SummaryOptions& options,
                           WindowSummary& out) {
  fill_window_facts(snap, cp, out);
  // Top-k activities do not depend on the groupings: on large windows they run on a
  // second thread meanwhile. The computation keeps its order, so the results are the same
  // either way.
  std::vector<TopActivity> top;
  auto side_work = [&] { top = top_activities(pag_, snap, cp, options.top_k); };
  std::thread side;
  if (snap.node_count() >= options.split_min_nodes) side = std::thread(side_work);

  static thread_local WindowGroups groups;
  groups.reset(pag_.worker_count(), op_ids_.size());
  const ProfileTotals totals = profile_totals(snap, cp);
  const SampledPath path(sampled, snap.node_count(), snap.msg_src.size());
  group_timeline_edges(pag_, snap, cp, totals, path, op_ids_, groups);
  group_messages(pag_, snap, cp, totals, path, groups);
  groups.finish(op_ids_, out);

  if (side.joinable())
    side.join();
  else
    side_work();
  out.top = std::move(top);

  fill_diagnostics(cp, totals, out.diagnostics);
  count_issues(pag_.issues, snap.window, issue_cursor_, out.diagnostics);
}

}  // namespace snailtrail
