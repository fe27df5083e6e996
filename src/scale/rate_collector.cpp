#include "scale/rate_collector.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace snailtrail::scale {
namespace {

bool is_useful(ActivityType t) {
  return t == ActivityType::deserialization || t == ActivityType::processing ||
         t == ActivityType::serialization;
}

uint64_t key(uint32_t a, uint32_t b) {
  return (uint64_t{a} << 32) | b;
}

}  // namespace

RateCollector::RateCollector(int64_t interval_ns, int64_t origin_ns)
    : interval_ns_(interval_ns), origin_ns_(origin_ns) {
  if (interval_ns <= 0) throw std::invalid_argument("the policy interval must be positive");
}

int64_t RateCollector::interval_of(int64_t ts) const {
  int64_t d64;
  if (!__builtin_sub_overflow(ts, origin_ns_, &d64)) {  // the common case: 64-bit division
    const int64_t q = d64 / interval_ns_;
    return d64 % interval_ns_ != 0 && d64 < 0 ? q - 1 : q;
  }
  const __int128 d = static_cast<__int128>(ts) - origin_ns_;  // no overflow at the extremes
  __int128 q = d / interval_ns_;
  if (d % interval_ns_ != 0 && d < 0) --q;
  return static_cast<int64_t>(q);
}

int64_t RateCollector::interval_start(int64_t k) const {
  const __int128 t = static_cast<__int128>(k) * interval_ns_ + origin_ns_;
  if (t > INT64_MAX) return INT64_MAX;
  if (t < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(t);
}

RateCollector::Acc& RateCollector::acc(int64_t k, uint32_t op, uint32_t worker) {
  const uint64_t id = key(op, worker);
  if (!instance_of_.count(id)) instance_of_[id] = instances_per_op_[op]++;
  return open_[k][id];
}

// Useful time [from, to) of an instance, split over the intervals it spans.
void RateCollector::credit(uint32_t op, uint32_t worker, int64_t from, int64_t to) {
  if (interval_of(to) - interval_of(from) > kMaxSpan) {
    ++overlong_;
    return;
  }
  while (from < to) {
    const int64_t k = interval_of(from);
    const int64_t end = std::min(to, interval_start(k + 1));
    if (k >= closed_) acc(k, op, worker).useful_ns += end - from;
    from = end;
  }
}

void RateCollector::count(double Acc::*field, uint32_t op, uint32_t worker, int64_t from,
                          int64_t to, double records) {
  from = std::min(from, to);
  if (interval_of(to) - interval_of(from) > kMaxSpan) {
    ++overlong_;
    return;
  }
  const int64_t first_open = interval_start(closed_);
  double carried = 0;  // share of parts in closed intervals
  const double span = static_cast<double>(to - from);
  while (true) {
    const int64_t k = interval_of(from);
    const int64_t end = std::min(to, interval_start(k + 1));
    const double share = span > 0 ? records * static_cast<double>(end - from) / span : records;
    if (end <= first_open && end < to) {
      carried += share;
    } else {
      acc(std::max(k, closed_), op, worker).*field += share + carried;
      carried = 0;
    }
    if (end >= to) break;
    from = end;
  }
}

void RateCollector::link(const MessageKey& k, int64_t src, int64_t dst) {
  // Messages never matched (lost, or sent to uninstrumented workers) must not make a
  // live stream's memory grow: the edges found so far are kept.
  if (links_.size() >= (1u << 20)) links_.clear();
  Link& l = links_[k];
  if (src >= 0) l.src = src;
  if (dst >= 0) l.dst = dst;
  if (l.src < 0 || l.dst < 0) return;
  if (l.src != l.dst) {
    const std::pair<uint32_t, uint32_t> e{static_cast<uint32_t>(l.src),
                                          static_cast<uint32_t>(l.dst)};
    if (edge_set_.insert(key(e.first, e.second)).second) edges_.push_back(e);
  }
  links_.erase(k);
}

void RateCollector::add(const Event& e) {
  last_ts_ = std::max(last_ts_, e.ts);
  const int64_t k = interval_of(e.ts);
  const bool late = e.ts < origin_ns_ || k < closed_;
  if (late) ++late_;
  if (!last_worker_ || last_worker_id_ != e.worker) {
    last_worker_id_ = e.worker;
    last_worker_ = &workers_[e.worker];
  }
  WorkerState& w = *last_worker_;
  const bool has_op = e.has(kHasOperator);
  switch (e.kind) {
    case EventKind::start:
      w.last_type = e.activity;
      w.last_start = e.ts;
      // Only the activities whose records count() splits (a wait may stay open long).
      w.last_open =
          has_op && (e.activity == ActivityType::processing || e.activity == ActivityType::input ||
                     e.activity == ActivityType::serialization || e.activity == ActivityType::io);
      if (has_op) {
        w.has_op = true;
        w.last_op = e.op;
        for (const MessageKey& m : w.inbound) link(m, -1, e.op);
        w.inbound.clear();
      }
      if (is_useful(e.activity) && has_op) {
        w.open = true;
        w.type = e.activity;
        w.op = e.op;
        w.since = std::max(e.ts, interval_start(closed_));
      }
      break;
    case EventKind::end: {
      if (e.activity == w.last_type) w.last_open = false;
      if (is_useful(e.activity) && w.open && w.type == e.activity) {
        w.open = false;
        credit(w.op, e.worker, w.since, std::max(w.since, e.ts));
      } else if (is_useful(e.activity)) {
        ++unmatched_ends_;
      }
      if (late || !has_op || !e.has(kHasRecords)) break;
      const int64_t start = w.last_type == e.activity ? w.last_start : e.ts;
      const double n = e.records;
      if (e.activity == ActivityType::processing)
        count(&Acc::processed, e.op, e.worker, start, e.ts, n);
      if (e.activity == ActivityType::input) count(&Acc::input, e.op, e.worker, start, e.ts, n);
      if (e.activity == ActivityType::serialization || e.activity == ActivityType::io)
        count(&Acc::serialized, e.op, e.worker, start, e.ts, n);
      break;
    }
    case EventKind::send:
      if (e.activity != ActivityType::data_message || !e.has(kHasCorrelator)) break;
      if (w.has_op) {
        link({e.worker, e.correlator}, w.last_op, -1);
        if (!late && e.has(kHasRecords)) acc(k, w.last_op, e.worker).sent += e.records;  // a point
      }
      break;
    case EventKind::recv:
      if (e.activity != ActivityType::data_message || !e.has(kHasCorrelator) || !e.has(kHasRemote))
        break;
      if (w.inbound.size() < 4096) w.inbound.push_back({e.remote, e.correlator});
      break;
  }
}

IntervalMetrics RateCollector::close(int64_t k, int64_t end_ns) {
  IntervalMetrics m;
  m.start_ns = interval_start(k);
  m.end_ns = end_ns;
  // Activities still running get their part up to the interval's end.
  for (auto& [worker, w] : workers_)
    if (w.open && w.since < end_ns) {
      credit(w.op, worker, w.since, end_ns);
      w.since = end_ns;
    }
  auto it = open_.find(k);
  if (it != open_.end()) {
    std::vector<std::pair<uint64_t, Acc>> rows(it->second.begin(), it->second.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const double window_s = static_cast<double>(end_ns - m.start_ns) * 1e-9;
    for (const auto& [id, a] : rows) {
      InstanceMetrics x;
      x.op = static_cast<uint32_t>(id >> 32);
      x.instance = instance_of_[id];
      x.worker = std::to_string(static_cast<uint32_t>(id));
      x.window_s = window_s;
      x.useful_s = static_cast<double>(a.useful_ns) * 1e-9;
      // Sources read (input) rather than process; sinks write (io).
      x.records_in = a.processed > 0 ? a.processed : a.input;
      x.records_out = a.serialized > 0 ? a.serialized : a.sent;
      m.instances.push_back(std::move(x));
    }
    open_.erase(it);
  }
  return m;
}

void RateCollector::close_until(int64_t limit, int64_t end_cap, std::vector<IntervalMetrics>& out) {
  // An activity still running across more than kMaxSpan intervals (a worker silent
  // while the others' timestamps jumped far ahead) is ignored like an overlong one:
  // closing its intervals one by one would take as long as the jump.
  if (static_cast<__int128>(limit) - closed_ > kMaxSpan)
    for (auto& [worker, w] : workers_)
      if (w.open && static_cast<__int128>(limit) - interval_of(w.since) > kMaxSpan) {
        w.open = false;
        ++overlong_;
      }
  while (closed_ < limit) {
    // The first interval with something recorded or running: the intervals before it
    // are idle and skipped (a stream may start far from the origin, e.g. at epoch time).
    int64_t next = open_.empty() ? INT64_MAX : open_.begin()->first;
    for (const auto& [worker, w] : workers_)
      if (w.open) next = std::min(next, interval_of(w.since));
    if (next > closed_) {
      closed_ = std::min(limit, next);
      continue;
    }
    const int64_t end = std::min(interval_start(closed_ + 1), end_cap);
    if (end > interval_start(closed_)) out.push_back(close(closed_, end));
    ++closed_;
  }
}

int64_t RateCollector::open_since(uint32_t worker) const {
  const auto it = workers_.find(worker);
  if (it == workers_.end()) return INT64_MAX;
  const WorkerState& w = it->second;
  int64_t t = INT64_MAX;
  if (w.open) t = w.since;
  if (w.last_open) t = std::min(t, w.last_start);
  return t;
}

std::vector<IntervalMetrics> RateCollector::advance(int64_t watermark_ns) {
  std::vector<IntervalMetrics> out;
  // Interval k is over when its end, start(k + 1), is at or before the watermark.
  close_until(interval_of(watermark_ns), INT64_MAX, out);
  return out;
}

std::vector<IntervalMetrics> RateCollector::finish() {
  std::vector<IntervalMetrics> out;
  if (last_ts_ == INT64_MIN) return out;
  close_until(interval_of(last_ts_) + 1, last_ts_, out);
  return out;
}

Topology RateCollector::topology(const std::function<std::string(uint32_t)>& name) const {
  std::set<uint32_t> ops;
  for (const auto& [op, n] : instances_per_op_) ops.insert(op);
  for (const auto& [a, b] : edges_) ops.insert(a), ops.insert(b);
  Topology t;
  for (uint32_t op : ops) {
    auto it = instances_per_op_.find(op);
    t.add_operator(name(op), it == instances_per_op_.end() ? 1 : it->second, std::to_string(op));
  }
  for (const auto& [a, b] : edges_)
    t.add_edge(*t.find_id(std::to_string(a)), *t.find_id(std::to_string(b)));
  return t;
}

IntervalRates interval_rates_by_index(const IntervalMetrics& m, const Topology& t) {
  IntervalRates r;
  r.parallelism.assign(t.size(), 0);
  for (const InstanceMetrics& x : m.instances) {
    if (x.op >= t.size()) continue;
    InstanceRates ir = x.rates();
    ir.op = x.op;
    r.instances.push_back(ir);
    ++r.parallelism[x.op];
  }
  for (size_t i = 0; i < t.size(); ++i)
    if (r.parallelism[i] == 0) r.parallelism[i] = t.parallelism[i];
  return r;
}

IntervalRates interval_rates(const IntervalMetrics& m, const Topology& t) {
  IntervalMetrics by_index{m.start_ns, m.end_ns, {}};
  for (const InstanceMetrics& x : m.instances)
    if (auto op = t.find_id(std::to_string(x.op))) {
      by_index.instances.push_back(x);
      by_index.instances.back().op = *op;
    }
  return interval_rates_by_index(by_index, t);
}

}  // namespace snailtrail::scale
