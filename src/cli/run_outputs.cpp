// `snailtrail run`'s outputs: --stats-json, the summary and the decisions and migrations
// on stderr, the --trace file, and the --http dashboard's sources.
#include <fmt/format.h>

#include <cmath>

#include "cli/output_file.hpp"
#include "cli/profile_samples.hpp"
#include "cli/run_args.hpp"
#include "cli/run_dashboard.hpp"
#include "trace/plural.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli::runcmd {
namespace {

std::string json_number(double v) {
  if (!std::isfinite(v)) return "0";
  return fmt::format("{:.6g}", v);
}

}  // namespace

void write_stats_json(const std::string& path, double throughput,
                      const std::vector<flow::IntervalStats>& intervals,
                      const std::vector<uint64_t>& latency, const std::string& digest,
                      const std::string& migrations, const std::string& decisions,
                      const std::vector<std::pair<double, double>>& rss_timeline,
                      const std::string& cp_analyses, const std::string& migration_requests,
                      uint64_t latency_record_every) {
  OutputFile f(path);
  auto out = std::back_inserter(f.buf());
  fmt::format_to(out, "{{\"throughput\": {}, \"intervals\": [", json_number(throughput));
  for (size_t i = 0; i < intervals.size(); ++i) {
    const auto& s = intervals[i];
    fmt::format_to(out,
                   "{}{{\"t_s\": {}, \"records\": {}, \"samples\": {}, \"p50_ms\": {}, "
                   "\"p99_ms\": {}, \"p999_ms\": {}, \"max_ms\": {}, \"rss_mb\": {}}}",
                   i ? ", " : "", json_number(s.t_s), s.records, s.samples, json_number(s.p50_ms),
                   json_number(s.p99_ms), json_number(s.p999_ms), json_number(s.max_ms),
                   json_number(s.rss_mb));
  }
  // What one latency sample is: an epoch, or a sampled record (--latency record).
  fmt::format_to(out, "], \"latency_per\": \"{}\"", latency_record_every ? "record" : "epoch");
  if (latency_record_every)
    fmt::format_to(out, ", \"latency_sample_every\": {}", latency_record_every);
  fmt::format_to(out, ", \"ccdf\": [");
  const auto c = flow::ccdf(latency);
  for (size_t i = 0; i < c.size(); ++i)
    fmt::format_to(out, "{}[{}, {}]", i ? ", " : "",
                   json_number(static_cast<double>(c[i].first) * 1e-6), json_number(c[i].second));
  if (!migrations.empty())
    fmt::format_to(out, "], \"migrations\": {}", migrations);
  else
    fmt::format_to(out, "]");
  if (!migration_requests.empty())
    fmt::format_to(out, ", \"migrations_requested\": {}", migration_requests);
  if (!decisions.empty()) fmt::format_to(out, ", \"decisions\": {}", decisions);
  fmt::format_to(out, ", \"rss_timeline\": [");  // (s, MiB) every 10 ms, this process
  for (size_t i = 0; i < rss_timeline.size(); ++i)
    fmt::format_to(out, "{}[{:.3f}, {:.1f}]", i ? ", " : "", rss_timeline[i].first,
                   rss_timeline[i].second);
  fmt::format_to(out, "]");
  if (!cp_analyses.empty()) fmt::format_to(out, ", \"cp_analyses\": {}", cp_analyses);
  fmt::format_to(out, ", \"output_digest\": \"{}\"}}\n", digest);
  f.flush();
}

void print_ccdf_summary(const std::vector<uint64_t>& latency, uint64_t exact_max,
                        const std::string& unit, const std::string& how) {
  static constexpr std::pair<double, const char*> kQ[] = {
      {0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99.9"}, {1.0, "max"}};
  uint64_t n = 0;
  for (uint64_t c : latency) n += c;
  if (n == 0) return;
  const auto c = flow::ccdf(latency);
  fmt::print(stderr, "latency CCDF over {} {}{}:\n", n, unit, how);
  for (const auto& [q, label] : kQ) {
    const uint64_t v = flow::percentile(latency, q, exact_max);
    double above = 0;  // share of samples whose latency is at or above v (bucket bound)
    for (const auto& [ns, share] : c)
      if (ns >= v) {
        above = share;
        break;
      }
    fmt::print(stderr, "  {:>6} {:>10.3f} ms   {:>8.4f} % of {} at or above\n", label,
               static_cast<double>(v) * 1e-6, 100.0 * above, unit);
  }
}

void print_run_summary(const RunArgs& a, const flow::RunResult& r, const std::string& digest) {
  const auto& h = r.latency;
  fmt::print(stderr,
             "{}: {} records in {:.2f} s ({:.3g} records/s) on {}; latency p50 "
             "{:.3f} ms, p99 {:.3f} ms, max {:.3f} ms; output digest {}\n",
             a.job, r.records, r.seconds, r.throughput(),
             counted(r.generated.size(), "worker", "workers"),
             static_cast<double>(flow::percentile(h, 0.5, r.latency_max_ns)) * 1e-6,
             static_cast<double>(flow::percentile(h, 0.99, r.latency_max_ns)) * 1e-6,
             static_cast<double>(r.latency_max_ns) * 1e-6, digest);
  if (a.latency == "record")
    print_ccdf_summary(h, r.latency_max_ns, "sampled records",
                       fmt::format(" (1 in {}, from their intended times)", a.latency_sample));
  else
    print_ccdf_summary(h, r.latency_max_ns);
}

void write_run_trace(const RunArgs& a, const flow::RunResult& r,
                     flow::profile::Profiler* profiler) {
  Trace t;
  t.source = "snailtrail run " + a.job;
  t.events.resize(r.events.size());
  std::copy(r.events.begin(), r.events.end(), t.events.begin());
  for (uint32_t i = 0; i < r.worker_names.size(); ++i) t.worker_names[i] = r.worker_names[i];
  for (uint32_t i = 0; i < r.operator_names.size(); ++i) t.operator_names[i] = r.operator_names[i];
  // Under mpirun only rank 0's samples are kept (the others' are not gathered yet).
  if (profiler) attach_profile(profiler->finish(), t, a.quiet);
  write_trace(t, a.trace);
}

void print_decisions(const std::vector<loop::DecisionRecord>& decisions) {
  for (const auto& d : decisions) {
    if (d.kind == "rebalance")
      fmt::print(stderr,
                 "rebalance at {:.3f} s: straggler worker-{} (CP {:.1f}%, next {:.1f}%), {} "
                 "bins moved ({})\n",
                 d.time_s, d.straggler, 100 * d.cp_share, 100 * d.next_cp, d.bins.size(), d.reason);
    else
      fmt::print(stderr, "decision at {:.3f} s: {} active workers ({})\n", d.time_s,
                 d.active_workers, d.reason);
  }
}

void print_migrations(const std::vector<megaphone::MigrationRecord>& ms, const std::string& trace) {
  for (const auto& m : ms) {
    std::string backlog;  // what --under-backlog did
    if (m.first_step_s > 0 && m.first_step_s + 0.01 < m.start_s)
      backlog += fmt::format("; first step at logical time {:.3f} s, ahead of the backlog",
                             m.first_step_s);
    if (m.merged_at_step > 0)
      backlog += fmt::format("; step {} took the rest (a step would wait {:.1f} ms)",
                             m.merged_at_step, m.merged_backlog_ms);
    fmt::print(stderr,
               "migration ({}): {} bins, {} bytes in {} steps, {:.3f} s .. {:.3f} s ({:.3f} s), "
               "max latency {:.3f} ms{}{}\n",
               m.strategy, m.bins_moved, m.bytes_moved, m.steps, m.start_s, m.end_s, m.duration_s,
               m.max_latency_ms, m.completed ? "" : " (not completed)", backlog);
    // The trace's times share the run's origin: the migration's critical path is this.
    if (!trace.empty() && m.completed)
      fmt::print(
          stderr,
          "  its critical path: snailtrail analyze {} --window whole --from {}us --to {}us\n",
          trace, static_cast<int64_t>(std::floor(m.start_s * 1e6)),
          static_cast<int64_t>(std::ceil(m.end_s * 1e6)) + 1);
  }
}

// --http: the live dashboard, fed by the statistics thread and the planners' own records.
std::unique_ptr<RunDashboard> make_dashboard(const RunArgs& a, flow::RunConfig& cfg,
                                             const JobWiring& w) {
  const loop::Autoscaler* autoscaler = w.autoscaler.get();
  const loop::Rebalancer* rebalancer = w.rebalancer.get();
  const auto migrations = w.migrations;
  RunDashboard::Sources src;
  src.job = a.job;
  src.workers = cfg.workers;
  src.bins = a.bins;
  src.autoscale = autoscaler != nullptr;
  src.rebalance = rebalancer != nullptr;
  src.rate = a.rate_profile.empty() ? a.rate : a.rate_profile;
  if (autoscaler) src.active = [autoscaler] { return autoscaler->active(); };
  if (autoscaler || rebalancer)
    src.decisions_json = [autoscaler, rebalancer] {
      return loop::decisions_json(all_decisions(autoscaler, rebalancer));
    };
  if (a.bins > 0)
    src.migrations_json = [migrations] {
      return megaphone::migrations_json(migrations->records());
    };
  auto dash =
      std::make_unique<RunDashboard>(a.http, std::move(src), load_security(a.http_security));
  cfg.on_interval = [d = dash.get()](const flow::IntervalStats& st) { d->on_interval(st); };
  fmt::print(stderr, "snailtrail run: live dashboard on {}{}\n", dash->url(),
             a.http_security.token_file.empty() ? "" : " (bearer token required)");
  return dash;
}

}  // namespace snailtrail::cli::runcmd
