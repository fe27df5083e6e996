#include "serve/otlp_live.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "requests/folded.hpp"
#include "serve/serve_state.hpp"
#include "serve/trace_path_json.hpp"

namespace snailtrail::serve {

namespace {

double number_param(const std::string& name, const std::string& text, double lo, double hi) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end == 0 || end != text.size() || !std::isfinite(v) || v < lo || v > hi)
    throw std::invalid_argument(
        fmt::format("{}: not a number in [{}, {}]: '{}'", name, lo, hi, text));
  return v;
}

// "p99" and "99" alike, as `critical-path --percentile` takes them.
double percentile_param(const std::string& name, std::string text) {
  if (!text.empty() && (text[0] == 'p' || text[0] == 'P')) text.erase(0, 1);
  return number_param(name, text, 0, 100);
}

// Nearest-rank percentile of sorted durations.
int64_t nearest_rank(const std::vector<int64_t>& sorted, double p) {
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()) - 1e-9);
  const size_t r = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(r, sorted.size() - 1)];
}

}  // namespace

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

CriticalPathQuery parse_critical_path_query(
    const std::vector<std::pair<std::string, std::string>>& params) {
  CriticalPathQuery q;
  for (const auto& [name, value] : params) {
    if (name == "minutes") {
      q.minutes = number_param(name, value, 0, 1e6);
    } else if (name == "percentile") {
      q.percentile = percentile_param(name, value);
    } else if (name == "bucket") {
      q.bucket = number_param(name, value, 0, 100);
    } else if (name == "format") {
      if (value != "json" && value != "folded")
        throw std::invalid_argument("format: json or folded, not '" + value + "'");
      q.folded = value == "folded";
    } else if (name == "diff") {
      const size_t comma = value.find(',');
      if (comma == std::string::npos)
        throw std::invalid_argument("diff: two percentiles A,B, not '" + value + "'");
      q.diff = true;
      q.diff_a = percentile_param(name, value.substr(0, comma));
      q.diff_b = percentile_param(name, value.substr(comma + 1));
    } else {
      throw std::invalid_argument("unknown parameter '" + name +
                                  "' (minutes, percentile, bucket, format, diff)");
    }
  }
  return q;
}

void OtlpLivePaths::add(std::vector<requests::UnitPaths> units, const requests::PathCollection& all,
                        int64_t now_ns) {
  const std::vector<requests::ServiceTime> services = all.by_service();
  std::lock_guard lock(mu_);
  for (const requests::ServiceTime& s : services) {
    Total& t = totals_[all.name(s.service)];
    t.critical_ns += s.critical_ns;
    t.spans_on_path += s.spans_on_path;
  }
  for (requests::UnitPaths& unit : units) {
    recent_traces_ += unit.traces.size();
    recent_.push_back({now_ns, std::move(unit)});
  }
  expire(now_ns);
}

void OtlpLivePaths::expire(int64_t now_ns) {
  while (!recent_.empty() && (recent_.front().at_ns < now_ns - limits_.window_ns ||
                              recent_traces_ > limits_.max_traces)) {
    const size_t n = recent_.front().unit.traces.size();
    if (recent_.front().at_ns >= now_ns - limits_.window_ns) dropped_ += n;
    recent_traces_ -= n;
    recent_.pop_front();
  }
}

std::string OtlpLivePaths::metrics() const {
  std::vector<std::pair<std::string, Total>> rows;
  {
    std::lock_guard lock(mu_);
    rows.assign(totals_.begin(), totals_.end());
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  auto counter = [&](const char* name, const char* help, auto value) {
    fmt::format_to(it, "# HELP {0} {1}\n# TYPE {0} counter\n", name, help);
    for (const auto& [service, t] : rows)
      fmt::format_to(it, "{}{{service=\"{}\"}} {}\n", name, label_value(service), value(t));
  };
  counter("snailtrail_otlp_critical_seconds_total",
          "Time on the completed traces' critical paths, per service",
          [](const Total& t) { return static_cast<double>(t.critical_ns) / 1e9; });
  counter("snailtrail_otlp_critical_path_spans_total",
          "Spans on the completed traces' critical paths, per service",
          [](const Total& t) { return t.spans_on_path; });
  return fmt::to_string(out);
}

std::string OtlpLivePaths::answer(const CriticalPathQuery& q, int64_t now_ns) const {
  requests::PathCollection all;
  uint64_t dropped = 0;
  {
    std::lock_guard lock(mu_);
    const int64_t since = q.minutes > 0 ? now_ns - static_cast<int64_t>(q.minutes * 60e9)
                                        : now_ns - limits_.window_ns;
    for (const Completed& c : recent_)
      if (c.at_ns >= since) all.add(c.unit);
    dropped = dropped_;
  }
  if (q.diff) return requests::folded_diff(all, q.diff_a, q.diff_b, q.bucket);
  if (q.folded) return requests::folded_stacks(all, q.percentile, q.bucket);
  const std::vector<size_t> chosen = requests::traces_around(all, q.percentile, q.bucket);
  std::vector<int64_t> durations;
  durations.reserve(all.traces().size());
  for (const auto& t : all.traces()) durations.push_back(t.duration_ns);
  std::sort(durations.begin(), durations.end());
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"window_s\": {}, \"traces\": {}, \"dropped_traces\": {}, ",
                 q.minutes > 0 ? q.minutes * 60 : static_cast<double>(limits_.window_ns) / 1e9,
                 all.traces().size(), dropped);
  if (durations.empty()) {
    fmt::format_to(it, "\"duration_ns\": null, ");
  } else {
    fmt::format_to(it, "\"duration_ns\": {{\"p50\": {}, \"p90\": {}, \"p99\": {}, \"max\": {}}}, ",
                   nearest_rank(durations, 50), nearest_rank(durations, 90),
                   nearest_rank(durations, 99), durations.back());
  }
  if (q.percentile > 0)
    fmt::format_to(it, "\"percentile\": {}, \"bucket\": {}, \"traces_around\": {}, ", q.percentile,
                   q.bucket, chosen.size());
  fmt::format_to(it, "\"services\": ");
  append_services_json(out, all, all.by_service(chosen));
  fmt::format_to(it, "}}\n");
  return fmt::to_string(out);
}

}  // namespace snailtrail::serve
