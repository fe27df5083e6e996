// Megaphone's migration log (jobs.hpp): what each migration moved, when, and the latency
// the records saw meanwhile, written by the controller and the output probe, read by
// `run`'s report and --stats-json; and the strategies' names.
#include "megaphone/jobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "trace/setting_error.hpp"

namespace snailtrail::megaphone {

Strategy parse_strategy(const std::string& name) {
  if (name == "all-at-once") return Strategy::all_at_once;
  if (name == "fluid") return Strategy::fluid;
  if (name == "batched") return Strategy::batched;
  throw UsageError({field("strategy"), ": '" + name + "' is not all-at-once, fluid or batched"});
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::all_at_once:
      return "all-at-once";
    case Strategy::fluid:
      return "fluid";
    case Strategy::batched:
      return "batched";
  }
  return "?";
}

void MigrationLog::start(int64_t now_ns, Strategy s, uint64_t bins, uint64_t steps,
                         const char* label) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  e.rec.strategy = label ? label : strategy_name(s);
  e.rec.bins_moved = bins;
  e.rec.steps = steps;
  e.start_ns = now_ns;
  bytes_.store(0, std::memory_order_relaxed);
  entries_.push_back(e);
}

void MigrationLog::requested(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.requested = n;
}

void MigrationLog::not_run(uint64_t n, int64_t now_ns, int64_t first_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.not_run = n;
  requests_.input_end_s = static_cast<double>(now_ns) * 1e-9;
  requests_.first_not_run_s = static_cast<double>(first_ns) * 1e-9;
}

MigrationRequests MigrationLog::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void MigrationLog::end(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.empty()) return;
  Entry& e = entries_.back();
  e.end_ns = now_ns;
  e.rec.completed = true;
  e.rec.bytes_moved = bytes_.exchange(0, std::memory_order_relaxed);
}

void MigrationLog::latency(int64_t now_ns, flow::Time t, int64_t latency_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = entries_.size(); i-- > 0 && i + 2 >= entries_.size();) {
    Entry& e = entries_[i];
    if (now_ns < e.start_ns) continue;
    if (e.end_ns >= 0 && static_cast<int64_t>(t) > e.end_ns) continue;
    e.max_ns = std::max(e.max_ns, latency_ns);
  }
}

void MigrationLog::step(flow::Time t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!entries_.empty()) entries_.back().steps.push_back(t);
}

void MigrationLog::merged(int64_t backlog_ns, uint64_t at_step, uint64_t steps) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.empty()) return;
  MigrationRecord& r = entries_.back().rec;
  r.merged_backlog_ms = static_cast<double>(backlog_ns) * 1e-6;
  r.merged_at_step = at_step;
  r.steps = steps;
}

void MigrationLog::add_bytes_at(flow::Time t, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  sent_.emplace_back(t, bytes);
}

std::vector<uint64_t> MigrationLog::sent_words() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> w;
  w.reserve(sent_.size() * 2);
  for (const auto& [t, n] : sent_) {
    w.push_back(t);
    w.push_back(n);
  }
  return w;
}

void MigrationLog::add_sent_words(const std::vector<uint64_t>& words) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i + 1 < words.size(); i += 2) sent_.emplace_back(words[i], words[i + 1]);
}

std::vector<MigrationRecord> MigrationLog::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<MigrationRecord> out;
  for (const Entry& e : entries_) {
    MigrationRecord r = e.rec;
    // Bytes sent at one of its steps' times (they increase: a step is given only once the
    // output frontier has passed the previous one, so the controller's time has too).
    for (const auto& [t, n] : sent_)
      if (std::binary_search(e.steps.begin(), e.steps.end(), t)) r.bytes_moved += n;
    r.start_s = static_cast<double>(e.start_ns) * 1e-9;
    r.end_s = e.end_ns >= 0 ? static_cast<double>(e.end_ns) * 1e-9 : 0;
    r.duration_s = e.end_ns >= 0 ? r.end_s - r.start_s : 0;
    r.max_latency_ms = static_cast<double>(e.max_ns) * 1e-6;
    if (!e.steps.empty()) r.first_step_s = static_cast<double>(e.steps.front()) * 1e-9;
    if (!r.completed) r.bytes_moved += bytes_.load(std::memory_order_relaxed);
    out.push_back(r);
  }
  return out;
}

std::string migrations_json(const std::vector<MigrationRecord>& ms) {
  auto num = [](double v) {
    return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string("0");
  };
  std::string out = "[";
  for (size_t i = 0; i < ms.size(); ++i) {
    const auto& m = ms[i];
    out += fmt::format(
        "{}{{\"strategy\": \"{}\", \"start_s\": {}, \"end_s\": {}, \"duration_s\": {}, "
        "\"max_latency_ms\": {}, \"bins_moved\": {}, \"bytes_moved\": {}, \"steps\": {}, "
        "\"first_step_s\": {}, \"completed\": {}{}}}",
        i ? ", " : "", m.strategy, num(m.start_s), num(m.end_s), num(m.duration_s),
        num(m.max_latency_ms), m.bins_moved, m.bytes_moved, m.steps, num(m.first_step_s),
        m.completed ? "true" : "false",
        m.merged_at_step == 0 ? std::string()
                              : fmt::format(", \"merged_at_step\": {}, \"merged_backlog_ms\": {}",
                                            m.merged_at_step, num(m.merged_backlog_ms)));
  }
  return out + "]";
}

namespace {
std::string not_run_why(const MigrationRequests& r) {
  if (r.not_run == 0) return "";
  return fmt::format(
      "the input ended at {:.3f} s, before they started (the first was due at {:.3f} s)",
      r.input_end_s, r.first_not_run_s);
}
}  // namespace

std::string migration_requests_json(const MigrationRequests& r) {
  return fmt::format(R"({{"requested": {}, "ran": {}, "not_run": {}, "why": "{}"}})", r.requested,
                     r.ran(), r.not_run, not_run_why(r));
}

std::string migration_requests_text(const MigrationRequests& r) {
  std::string line =
      fmt::format("migrations: {} of {} requested (--migrate-at) ran", r.ran(), r.requested);
  if (r.not_run > 0) line += fmt::format("; {} did not run: {}", r.not_run, not_run_why(r));
  return line;
}

}  // namespace snailtrail::megaphone
