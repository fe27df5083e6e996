#include "loop/autoscaler.hpp"
#include "trace/plural.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include "trace/environment.hpp"
#include "trace/json_text.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::loop {

std::vector<uint32_t> spread(const std::vector<uint32_t>& config, uint32_t active) {
  if (active == 0) throw std::invalid_argument("spread: at least one active worker");
  const auto B = static_cast<uint32_t>(config.size());
  std::vector<uint32_t> quota(active, B / active);
  for (uint32_t w = 0; w < B % active; ++w) ++quota[w];
  std::vector<uint32_t> held(active, 0);
  std::vector<uint32_t> out(config.size(), UINT32_MAX);
  for (uint32_t b = 0; b < B; ++b) {
    const uint32_t w = config[b];
    if (w < active && held[w] < quota[w]) {
      out[b] = w;
      ++held[w];
    }
  }
  uint32_t w = 0;
  for (uint32_t b = 0; b < B; ++b) {
    if (out[b] != UINT32_MAX) continue;
    while (held[w] >= quota[w]) ++w;
    out[b] = w;
    ++held[w];
  }
  return out;
}

int64_t default_startup_ns(int64_t policy_interval_ns) {
  return std::max<int64_t>(2'000'000'000, 2 * policy_interval_ns);
}

int64_t default_scale_in_after_ns(int64_t policy_interval_ns) {
  return std::max<int64_t>(2'000'000'000, 3 * policy_interval_ns);
}

uint32_t scale_in_intervals(int64_t scale_in_after_ns, int64_t policy_interval_ns) {
  if (scale_in_after_ns <= 0 || policy_interval_ns <= 0) return 1;
  const int64_t n = (scale_in_after_ns + policy_interval_ns - 1) / policy_interval_ns;
  return static_cast<uint32_t>(std::clamp<int64_t>(n, 1, 1'000'000));
}

namespace {

scale::Topology loop_topology(const LoopOptions& o) {
  scale::Topology t;
  const uint32_t src = t.add_operator(o.source_op, o.max_workers);
  const uint32_t st = t.add_operator(o.stateful_op, o.initial_workers);
  t.add_edge(src, st);
  return t;
}

}  // namespace

namespace {

// The options with the scale-in hysteresis resolved into the manager's.
LoopOptions resolved(LoopOptions o) {
  if (o.scale_in_after_ns < 0)
    o.scale_in_after_ns = default_scale_in_after_ns(o.policy_interval_ns);
  o.manager.scale_in_after = scale_in_intervals(o.scale_in_after_ns, o.policy_interval_ns);
  return o;
}

}  // namespace

Autoscaler::Autoscaler(LoopOptions options)
    : opt_(resolved(std::move(options))),
      topology_(loop_topology(opt_)),
      manager_(topology_, opt_.manager),
      collector_(opt_.policy_interval_ns),
      last_ts_(opt_.max_workers, -1),
      active_(opt_.initial_workers) {
  link_.workers = opt_.max_workers;
  if (opt_.max_workers == 0 || opt_.initial_workers == 0 || opt_.initial_workers > opt_.max_workers)
    throw UsageError({"autoscale: the initial workers must be in [1, ", field("max_workers"), "]"});
  if (opt_.policy_interval_ns <= 0)
    throw std::invalid_argument("autoscale: the policy interval must be positive");
  if (opt_.rate_profile.empty())
    throw std::invalid_argument(
        "autoscale: needs the sources' target rate (--rate or --rate-profile)");
  if (opt_.startup_ns < 0) opt_.startup_ns = default_startup_ns(opt_.policy_interval_ns);
}

std::vector<uint32_t> Autoscaler::initial_config() const {
  std::vector<uint32_t> c(opt_.bins);
  for (uint32_t b = 0; b < opt_.bins; ++b) c[b] = b % opt_.initial_workers;
  return c;
}

void Autoscaler::on_events(const std::vector<Event>& events, const std::vector<std::string>& ops) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stateful_op_ < 0 || source_op_ < 0)
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i] == opt_.stateful_op) stateful_op_ = static_cast<int64_t>(i);
      if (ops[i] == opt_.source_op) source_op_ = static_cast<int64_t>(i);
    }
  for (const Event& e : events) {
    collector_.add(e);
    if (e.kind == EventKind::end && e.has(kHasOperator) && e.has(kHasRecords) && e.records > 0) {
      if (static_cast<int64_t>(e.op) == source_op_)
        first_out_source_ = std::min(first_out_source_, e.ts);
      else if (static_cast<int64_t>(e.op) == stateful_op_)
        first_out_stateful_ = std::min(first_out_stateful_, e.ts);
    }
    if (e.worker < last_ts_.size()) last_ts_[e.worker] = std::max(last_ts_[e.worker], e.ts);
  }
  if (opt_.keep_events) kept_.insert(kept_.end(), events.begin(), events.end());
  if (link_.rank > 0) send_report();
}

void Autoscaler::link_ranks(RankLink link) {
  std::lock_guard<std::mutex> lock(mu_);
  if (link.procs == 0 || link.rank >= link.procs ||
      uint64_t{link.procs} * link.workers != opt_.max_workers ||
      link.first_worker != link.rank * link.workers)
    throw std::invalid_argument(
        fmt::format("autoscale: rank {} of {} with workers [{}, +{}) does not cover the {}",
                    link.rank, link.procs, link.first_worker, link.workers,
                    counted(opt_.max_workers, "worker", "workers")));
  if (link.procs > 1 && ((link.rank > 0 && !link.send) || (link.rank == 0 && !link.receive)))
    throw std::invalid_argument("autoscale: a rank link without its send/receive");
  link_ = std::move(link);
  remote_wm_.assign(link_.procs, -1);
}

std::pair<uint64_t, uint64_t> Autoscaler::reports() {
  std::lock_guard<std::mutex> lock(mu_);
  if (link_.procs > 1 && link_.rank == 0)
    for (const std::string& msg : link_.receive()) {
      ++reports_;
      report_bytes_ += msg.size();
    }
  return {reports_, report_bytes_};
}

int64_t Autoscaler::local_watermark() const {
  int64_t w = INT64_MAX;
  // Not past an activity still open: its records come with its end (an interval closed
  // before would get its useful time without them, and DS2 a true rate too low).
  for (uint32_t i = link_.first_worker; i < link_.first_worker + link_.workers; ++i)
    w = std::min({w, last_ts_[i], collector_.open_since(i)});
  return w;
}

void Autoscaler::send_report() {
  const int64_t wm = local_watermark();
  if (wm < 0 || stateful_op_ < 0 || source_op_ < 0) return;
  const int64_t k = wm / opt_.policy_interval_ns;
  if (k <= sent_k_) return;
  RankReport r;
  r.rank = link_.rank;
  r.watermark_ns = wm;
  r.intervals = collector_.advance(wm);
  // Only the two operators DS2 sizes cross (the rest of the dataflow is not in its model).
  for (auto& m : r.intervals)
    std::erase_if(m.instances, [&](const scale::InstanceMetrics& x) {
      return x.op != static_cast<uint32_t>(source_op_) &&
             x.op != static_cast<uint32_t>(stateful_op_);
    });
  std::string bytes = encode_report(r);
  ++reports_;
  report_bytes_ += bytes.size();
  link_.send(std::move(bytes));
  sent_k_ = k;
}

int64_t Autoscaler::absorb_reports(int64_t local) {
  for (const std::string& msg : link_.receive()) {
    RankReport r = decode_report(msg);
    if (r.rank == 0 || r.rank >= link_.procs)
      throw std::runtime_error(
          fmt::format("autoscale: a report from rank {} of {}", r.rank, link_.procs));
    ++reports_;
    report_bytes_ += msg.size();
    remote_wm_[r.rank] = std::max(remote_wm_[r.rank], r.watermark_ns);
    for (auto& m : r.intervals) {
      auto [it, fresh] = remote_.try_emplace(m.start_ns, std::move(m));
      if (!fresh) {  // another rank's part of the same interval
        auto& xs = it->second.instances;
        xs.insert(xs.end(), std::make_move_iterator(m.instances.begin()),
                  std::make_move_iterator(m.instances.end()));
        it->second.end_ns = std::max(it->second.end_ns, m.end_ns);
      }
    }
  }
  int64_t w = local;
  for (uint32_t r = 1; r < link_.procs; ++r) w = std::min(w, remote_wm_[r]);
  return w;
}

std::vector<scale::IntervalMetrics> Autoscaler::merge_remote(
    std::vector<scale::IntervalMetrics> closed, int64_t watermark) {
  std::map<int64_t, scale::IntervalMetrics> all;
  for (auto& m : closed) {
    const int64_t start = m.start_ns;
    all.emplace(start, std::move(m));
  }
  // Every rank has sent the intervals that end at or before its watermark, which is at
  // least `watermark`: those are complete.
  while (!remote_.empty() && remote_.begin()->second.end_ns <= watermark) {
    auto node = remote_.extract(remote_.begin());
    auto [it, fresh] = all.try_emplace(node.key(), std::move(node.mapped()));
    if (!fresh) {
      auto& xs = it->second.instances;
      auto& ys = node.mapped().instances;
      xs.insert(xs.end(), std::make_move_iterator(ys.begin()), std::make_move_iterator(ys.end()));
    }
  }
  std::vector<scale::IntervalMetrics> out;
  out.reserve(all.size());
  for (auto& [start, m] : all) {
    // In the order one collector gives them: by operator, then worker.
    std::sort(m.instances.begin(), m.instances.end(), [](const auto& x, const auto& y) {
      const auto wx = std::strtoul(x.worker.c_str(), nullptr, 10);
      const auto wy = std::strtoul(y.worker.c_str(), nullptr, 10);
      return x.op != y.op ? x.op < y.op : wx < wy;
    });
    out.push_back(std::move(m));
  }
  return out;
}

double Autoscaler::target_at(int64_t ns) const {
  double r = opt_.rate_profile.front().second;
  for (const auto& [from, rate] : opt_.rate_profile)
    if (from <= ns) r = rate;
  return r;
}

std::optional<std::vector<uint32_t>> Autoscaler::plan(int64_t now_ns,
                                                      const std::vector<uint32_t>& config) {
  std::lock_guard<std::mutex> lock(mu_);
  if (migrating_) {  // called again: the migration is complete
    migrating_ = false;
    settled_ns_ = now_ns;
  }
  // Every call (not only at policy ticks): an interval is shown to DS2 as soon as every
  // worker's events have passed its end. Waiting for the next tick decided on the interval
  // [t, t + I) only at t + 2I (the watermark trails the clock by a trace flush).
  int64_t watermark = local_watermark();
  if (link_.procs > 1) watermark = absorb_reports(watermark);
  if (watermark < 0 || stateful_op_ < 0 || source_op_ < 0) return std::nullopt;
  std::vector<scale::IntervalMetrics> closed = collector_.advance(watermark);
  if (link_.procs > 1) closed = merge_remote(std::move(closed), watermark);
  for (const scale::IntervalMetrics& m : closed) {
    // Start-up: the job is not in steady operation before --startup (its first records
    // pay for cold caches, page faults and the state's first allocations: DS2 measured
    // true rates of 0.1-13 k records/s up to 2 s where 125 k/s is the steady rate), and
    // an interval that starts before both operators have produced output does not
    // measure their rates over all of it.
    if (m.start_ns < opt_.startup_ns ||
        m.start_ns < std::max(first_out_source_, first_out_stateful_)) {
      ++in_startup_;
      continue;
    }
    // Intervals with a migration in them are not representative of the configuration in
    // force (--warmup: DS2 ignores more after a change).
    if (m.start_ns < settled_ns_) continue;
    scale::Observation o;
    o.time_s = static_cast<double>(m.end_ns) * 1e-9;
    o.parallelism = {opt_.max_workers, active_};
    for (const scale::InstanceMetrics& x : m.instances) {
      const uint32_t worker = static_cast<uint32_t>(std::strtoul(x.worker.c_str(), nullptr, 10));
      if (x.op == static_cast<uint32_t>(source_op_)) {
        scale::InstanceMetrics y = x;
        y.op = 0;
        o.instances.push_back(y);
      } else if (x.op == static_cast<uint32_t>(stateful_op_) && worker < active_) {
        scale::InstanceMetrics y = x;
        y.op = 1;
        o.instances.push_back(y);
      }
    }
    o.source_target = {target_at(std::max(m.start_ns, m.end_ns - 1)), NAN};
    ++observed_;
    std::optional<scale::Action> a = manager_.observe(o);
    if (!a) continue;
    const uint32_t want = std::clamp<uint32_t>(a->parallelism[1], 1, opt_.max_workers);
    if (want == active_) continue;
    // The reason: DS2's target for the stateful operator and its instances' true rate.
    double per = 0;
    uint32_t n = 0;
    for (const scale::InstanceMetrics& x : o.instances)
      if (x.op == 1 && x.useful_s > 0) per += x.records_in / x.useful_s, ++n;
    const auto& d = manager_.last_decision();
    const double target = d && d->target_rate.size() > 1 ? d->target_rate[1] : NAN;
    const std::string why = fmt::format(
        "ds2: {} needs {} for {:.0f} records/s (true processing rate {:.0f} records/s per "
        "worker over {} active, interval {:.1f}-{:.1f} s)",
        opt_.stateful_op, counted(want, "worker", "workers"), target, n ? per / n : 0.0, active_,
        static_cast<double>(m.start_ns) * 1e-9, static_cast<double>(m.end_ns) * 1e-9);
    active_ = want;
    DecisionRecord rec;
    rec.time_s = static_cast<double>(now_ns) * 1e-9;
    rec.active_workers = want;
    rec.reason = why;
    rec.evidence_end_s = static_cast<double>(m.end_ns) * 1e-9;
    decisions_.push_back(std::move(rec));
    // Test hook (tests/loop_mpi.sh): a line per decision, as it is taken.
    if (const char* mark = environment_value("SNAILTRAIL_LOOP_DECISION_MARK"))
      if (std::FILE* f = std::fopen(mark, "a")) {
        std::fprintf(f, "%.3f %u\n", static_cast<double>(now_ns) * 1e-9, want);
        std::fclose(f);
      }
    migrating_ = true;
    return spread(config, want);
  }
  return std::nullopt;
}

std::vector<DecisionRecord> Autoscaler::decisions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decisions_;
}

uint32_t Autoscaler::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

void Autoscaler::external_migration() {
  std::lock_guard<std::mutex> lock(mu_);
  migrating_ = true;
}

uint64_t Autoscaler::intervals_observed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_;
}

uint64_t Autoscaler::intervals_in_startup() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_startup_;
}

std::vector<Event> Autoscaler::take_events() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Event> out;
  out.swap(kept_);
  return out;
}

std::string decisions_json(const std::vector<DecisionRecord>& ds) {
  auto quoted = [](const std::string& s) {
    std::string o;
    append_json_string(o, s, kJsonPlain);
    return o;
  };
  std::string out = "[";
  for (size_t i = 0; i < ds.size(); ++i) {
    const DecisionRecord& d = ds[i];
    out += fmt::format("{}{{\"time_s\": {:.6g}, \"kind\": {}, \"active_workers\": {}, ",
                       i ? ", " : "", d.time_s, quoted(d.kind), d.active_workers);
    if (d.kind == "rebalance") {
      out += fmt::format(
          "\"straggler\": \"worker-{}\", \"cp_share\": {:.6g}, \"next_cp\": {:.6g}, "
          "\"bins_moved\": {}, \"bins\": [",
          d.straggler, d.cp_share, d.next_cp, d.bins.size());
      for (size_t k = 0; k < d.bins.size(); ++k)
        out += fmt::format("{}{}", k ? ", " : "", d.bins[k]);
      out += "], ";
    }
    if (d.evidence_end_s >= 0) out += fmt::format("\"evidence_end_s\": {:.6g}, ", d.evidence_end_s);
    out += fmt::format("\"reason\": {}}}", quoted(d.reason));
  }
  return out + "]";
}

}  // namespace snailtrail::loop
