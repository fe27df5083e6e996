// `snailtrail run`'s job wiring: Megaphone's variant of the job (--bins, --native,
// hashcount), the load profiles, and the runtime's configuration from the arguments. The
// closed loop's planners are in run_loop.cpp.
#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>

#include "cli/duration.hpp"
#include "cli/run_args.hpp"
#include "flow/profile/sampler.hpp"
#include "nexmark/jobs.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli::runcmd {
namespace {

// --bins / --native / hashcount: registers Megaphone's variant of the job and returns its
// name ("" for the runtime's own jobs).
std::string megaphone_job(const RunArgs& a, const std::shared_ptr<megaphone::MigrationLog>& log,
                          const std::function<void(megaphone::JobOptions&)>& extra = {}) {
  const bool mp = a.bins > 0 || a.native || a.job == "hashcount";
  const bool nexmark_job = a.job.rfind("nexmark-q", 0) == 0 && flow::find_job(a.job);
  if (mp && nexmark_job) {  // --native: the plain job itself (docs/NEXMARK.md)
    if (a.bins > 0 && a.native)
      throw std::invalid_argument("--bins and --native exclude each other");
    if (a.bins == 0) {
      if (!a.migrate_at.empty()) throw std::invalid_argument("--migrate-at needs --bins");
      return "";
    }
  }
  if (!mp) {
    if (!a.migrate_at.empty()) throw std::invalid_argument("--migrate-at needs --bins");
    return "";
  }
  if (a.job != "keycount" && a.job != "hashcount" && !nexmark_job)
    throw std::invalid_argument("--bins/--native: only keycount, hashcount and nexmark-q3 ... q8");
  if (a.bins > 0 && a.native) throw std::invalid_argument("--bins and --native exclude each other");
  megaphone::JobOptions o;
  o.base = a.job;
  o.native = a.bins == 0;
  if (a.bins > 0) {
    if ((a.bins & (a.bins - 1)) != 0 || a.bins > (1u << 20))
      throw std::invalid_argument("--bins: " + std::to_string(a.bins) +
                                  " is not a power of two in [1, 2^20]");
    o.log_bins = static_cast<uint32_t>(std::countr_zero(a.bins));
  }
  o.strategy = megaphone::parse_strategy(
      a.strategy.empty() ? (a.autoscale ? "batched" : "all-at-once") : a.strategy);
  o.cost_us = a.cost_us;
  if (!a.migrate_at.empty()) {
    if (o.native) throw std::invalid_argument("--migrate-at needs --bins");
    size_t at = 0;
    while (at <= a.migrate_at.size()) {
      const size_t comma = std::min(a.migrate_at.find(',', at), a.migrate_at.size());
      int64_t ns = 0;
      try {
        ns = parse_duration(a.migrate_at.substr(at, comma - at));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--migrate-at: ") + e.what());
      }
      if (!o.migrate_at_ns.empty() && ns <= o.migrate_at_ns.back())
        throw std::invalid_argument("--migrate-at: times must increase");
      o.migrate_at_ns.push_back(ns);
      at = comma + 1;
    }
  }
  if (extra) extra(o);
  if (nexmark_job) return nexmark::register_megaphone_job(std::stoi(a.job.substr(9)), o, log);
  return megaphone::register_job(o, log);
}

// --skew-profile: the skewed key distribution over time; the bins start in contiguous
// ranges per worker.
void configure_skew(const RunArgs& a, const JobWiring& w,
                    const std::vector<std::pair<int64_t, double>>& skew_profile,
                    megaphone::JobOptions& o) {
  const uint32_t B = 1u << o.log_bins;
  if (o.base != "keycount" && o.base != "hashcount")
    throw std::invalid_argument("--skew-profile: only keycount and hashcount");
  auto rates = w.rate_profile;
  if (rates.empty() && parse_rate(a.rate) > 0) rates = {{0, parse_rate(a.rate)}};
  o.skew = megaphone::make_skew(rates, a.workers, skew_profile, std::max(1u, B / 8));
  // Flink's key-group ranges: each worker a contiguous range of bins, so that the hot
  // range [0, B/8) starts on worker 0.
  if (!o.native)
    o.initial = loop::contiguous_config(B, a.autoscale ? a.initial_workers : a.workers);
}

}  // namespace

double parse_rate(const std::string& text) {
  if (text == "max") return 0;
  const std::optional<double> number = flow::parse_scaled(text);  // as --rate-profile's
  if (!number) throw std::invalid_argument("--rate: '" + text + "' is not a number or 'max'");
  const double r = *number;
  if (r < 1 || r > 1e10)
    throw std::invalid_argument("--rate: " + text + " is out of range [1, 1e10] records/s");
  return r;
}

JobWiring wire_job(const RunArgs& a) {
  JobWiring w;
  if (!a.rate_profile.empty()) {
    if (a.rate != "max") throw std::invalid_argument("--rate-profile replaces --rate: give one");
    if (a.job.rfind("nexmark-", 0) == 0)
      throw std::invalid_argument("--rate-profile: not for the nexmark jobs");
    w.rate_profile = flow::parse_profile(a.rate_profile, "rate_profile",
                                         [](const std::string& t) { return parse_duration(t); });
  }
  std::vector<std::pair<int64_t, double>> skew_profile;
  if (!a.skew_profile.empty())
    skew_profile = megaphone::parse_skew_profile(
        a.skew_profile, [](const std::string& t) { return parse_duration(t); });
  w.skewed = !skew_profile.empty();
  w.megaphone_job = megaphone_job(a, w.migrations, [&](megaphone::JobOptions& o) {
    if (w.skewed) configure_skew(a, w, skew_profile, o);
    configure_planners(a, w, w.skewed, o);
  });
  if (w.skewed && w.megaphone_job.empty())
    throw std::invalid_argument(
        "--skew-profile: only keycount/hashcount on Megaphone's operators (--bins, --native, "
        "--autoscale or --rebalance)");
  if (w.megaphone_job.empty() && !flow::find_job(a.job)) {
    std::string known;
    for (const auto& n : flow::job_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown job '" + a.job + "' (jobs: " + known + ")");
  }
  return w;
}

flow::RunConfig make_run_config(const RunArgs& a, const JobWiring& w) {
  flow::RunConfig cfg;
  cfg.job = w.megaphone_job.empty() ? a.job : w.megaphone_job;
  cfg.workers = a.workers;
  cfg.rate = parse_rate(a.rate);
  cfg.rate_profile = w.rate_profile;
  if (a.reconfigure != "migrate" && a.reconfigure != "restart")
    throw std::invalid_argument("--reconfigure: '" + a.reconfigure + "' is not migrate or restart");
  if (a.reconfigure == "restart") {
    if (!a.autoscale) throw std::invalid_argument("--reconfigure restart needs --autoscale");
    cfg.pause_sources = std::make_shared<std::atomic<bool>>(false);
  }
  try {
    cfg.duration_ns = parse_duration(a.duration);
    cfg.epoch_ns = parse_duration(a.epoch);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--duration/--epoch: ") + e.what());
  }
  if (cfg.duration_ns <= 0) throw std::invalid_argument("--duration must be positive");
  if (cfg.epoch_ns <= 0) throw std::invalid_argument("--epoch must be positive");
  cfg.latency_record_every = a.latency == "record" ? a.latency_sample : 0;
  cfg.records = a.records;
  cfg.park_max_ns = static_cast<int64_t>(a.park_max_us) * 1000;
  cfg.seed = a.seed;
  cfg.keys = a.keys;
  cfg.skew = a.skew;
  cfg.params = a.params;
  for (const auto& [flag, value] : a.durations) {
    try {
      cfg.params[value.first] = static_cast<double>(parse_duration(value.second));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(flag + ": " + e.what());
    }
  }
  if (a.job.rfind("nexmark-", 0) == 0) nexmark::query_config(cfg);  // bad knobs: exit 2 now
  cfg.trace = !a.trace.empty() || !a.trace_to.empty();
  if (a.reference && (a.verify || cfg.trace))
    throw std::invalid_argument(
        "--reference runs only the plain loop: no --verify, --trace or --trace-to");
  if (!a.trace.empty()) {
    try {
      format_from_path(a.trace);
    } catch (const TraceError& e) {
      throw std::invalid_argument(std::string("--trace: ") + e.what());
    }
  }
  return cfg;
}

std::unique_ptr<flow::profile::Profiler> make_profiler(const RunArgs& a, flow::RunConfig& cfg) {
  std::unique_ptr<flow::profile::Profiler> profiler;
  if (a.profile) {
    if (a.trace.empty() || format_from_path(a.trace) != TraceFormat::snail)
      throw std::invalid_argument("--profile needs --trace FILE.snail (the samples go into it)");
    profiler = std::make_unique<flow::profile::Profiler>(a.profile_hz);
    cfg.profiler = profiler.get();
  }
  return profiler;
}

}  // namespace snailtrail::cli::runcmd
