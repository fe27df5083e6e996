#include "loop/rebalancer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "pag/timeline.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::loop {

namespace {
// An interval is analyzed once every worker's events have passed its end by this much,
// and the events from this long before it on are kept for the next one.
constexpr int64_t kMarginNs = 100'000'000;

// message_join pairs a send and its receive by (sender, receiver, correlator).
using MessageKey = std::tuple<uint32_t, uint32_t, int64_t>;
bool is_paired_message(const Event& e) {
  return e.is_message() && e.has(kHasCorrelator) && e.has(kHasRemote);
}
MessageKey key_of(const Event& e) {
  return e.kind == EventKind::send ? MessageKey{e.worker, e.remote, e.correlator}
                                   : MessageKey{e.remote, e.worker, e.correlator};
}
// The receives among `events`: their keys and times, sorted.
using Receipt = std::pair<MessageKey, int64_t>;
std::vector<Receipt> receipts(const std::vector<Event>& events) {
  std::vector<Receipt> r;
  for (const Event& e : events)
    if (e.kind == EventKind::recv && is_paired_message(e)) r.emplace_back(key_of(e), e.ts);
  std::sort(r.begin(), r.end());
  return r;
}
// For a send: when it was received (the first receipt of its key), INT64_MAX: not yet.
int64_t received_at(const Event& send, const std::vector<Receipt>& receipts) {
  const MessageKey k = key_of(send);
  auto it = std::lower_bound(receipts.begin(), receipts.end(), Receipt{k, INT64_MIN});
  return it != receipts.end() && it->first == k ? it->second : INT64_MAX;
}
bool is_paired_send(const Event& e) {
  return e.kind == EventKind::send && is_paired_message(e);
}

// Drops the events before `keep_from`, except what the analysis of a later interval needs
// to see as `analyze` sees it in the whole trace:
// - per worker, its last activity that began before then (open or not) and what follows:
//   without it, a worker waiting or working across `keep_from` and the next interval's
//   start would have a timeline that begins later than the written trace's;
// - the sends received after `keep_from` or not yet: a message into a later interval is
//   cut at its start, on the sender's side;
// - the other half of every message kept: a send kept with its sender's last activity but
//   received before the receiver's would look unreceived, and be cut at the end of every
//   later interval as if still in flight.
// A worker's timeline is flat (one activity at a time, docs/PAG.md), and its events come
// in time order.
void drop_before(std::vector<Event>& events, int64_t keep_from) {
  std::vector<size_t> last_start;  // per worker: index + 1 of its last start before, 0: none
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.ts >= keep_from) continue;
    if (e.worker >= last_start.size()) last_start.resize(e.worker + 1, 0);
    if (e.kind == EventKind::start) last_start[e.worker] = i + 1;
  }
  const std::vector<Receipt> received = receipts(events);
  const auto needed = [&](size_t i) {
    const Event& e = events[i];
    return e.ts >= keep_from ||
           (e.worker < last_start.size() && last_start[e.worker] != 0 &&
            i + 1 >= last_start[e.worker]) ||
           (is_paired_send(e) && received_at(e, received) >= keep_from);
  };
  std::vector<MessageKey> kept_messages;
  for (size_t i = 0; i < events.size(); ++i)
    if (is_paired_message(events[i]) && needed(i)) kept_messages.push_back(key_of(events[i]));
  std::sort(kept_messages.begin(), kept_messages.end());
  size_t kept = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (needed(i) || (is_paired_message(e) &&
                      std::binary_search(kept_messages.begin(), kept_messages.end(), key_of(e))))
      events[kept++] = e;
  }
  events.resize(kept);
}

// The events to analyze [from, to) with: all those kept, and for each message sent before
// `to` and not received yet, its receive after the receiver's last event. The written
// trace has it later still; either way the window cuts the message at `to` on the
// receiver's side (pag/snapshot.cpp), so the window's PAG is the same.
std::vector<Event> window_events(const std::vector<Event>& events,
                                 const std::vector<int64_t>& last_ts, int64_t to) {
  std::vector<Event> window = events;
  const std::vector<Receipt> received = receipts(events);
  for (const Event& e : events) {
    if (e.ts >= to || e.remote >= last_ts.size() || !is_paired_send(e) ||
        received_at(e, received) != INT64_MAX)
      continue;
    Event r = e;
    r.kind = EventKind::recv;
    r.worker = e.remote;
    r.remote = e.worker;
    r.ts = std::max(last_ts[e.remote], to) + 1;
    window.push_back(r);
  }
  return window;
}
}  // namespace

std::vector<uint32_t> contiguous_config(uint32_t bins, uint32_t active) {
  if (active == 0) throw std::invalid_argument("contiguous_config: at least one worker");
  std::vector<uint32_t> c(bins);
  for (uint32_t b = 0; b < bins; ++b)
    c[b] = static_cast<uint32_t>(static_cast<uint64_t>(b) * active / bins);
  return c;
}

std::vector<double> cp_per_worker(std::vector<Event> events,
                                  const std::vector<std::string>& operator_names, uint32_t workers,
                                  int64_t from_ns, int64_t to_ns) {
  std::vector<double> cp(workers, 0.0);
  if (events.empty() || to_ns <= from_ns) return cp;
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  Trace t;
  t.source = "run --rebalance";
  t.events.resize(events.size());
  std::copy(events.begin(), events.end(), t.events.begin());
  std::vector<Event>().swap(events);
  for (uint32_t w = 0; w < workers; ++w) t.worker_names[w] = fmt::format("worker-{}", w);
  for (uint32_t i = 0; i < operator_names.size(); ++i) t.operator_names[i] = operator_names[i];
  const Pag pag = build_pag(t);
  AnalysisOptions ao;
  ao.windows.width_ns = to_ns - from_ns;
  ao.windows.from_ns = from_ns;
  ao.windows.to_ns = to_ns;
  ao.sample_single_path = false;
  Aggregate agg;
  analyze_pag(pag, ao, [&](const WindowView& v) {
    if (v.summary.window.empty_run == 0) agg.add(v.summary, 0);
  });
  agg.finish();
  for (size_t k = 0; k < pag.worker_count() && k < agg.cp.worker.size(); ++k)
    if (pag.worker_ids[k] < workers) cp[pag.worker_ids[k]] = agg.cp.worker[k];
  return cp;
}

std::vector<uint32_t> move_hot_bins(const std::vector<uint32_t>& config,
                                    const std::vector<uint64_t>& load, uint32_t straggler,
                                    uint32_t active, double tolerance,
                                    std::vector<uint32_t>* moved) {
  std::vector<uint32_t> out = config;
  if (moved) moved->clear();
  if (active < 2 || straggler >= active || load.size() != config.size()) return out;
  std::vector<double> per(active, 0.0);
  double total = 0;
  for (size_t b = 0; b < config.size(); ++b) {
    if (config[b] < active) per[config[b]] += static_cast<double>(load[b]);
    total += static_cast<double>(load[b]);
  }
  const double bound = total / active * (1 + tolerance);
  std::vector<uint32_t> mine;
  for (uint32_t b = 0; b < config.size(); ++b)
    if (config[b] == straggler && load[b] > 0) mine.push_back(b);
  std::stable_sort(mine.begin(), mine.end(),
                   [&](uint32_t a, uint32_t b) { return load[a] > load[b]; });
  for (uint32_t b : mine) {
    if (per[straggler] <= bound) break;
    uint32_t to = straggler;
    for (uint32_t w = 0; w < active; ++w)
      if (w != straggler && (to == straggler || per[w] < per[to])) to = w;
    const auto x = static_cast<double>(load[b]);
    // Only a move that lowers the larger of the two loads (no new straggler).
    if (per[to] + x >= per[straggler]) continue;
    per[straggler] -= x;
    per[to] += x;
    out[b] = to;
    if (moved) moved->push_back(b);
  }
  return out;
}

Rebalancer::Rebalancer(RebalanceOptions options)
    : opt_(std::move(options)), last_ts_(opt_.workers, -1) {
  if (opt_.workers == 0) throw std::invalid_argument("rebalance: at least one worker");
  if (opt_.policy_interval_ns <= 0)
    throw std::invalid_argument("rebalance: the policy interval must be positive");
  if (!opt_.bin_counts) throw std::invalid_argument("rebalance: needs the per-bin record counts");
}

void Rebalancer::on_events(const std::vector<Event>& events, const std::vector<std::string>& ops) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ops_.size() < ops.size()) ops_ = ops;
  for (const Event& e : events) {
    if (e.worker < last_ts_.size()) last_ts_[e.worker] = std::max(last_ts_[e.worker], e.ts);
    if (e.ts >= keep_from_) events_.push_back(e);
  }
}

void Rebalancer::external_migration() {
  std::lock_guard<std::mutex> lock(mu_);
  migrating_ = true;
}

std::optional<std::vector<uint32_t>> Rebalancer::plan(int64_t now_ns,
                                                      const std::vector<uint32_t>& config) {
  const int64_t I = opt_.policy_interval_ns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (migrating_) {  // called again: the migration is complete
      migrating_ = false;
      settled_ns_ = now_ns;
      ++migrations_;
    }
  }
  // An analysis runs on its own thread (not on worker 0's, which runs this controller):
  // its result is decided on at the first call after it is done.
  if (pending_.valid()) {
    if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return std::nullopt;
    auto [cp, ms] = pending_.get();
    CpAnalysis a = std::move(pending_a_);
    a.cp = std::move(cp);
    a.analysis_ms = ms;
    // A migration since the analysis started: its configuration is not the one analyzed.
    const bool stale = pending_migrations_ != migrations_;
    return decide(std::move(a), pending_load_, config, now_ns, stale);
  }
  std::vector<Event> window;
  std::vector<std::string> ops;
  int64_t from = 0, to = 0;
  std::vector<uint64_t> load;  // records per bin since the last tick
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t watermark = INT64_MAX;
    for (int64_t t : last_ts_) watermark = std::min(watermark, t);
    if (watermark < kMarginNs) return std::nullopt;
    // The last interval of the grid [k I, (k + 1) I) that every worker's events have
    // passed by the margin: the window `analyze --window I` of the written trace has the
    // same borders. Looked at on the first call after its evidence is complete (every
    // call, not only at policy ticks: a tick every I analyzed [t - 2I, t - I) at t, as
    // the watermark trails the clock by a trace flush), once.
    to = (watermark - kMarginNs) / I * I;
    if (to <= looked_until_) return std::nullopt;
    looked_until_ = to;
    from = to - I;
    // Skipped: the first interval (start-up), intervals analyzed already and intervals
    // with a migration in them (the configuration in force was not the one analyzed).
    const bool skip = from < I || to <= analyzed_until_ || from < settled_ns_;
    // The load per bin since the last look (about one interval).
    const std::vector<uint64_t> totals = opt_.bin_counts();
    load.assign(totals.size(), 0);
    const bool have_counts = counts_at_tick_.size() == totals.size();
    if (have_counts)
      for (size_t b = 0; b < totals.size(); ++b) load[b] = totals[b] - counts_at_tick_[b];
    counts_at_tick_ = totals;
    if (skip || !have_counts) {
      if (to > analyzed_until_ && from >= settled_ns_) analyzed_until_ = to;
      keep_from_ = std::max(keep_from_, to - kMarginNs);
      drop_before(events_, keep_from_);
      return std::nullopt;
    }
    analyzed_until_ = to;
    window = window_events(events_, last_ts_, to);
    keep_from_ = to - kMarginNs;
    drop_before(events_, keep_from_);
    ops = ops_;
  }
  pending_a_ = CpAnalysis{};
  pending_a_.time_s = static_cast<double>(now_ns) * 1e-9;
  pending_a_.from_s = static_cast<double>(from) * 1e-9;
  pending_a_.to_s = static_cast<double>(to) * 1e-9;
  pending_a_.events = window.size();
  pending_load_ = std::move(load);
  pending_migrations_ = migrations_;
  pending_ = std::async(std::launch::async, [w = std::move(window), ops = std::move(ops),
                                             workers = opt_.workers, from, to]() mutable {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> cp = cp_per_worker(std::move(w), ops, workers, from, to);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(std::move(cp), ms);
  });
  return std::nullopt;
}

std::optional<std::vector<uint32_t>> Rebalancer::decide(CpAnalysis a,
                                                        const std::vector<uint64_t>& load,
                                                        const std::vector<uint32_t>& config,
                                                        int64_t now_ns, bool stale) {
  for (uint32_t w = 0; w < opt_.workers; ++w)
    if (a.top < 0 || a.cp[w] > a.top_cp) a.top = w, a.top_cp = a.cp[w];
  for (uint32_t w = 0; w < opt_.workers; ++w)
    if (static_cast<int64_t>(w) != a.top) a.next_cp = std::max(a.next_cp, a.cp[w]);
  a.straggler = a.top >= 0 && a.top_cp > 0 && a.top_cp >= opt_.over_next * a.next_cp;
  const uint32_t active = opt_.active ? opt_.active() : opt_.workers;
  std::optional<std::vector<uint32_t>> result;
  std::lock_guard<std::mutex> lock(mu_);
  if (!stale && a.straggler && static_cast<uint32_t>(a.top) < active) {
    const auto s = static_cast<uint32_t>(a.top);
    std::vector<uint32_t> moved;
    std::vector<uint32_t> next = move_hot_bins(config, load, s, active, opt_.tolerance, &moved);
    if (!moved.empty()) {
      double total = 0, before = 0, shifted = 0;
      for (size_t b = 0; b < load.size(); ++b) {
        total += static_cast<double>(load[b]);
        if (config[b] == s) before += static_cast<double>(load[b]);
      }
      for (uint32_t b : moved) shifted += static_cast<double>(load[b]);
      DecisionRecord d;
      d.time_s = static_cast<double>(now_ns) * 1e-9;
      d.active_workers = active;
      d.kind = "rebalance";
      d.straggler = s;
      d.cp_share = a.top_cp;
      d.next_cp = a.next_cp;
      d.bins = moved;
      d.reason = fmt::format(
          "cp: straggler worker-{} has {:.1f}% of the critical participation (next {:.1f}%, "
          "interval {:.1f}-{:.1f} s) and {:.1f}% of the records over {} active workers: moved "
          "its {} hottest bins ({:.1f}% of the records) to the least-loaded workers",
          s, 100 * a.top_cp, 100 * a.next_cp, a.from_s, a.to_s,
          total > 0 ? 100 * before / total : 0.0, active, moved.size(),
          total > 0 ? 100 * shifted / total : 0.0);
      decisions_.push_back(std::move(d));
      a.moved = true;
      migrating_ = true;
      result = std::move(next);
    }
  }
  analyses_.push_back(std::move(a));
  return result;
}

std::vector<DecisionRecord> Rebalancer::decisions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decisions_;
}

std::vector<CpAnalysis> Rebalancer::analyses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return analyses_;
}

std::string analyses_json(const std::vector<CpAnalysis>& as) {
  std::string out = "[";
  for (size_t i = 0; i < as.size(); ++i) {
    const CpAnalysis& a = as[i];
    out += fmt::format(
        "{}{{\"time_s\": {:.6g}, \"from_s\": {:.6g}, \"to_s\": {:.6g}, \"top\": \"worker-{}\", "
        "\"top_cp\": {:.6g}, \"next_cp\": {:.6g}, \"straggler\": {}, \"moved\": {}, "
        "\"events\": {}, \"analysis_ms\": {:.3f}, \"cp\": [",
        i ? ", " : "", a.time_s, a.from_s, a.to_s, a.top, a.top_cp, a.next_cp,
        a.straggler ? "true" : "false", a.moved ? "true" : "false", a.events, a.analysis_ms);
    for (size_t w = 0; w < a.cp.size(); ++w) out += fmt::format("{}{:.4g}", w ? ", " : "", a.cp[w]);
    out += "]}";
  }
  return out + "]";
}

}  // namespace snailtrail::loop
