#include "serve/live_rates.hpp"

#include <fmt/format.h>

#include <cmath>

#include "scale/policy.hpp"
#include "scale/rates_json.hpp"

namespace snailtrail::serve {
namespace {

// A Prometheus label value: backslash, quote and newline escaped.
std::string label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

}  // namespace

LiveRates::LiveRates(int64_t interval_ns, size_t retain)
    : collector_(interval_ns), interval_ns_(interval_ns), retain_(retain) {
  if (retain == 0) throw std::invalid_argument("the rates retained must be at least 1");
}

void LiveRates::add_names(const Trace& names) {
  for (const auto& [id, name] : names.worker_names) names_.worker_names[id] = name;
  for (const auto& [id, name] : names.operator_names) names_.operator_names[id] = name;
}

void LiveRates::add(const Event& e) {
  if (e.ts < first_ts_) first_ts_ = e.ts;
  collector_.add(e);
}

void LiveRates::advance(int64_t watermark_ns) {
  if (first_ts_ == INT64_MAX) return;
  std::vector<scale::IntervalMetrics> closed = collector_.advance(watermark_ns);
  if (!closed.empty()) publish(std::move(closed));
}

void LiveRates::finish() {
  std::vector<scale::IntervalMetrics> closed = collector_.finish();
  if (!closed.empty()) publish(std::move(closed));
}

void LiveRates::publish(std::vector<scale::IntervalMetrics> closed) {
  auto op_name = [&](uint32_t op) { return names_.operator_name(op); };
  auto worker_name = [&](uint32_t w) { return names_.worker_name(w); };
  const scale::Topology t = collector_.topology(op_name);
  std::vector<std::pair<int64_t, std::string>> out;
  double useful = 0, processed = 0, pushed = 0;
  for (const scale::IntervalMetrics& m : closed) {
    out.emplace_back(m.start_ns, scale::interval_json(m, next_epoch_++, op_name, worker_name));
    for (const scale::InstanceMetrics& x : m.instances) {
      useful += x.useful_s;
      processed += x.records_in;
      pushed += x.records_out;
    }
  }
  const scale::IntervalRates r = scale::interval_rates(closed.back(), t);
  const std::vector<scale::OperatorRates> agg = scale::aggregate(t, r.instances);
  std::vector<OperatorGauge> latest;
  for (size_t i = 0; i < t.size(); ++i)
    latest.push_back({t.names[i], agg[i].instances, agg[i].measured ? agg[i].true_processing : NAN,
                      agg[i].observed_processing, agg[i].observed_output});
  std::lock_guard lock(mu_);
  if (intervals_ == 0) first_published_ = first_ts_;
  for (auto& x : out) ring_.push_back(std::move(x));
  while (ring_.size() > retain_) ring_.pop_front();
  topology_ = scale::topology_json(t);
  intervals_ += closed.size();
  useful_s_ += useful;
  processed_ += processed;
  pushed_ += pushed;
  latest_ = std::move(latest);
}

std::string LiveRates::page(int64_t since_ns) const {
  std::vector<std::string> intervals;
  std::lock_guard lock(mu_);
  for (const auto& [start, json] : ring_)
    if (start >= since_ns) intervals.push_back(json);
  return scale::rates_page_json(interval_ns_, first_published_, topology_, intervals);
}

std::string LiveRates::metrics() const {
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, double value) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                   type, name, value);
  };
  std::lock_guard lock(mu_);
  metric("snailtrail_rate_intervals_total", "counter", "DS2 policy intervals closed.",
         static_cast<double>(intervals_));
  metric("snailtrail_rate_useful_seconds_total", "counter",
         "Useful time (deserialization + processing + serialization) of all instances.", useful_s_);
  metric("snailtrail_rate_records_processed_total", "counter",
         "Records processed by all instances (DS2's R_prc).", processed_);
  metric("snailtrail_rate_records_pushed_total", "counter",
         "Records pushed by all instances (DS2's R_psd).", pushed_);
  const std::pair<const char*, const char*> gauges[] = {
      {"snailtrail_operator_instances", "Instances of the operator in the latest interval."},
      {"snailtrail_operator_true_processing_rate",
       "Records/s per second of useful time, summed over the instances (latest interval)."},
      {"snailtrail_operator_observed_processing_rate",
       "Records/s processed over the interval, all instances (latest interval)."},
      {"snailtrail_operator_observed_output_rate",
       "Records/s pushed over the interval, all instances (latest interval)."}};
  for (size_t g = 0; g < 4; ++g) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n", gauges[g].first,
                   gauges[g].second, gauges[g].first);
    for (const OperatorGauge& o : latest_) {
      const double v = g == 0   ? o.instances
                       : g == 1 ? o.true_processing
                       : g == 2 ? o.observed_processing
                                : o.observed_output;
      if (std::isfinite(v))
        fmt::format_to(std::back_inserter(out), "{}{{operator=\"{}\"}} {}\n", gauges[g].first,
                       label(o.name), v);
    }
  }
  return out;
}

}  // namespace snailtrail::serve
