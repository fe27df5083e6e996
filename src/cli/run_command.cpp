// `snailtrail run JOB`: runs a built-in job on the embedded dataflow runtime (src/flow,
// docs/RUNTIME.md): statistics every 250 ms, optional trace of its own execution,
// --verify against the plain single-threaded loop, --reference (the COST baseline).
#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/output_file.hpp"
#include "cli/profile_samples.hpp"
#include "flow/jobs/jobs.hpp"
#include "flow/mpi_transport.hpp"
#include "flow/runtime.hpp"
#include "loop/autoscaler.hpp"
#include "loop/rebalancer.hpp"
#include "megaphone/jobs.hpp"
#include "nexmark/jobs.hpp"
#include "serve/sender.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

struct RunArgs {
  std::string job;
  uint32_t workers = 1;
  std::string rate = "max";
  std::string duration = "10s";
  uint64_t records = 0;
  uint64_t seed = 1;
  uint64_t keys = 1'000'000;
  double skew = 0;
  std::string epoch = "1ms";
  std::string trace;
  std::string trace_to;
  uint64_t trace_to_queue = 2'000'000;
  std::string stats_json;
  bool verify = false;
  bool reference = false;
  bool quiet = false;
  uint32_t bins = 0;  // Megaphone (docs/MEGAPHONE.md): 0 = not binned
  bool native = false;
  std::string migrate_at;
  std::string strategy;  // default: all-at-once, batched with --autoscale
  // The closed loop (docs/CLOSED-LOOP.md).
  bool autoscale = false;
  uint32_t max_workers = 0, initial_workers = 1;
  std::string policy_interval = "1s";
  std::string rate_profile;
  double cost_us = 0;
  uint32_t warmup = 0, activation = 1;
  double target_ratio = 0;
  std::string reconfigure = "migrate";
  uint32_t batch_bins = 0;
  double target_utilization = 1.0;
  std::string skew_profile;              // --skew-profile
  bool rebalance = false;                // --rebalance
  std::map<std::string, double> params;  // job knobs (NEXMark: docs/NEXMARK.md)
  std::map<std::string, std::pair<std::string, std::string>> durations;  // flag: name, text
  bool profile = false;
  double profile_hz = 99;
};

double parse_rate(const std::string& text) {
  if (text == "max") return 0;
  size_t used = 0;
  double r = 0;
  try {
    r = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(r))
    throw std::invalid_argument("--rate: '" + text + "' is not a number or 'max'");
  if (r < 1 || r > 1e10)
    throw std::invalid_argument("--rate: " + text + " is out of range [1, 1e10] records/s");
  return r;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "0";
  return fmt::format("{:.6g}", v);
}

void write_stats_json(const std::string& path, double throughput,
                      const std::vector<flow::IntervalStats>& intervals,
                      const std::vector<uint64_t>& latency, const std::string& digest,
                      const std::string& migrations = "", const std::string& decisions = "",
                      const std::vector<std::pair<double, double>>& rss_timeline = {},
                      const std::string& cp_analyses = "") {
  OutputFile f(path);
  auto out = std::back_inserter(f.buf());
  fmt::format_to(out, "{{\"throughput\": {}, \"intervals\": [", json_number(throughput));
  for (size_t i = 0; i < intervals.size(); ++i) {
    const auto& s = intervals[i];
    fmt::format_to(out,
                   "{}{{\"t_s\": {}, \"records\": {}, \"p50_ms\": {}, \"p99_ms\": {}, "
                   "\"p999_ms\": {}, \"max_ms\": {}, \"rss_mb\": {}}}",
                   i ? ", " : "", json_number(s.t_s), s.records, json_number(s.p50_ms),
                   json_number(s.p99_ms), json_number(s.p999_ms), json_number(s.max_ms),
                   json_number(s.rss_mb));
  }
  fmt::format_to(out, "], \"ccdf\": [");
  const auto c = flow::ccdf(latency);
  for (size_t i = 0; i < c.size(); ++i)
    fmt::format_to(out, "{}[{}, {}]", i ? ", " : "",
                   json_number(static_cast<double>(c[i].first) * 1e-6), json_number(c[i].second));
  if (!migrations.empty())
    fmt::format_to(out, "], \"migrations\": {}", migrations);
  else
    fmt::format_to(out, "]");
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

// --trace-to: the workers' flushed events go into a queue; a thread sends what arrived
// every 50 ms as one time-ordered chunk of the .snail stream (so src/flow knows nothing
// of the network). With --trace too, every event is also kept for the file. The queue
// is bounded (`max_queued` events): a chunk that does not fit while the receiver is
// slow is dropped and counted, never blocking the workers (docs/RUNTIME.md).
class LiveTrace {
 public:
  LiveTrace(const std::string& address, uint32_t first_worker, uint32_t workers, bool keep,
            uint64_t max_queued)
      : stream_(address, 1.0), keep_(keep), max_queued_(max_queued) {
    for (uint32_t i = first_worker; i < first_worker + workers; ++i)
      names_.worker_names[i] = fmt::format("worker-{}", i);
    thread_ = std::thread([this] { loop(); });
  }
  ~LiveTrace() { stop(); }
  void add(std::vector<Event>&& events, const std::vector<std::string>& ops) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!have_ops_) {
      for (uint32_t i = 0; i < ops.size(); ++i) names_.operator_names[i] = ops[i];
      have_ops_ = true;
    }
    if (keep_) kept_.insert(kept_.end(), events.begin(), events.end());
    if (queued_.size() + events.size() > max_queued_) {
      dropped_ += events.size();
      return;
    }
    queued_.insert(queued_.end(), events.begin(), events.end());
  }
  uint64_t dropped() const { return dropped_; }
  // Sends what is left, closes the stream; rethrows a send error.
  void finish() {
    stop();
    if (error_) std::rethrow_exception(error_);
  }
  const serve::SendStats& stats() const { return stream_.stats(); }
  std::vector<Event>& kept() { return kept_; }
  const Trace& names() const { return names_; }

 private:
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void loop() {
    bool last = false;
    bool named = false;
    while (!last) {
      Trace chunk;
      std::vector<Event> events;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; });
        last = stopping_;
        events.swap(queued_);
        if (!named && have_ops_) {
          chunk.worker_names = names_.worker_names;
          chunk.operator_names = names_.operator_names;
          named = true;
        }
      }
      if (error_) continue;  // the connection broke: keep draining, report at the end
      std::stable_sort(events.begin(), events.end(),
                       [](const Event& x, const Event& y) { return x.ts < y.ts; });
      chunk.events.resize(events.size());
      std::copy(events.begin(), events.end(), chunk.events.begin());
      try {
        if (!chunk.events.empty() || !chunk.worker_names.empty()) stream_.send(chunk);
        if (last) stream_.close();
      } catch (...) {
        error_ = std::current_exception();
      }
    }
  }

  serve::TraceStream stream_;
  bool keep_;
  uint64_t max_queued_, dropped_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> queued_;
  std::vector<Event> kept_;
  Trace names_;
  bool have_ops_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// Under mpirun: rank 0 gathers every rank's events into one trace (a cross-process
// message's send and recv in the same file). Event times are relative to each process's
// clock origin, taken right after the start barrier; when every rank runs on the same
// host (equal host names) they are shifted onto one steady clock exactly, else the
// barrier is the alignment (skew: how unevenly the processes leave it).
std::vector<Event> gather_trace(flow::Transport& tr, std::vector<Event>&& mine, int64_t origin_ns) {
  static_assert(sizeof(Event) % sizeof(uint64_t) == 0 && std::is_trivially_copyable_v<Event>);
  constexpr size_t kWords = sizeof(Event) / sizeof(uint64_t);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::vector<uint64_t> words = {static_cast<uint64_t>(origin_ns), std::hash<std::string>{}(host),
                                 mine.size()};
  words.resize(3 + mine.size() * kWords);
  if (!mine.empty()) std::memcpy(words.data() + 3, mine.data(), mine.size() * sizeof(Event));
  std::vector<Event>().swap(mine);
  const std::vector<uint64_t> all = tr.gather(words);
  std::vector<Event> out;
  if (tr.rank() != 0) return out;
  // Pass 1: the ranks' origins and hosts.
  std::vector<std::pair<int64_t, uint64_t>> heads;
  size_t total = 0;
  for (size_t at = 0; at + 3 <= all.size(); at += 3 + all[at + 2] * kWords) {
    heads.emplace_back(static_cast<int64_t>(all[at]), all[at + 1]);
    total += all[at + 2];
  }
  bool one_host = true;
  int64_t first = heads.empty() ? 0 : heads[0].first;
  for (const auto& [origin, h] : heads) {
    one_host = one_host && h == heads[0].second;
    first = std::min(first, origin);
  }
  out.resize(total);
  size_t n = 0, rank = 0;
  for (size_t at = 0; at + 3 <= all.size(); at += 3 + all[at + 2] * kWords, ++rank) {
    const size_t count = all[at + 2];
    std::memcpy(static_cast<void*>(out.data() + n), all.data() + at + 3, count * sizeof(Event));
    const int64_t shift = one_host ? heads[rank].first - first : 0;
    for (size_t i = n; i < n + count; ++i) out[i].ts += shift;
    n += count;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  return out;
}

void print_ccdf_summary(const std::vector<uint64_t>& latency) {
  static constexpr std::pair<double, const char*> kQ[] = {
      {0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99.9"}, {1.0, "max"}};
  uint64_t n = 0;
  for (uint64_t c : latency) n += c;
  if (n == 0) return;
  const auto c = flow::ccdf(latency);
  fmt::print(stderr, "latency CCDF over {} epochs:\n", n);
  for (const auto& [q, label] : kQ) {
    const uint64_t v = flow::percentile(latency, q);
    double above = 0;  // share of epochs whose latency is at or above v (bucket bound)
    for (const auto& [ns, share] : c)
      if (ns >= v) {
        above = share;
        break;
      }
    fmt::print(stderr, "  {:>6} {:>10.3f} ms   {:>8.4f} % of epochs at or above\n", label,
               static_cast<double>(v) * 1e-6, 100.0 * above);
  }
}

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

// --autoscale: the DS2 manager in process, fed by the run's own trace events, sizes the
// stateful operator; its decisions are applied as Megaphone migrations (src/loop).
std::unique_ptr<loop::Autoscaler> make_autoscaler(const RunArgs& a, const flow::RunConfig& cfg) {
  if (a.job != "keycount" && a.job != "hashcount")
    throw std::invalid_argument("--autoscale: only keycount and hashcount");
  if (a.native || !a.migrate_at.empty())
    throw std::invalid_argument("--autoscale excludes --native and --migrate-at");
  loop::LoopOptions lo;
  const char* np = std::getenv("OMPI_COMM_WORLD_SIZE");  // mpirun -np P: every rank's workers
  lo.max_workers = cfg.workers * static_cast<uint32_t>(np && std::atoi(np) > 1 ? std::atoi(np) : 1);
  lo.initial_workers = a.initial_workers;
  lo.bins = a.bins;
  lo.policy_interval_ns = parse_duration(a.policy_interval);
  lo.rate_profile = cfg.rate_profile;
  if (lo.rate_profile.empty() && cfg.rate > 0) lo.rate_profile = {{0, cfg.rate}};
  if (lo.rate_profile.empty())
    throw std::invalid_argument("--autoscale needs an open-loop --rate or --rate-profile");
  lo.manager.warmup = a.warmup;
  lo.manager.activation = a.activation;
  lo.manager.threshold = a.target_ratio;
  lo.manager.target_utilization = a.target_utilization;
  lo.manager.rollback = false;  // the sources' rate is the profile's, not the job's
  lo.keep_events = !a.trace.empty();
  return std::make_unique<loop::Autoscaler>(lo);
}

// The autoscaler's trace sink, after --trace-to's (which gets a copy) if any.
void attach_autoscaler(loop::Autoscaler& as, flow::RunConfig& cfg) {
  cfg.trace = true;
  auto prev = cfg.on_trace_events;
  cfg.on_trace_events = [l = &as, prev](std::vector<Event>&& ev,
                                        const std::vector<std::string>& ops) {
    if (prev) prev(std::vector<Event>(ev), ops);
    l->on_events(std::move(ev), ops);
  };
}

// Another trace sink after the ones set already (which get a copy of the events).
void attach_sink(flow::RunConfig& cfg,
                 std::function<void(std::vector<Event>&&, const std::vector<std::string>&)> f) {
  cfg.trace = true;
  auto prev = cfg.on_trace_events;
  cfg.on_trace_events = [f = std::move(f), prev](std::vector<Event>&& ev,
                                                 const std::vector<std::string>& ops) {
    if (prev) prev(std::vector<Event>(ev), ops);
    f(std::move(ev), ops);
  };
}

int run(RunArgs& a) {
  if (a.rebalance) {
    if (a.job != "keycount" && a.job != "hashcount")
      throw std::invalid_argument("--rebalance: only keycount and hashcount");
    if (a.native || !a.migrate_at.empty())
      throw std::invalid_argument("--rebalance excludes --native and --migrate-at");
    if (a.reconfigure != "migrate")
      throw std::invalid_argument("--rebalance: only with --reconfigure migrate");
    if (a.bins == 0) a.bins = 256;
  }
  if (a.autoscale) {
    if (a.max_workers > 0) a.workers = a.max_workers;
    if (a.bins == 0) a.bins = 256;
    if (a.initial_workers > a.workers)
      throw std::invalid_argument("--initial-workers: more than --max-workers");
  } else if (a.max_workers > 0) {
    throw std::invalid_argument("--max-workers needs --autoscale");
  }
  if (a.cost_us < 0 || a.cost_us > 1e6) throw std::invalid_argument("--cost-us: out of [0, 1e6]");
  if (a.cost_us > 0 && a.bins == 0)
    throw std::invalid_argument("--cost-us: only with --bins or --autoscale (Megaphone's jobs)");
  // Migrated bins are allocated by the receiving worker's thread and freed later by
  // another: with glibc's per-thread arenas the freed memory stays in the sender's arena
  // and RSS creeps up by the state moved (fluid: +63 MB for 122 MB moved, kept after the
  // migration; docs/MEGAPHONE.md "RSS over time"). One arena lets the receiver reuse it;
  // the workers do not allocate per record, so throughput does not change (measured).
  if (a.bins > 0) ::mallopt(M_ARENA_MAX, 1);
  auto migrations = std::make_shared<megaphone::MigrationLog>();
  std::unique_ptr<loop::Autoscaler> autoscaler;
  std::vector<std::pair<int64_t, double>> profile;
  if (!a.rate_profile.empty()) {
    if (a.rate != "max") throw std::invalid_argument("--rate-profile replaces --rate: give one");
    if (a.job.rfind("nexmark-", 0) == 0)
      throw std::invalid_argument("--rate-profile: not for the nexmark jobs");
    profile = flow::parse_profile(a.rate_profile, "--rate-profile",
                                  [](const std::string& t) { return parse_duration(t); });
  }
  std::vector<std::pair<int64_t, double>> skew_profile;
  if (!a.skew_profile.empty())
    skew_profile = megaphone::parse_skew_profile(
        a.skew_profile, [](const std::string& t) { return parse_duration(t); });
  std::unique_ptr<loop::Rebalancer> rebalancer;
  const bool skewed = !skew_profile.empty();
  const std::string mp_job = megaphone_job(a, migrations, [&](megaphone::JobOptions& o) {
    const uint32_t B = 1u << o.log_bins;
    if (skewed) {
      if (o.base != "keycount" && o.base != "hashcount")
        throw std::invalid_argument("--skew-profile: only keycount and hashcount");
      auto rates = profile;
      if (rates.empty() && parse_rate(a.rate) > 0) rates = {{0, parse_rate(a.rate)}};
      o.skew = megaphone::make_skew(rates, a.workers, skew_profile, std::max(1u, B / 8));
      // Flink's key-group ranges: each worker a contiguous range of bins, so that the hot
      // range [0, B/8) starts on worker 0.
      if (!o.native)
        o.initial = loop::contiguous_config(B, a.autoscale ? a.initial_workers : a.workers);
    }
    if (a.autoscale) {
      flow::RunConfig lc;
      lc.workers = a.workers;
      lc.rate = parse_rate(a.rate);
      lc.rate_profile = profile;
      autoscaler = make_autoscaler(a, lc);
      o.restart = a.reconfigure == "restart";
      o.batch_bins = a.batch_bins;
      if (!skewed) o.initial = autoscaler->initial_config();
    }
    if (a.rebalance) {
      o.batch_bins = a.batch_bins;
      auto counter = std::make_shared<megaphone::BinCounter>(a.workers, B);
      o.bin_counter = counter;
      loop::RebalanceOptions ro;
      ro.workers = a.workers;
      ro.bins = B;
      ro.policy_interval_ns = parse_duration(a.policy_interval);
      ro.bin_counts = [counter] { return counter->totals(); };
      if (autoscaler) ro.active = [l = autoscaler.get()] { return l->active(); };
      rebalancer = std::make_unique<loop::Rebalancer>(ro);
    }
    // DS2 first; a straggler only when DS2 keeps the size.
    if (autoscaler || rebalancer)
      o.planner = [as = autoscaler.get(), rb = rebalancer.get()](
                      int64_t now,
                      const std::vector<uint32_t>& c) -> std::optional<std::vector<uint32_t>> {
        if (as) {
          if (auto to = as->plan(now, c)) {
            if (rb) rb->external_migration();
            return to;
          }
        }
        if (rb) {
          if (auto to = rb->plan(now, c)) {
            if (as) as->external_migration();
            return to;
          }
        }
        return std::nullopt;
      };
  });
  if (skewed && mp_job.empty())
    throw std::invalid_argument(
        "--skew-profile: only keycount/hashcount on Megaphone's operators (--bins, --native, "
        "--autoscale or --rebalance)");
  if (mp_job.empty() && !flow::find_job(a.job)) {
    std::string known;
    for (const auto& n : flow::job_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown job '" + a.job + "' (jobs: " + known + ")");
  }
  flow::RunConfig cfg;
  cfg.job = mp_job.empty() ? a.job : mp_job;
  cfg.workers = a.workers;
  cfg.rate = parse_rate(a.rate);
  cfg.rate_profile = profile;
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
  cfg.records = a.records;
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
  std::unique_ptr<flow::profile::Profiler> profiler;  // --profile (docs/FLAME.md)
  if (a.profile) {
    if (a.trace.empty() || format_from_path(a.trace) != TraceFormat::snail)
      throw std::invalid_argument("--profile needs --trace FILE.snail (the samples go into it)");
    profiler = std::make_unique<flow::profile::Profiler>(a.profile_hz);
    cfg.profiler = profiler.get();
  }
  std::unique_ptr<OutputFile> check;  // fail on an unwritable path before running
  if (!a.stats_json.empty()) check = std::make_unique<OutputFile>(a.stats_json);
  check.reset();

  if (a.reference) {
    flow::KeyCounts out;
    auto [records, seconds] = flow::reference_throughput(cfg, &out);
    const double tput = seconds > 0 ? static_cast<double>(records) / seconds : 0;
    if (!a.quiet)
      fmt::print(stderr, "{} reference loop: {} records in {:.2f} s ({:.3g} records/s)\n", a.job,
                 records, seconds, tput);
    if (!a.stats_json.empty())
      write_stats_json(a.stats_json, tput, {}, {}, flow::output_digest(out));
    return 0;
  }

  // Under mpirun -np P: P processes of cfg.workers threads; rank 0 reports (RUNTIME.md).
  const std::unique_ptr<flow::Transport> mpi = flow::mpi_transport_if_launched();
  cfg.transport = mpi.get();
  const bool rank0 = !mpi || mpi->rank() == 0;
  if (!a.quiet && rank0) {
    cfg.on_stats_line = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    if (a.job == "wordcount" && cfg.skew > 0)
      fmt::print(stderr, "wordcount: the hot word is counted on worker-{}\n",
                 flow::worker_of(flow::jobs::kHotWord, cfg.workers * (mpi ? mpi->procs() : 1)));
  }
  std::unique_ptr<LiveTrace> live;  // connects now: an unreachable target fails before the run
  if (!a.trace_to.empty()) {
    try {
      live = std::make_unique<LiveTrace>(a.trace_to, mpi ? mpi->rank() * cfg.workers : 0,
                                         cfg.workers, !a.trace.empty(), a.trace_to_queue);
    } catch (const std::exception& e) {
      if (!mpi) throw;
      fmt::print(stderr, "snailtrail: rank {}: {}\n", mpi->rank(), e.what());
      flow::mpi_abort(1);  // the other processes must not wait for this one
    }
    cfg.on_trace_events = [l = live.get()](std::vector<Event>&& ev,
                                           const std::vector<std::string>& ops) {
      l->add(std::move(ev), ops);
    };
  }
  if (autoscaler) {  // under mpirun: every rank's aggregates to rank 0's DS2 (CLOSED-LOOP.md)
    if (mpi && a.reconfigure == "restart")
      throw std::invalid_argument(
          "--reconfigure restart: not under mpirun (it stops rank 0's input only)");
    if (mpi) autoscaler->link_ranks(loop::transport_link(*mpi, cfg.workers));
    attach_autoscaler(*autoscaler, cfg);
  }
  if (mpi && rebalancer)
    throw std::invalid_argument(
        "--rebalance: not under mpirun: the CP analysis on rank 0 needs every rank's raw "
        "trace events of each interval (measured: ~4 MB per rank and 500 ms interval at 24 k "
        "records/s), not aggregates as DS2 (docs/CLOSED-LOOP.md); run it in one process");
  if (mpi && skewed)
    throw std::invalid_argument("--skew-profile: not under mpirun (one process only)");
  // --trace with --rebalance alone: the events the sink takes are kept for the file.
  std::mutex kept_mu;
  std::vector<Event> kept;
  if (rebalancer) {
    if (!a.trace.empty() && !live && !autoscaler)
      attach_sink(cfg, [&kept_mu, &kept](std::vector<Event>&& ev, const std::vector<std::string>&) {
        std::lock_guard<std::mutex> lock(kept_mu);
        kept.insert(kept.end(), ev.begin(), ev.end());
      });
    attach_sink(
        cfg, [rb = rebalancer.get()](std::vector<Event>&& ev, const std::vector<std::string>& ops) {
          rb->on_events(std::move(ev), ops);
        });
  }
  flow::RunResult r;
  try {
    r = flow::run_job(cfg);
  } catch (const std::exception& e) {
    const auto ms = migrations->records();
    if (!mpi && a.bins > 0 && !ms.empty() && !ms.back().completed)  // say what was in flight
      throw std::runtime_error(
          fmt::format("{} (during the {} migration started at {:.3f} s; the job stopped with it)",
                      e.what(), ms.back().strategy, ms.back().start_s));
    if (!mpi) throw;
    fmt::print(stderr, "snailtrail: rank {}: {}\n", mpi->rank(), e.what());
    flow::mpi_abort(1);  // the other processes must not wait for this one
  }
  if (live) {
    live->finish();
    r.events = std::move(live->kept());
    std::stable_sort(r.events.begin(), r.events.end(),
                     [](const Event& x, const Event& y) { return x.ts < y.ts; });
    const std::string who = mpi ? fmt::format("rank {}: ", mpi->rank()) : "";
    if (!a.quiet)
      fmt::print(stderr, "{}trace-to: sent {} events ({} bytes) to {}\n", who, live->stats().events,
                 live->stats().bytes, a.trace_to);
    if (live->dropped())
      fmt::print(stderr,
                 "{}trace-to: dropped {} events: the receiver did not keep up (queue bound "
                 "{} events, --trace-to-queue)\n",
                 who, live->dropped(), a.trace_to_queue);
  }
  if ((autoscaler || rebalancer) && !a.trace.empty() && !live) {
    r.events = autoscaler ? autoscaler->take_events() : std::move(kept);
    std::stable_sort(r.events.begin(), r.events.end(),
                     [](const Event& x, const Event& y) { return x.ts < y.ts; });
  }
  if (!a.trace.empty() && mpi)
    r.events = gather_trace(*mpi, std::move(r.events), r.clock_origin_ns);
  // Megaphone: the bins other ranks' workers sent, to rank 0's migration records.
  if (mpi && a.bins > 0) {
    const auto sent = mpi->gather(rank0 ? std::vector<uint64_t>{} : migrations->sent_words());
    if (rank0) migrations->add_sent_words(sent);
  }
  const std::string digest = flow::output_digest(r.output);
  if (!a.quiet && rank0) {
    const auto& h = r.latency;
    fmt::print(stderr,
               "{}: {} records in {:.2f} s ({:.3g} records/s) on {} workers; latency p50 "
               "{:.3f} ms, p99 {:.3f} ms, max {:.3f} ms; output digest {}\n",
               a.job, r.records, r.seconds, r.throughput(), r.generated.size(),
               static_cast<double>(flow::percentile(h, 0.5)) * 1e-6,
               static_cast<double>(flow::percentile(h, 0.99)) * 1e-6,
               static_cast<double>(flow::percentile(h, 1.0)) * 1e-6, digest);
    print_ccdf_summary(h);
  }
  if (r.counters.early_records || r.counters.frontier_regressions)
    throw std::runtime_error(
        fmt::format("progress tracking violated: {} early records, {} frontier regressions",
                    r.counters.early_records, r.counters.frontier_regressions));
  if (!a.trace.empty() && rank0) {
    Trace t;
    t.source = "snailtrail run " + a.job;
    t.events.resize(r.events.size());
    std::copy(r.events.begin(), r.events.end(), t.events.begin());
    for (uint32_t i = 0; i < r.worker_names.size(); ++i) t.worker_names[i] = r.worker_names[i];
    for (uint32_t i = 0; i < r.operator_names.size(); ++i)
      t.operator_names[i] = r.operator_names[i];
    // Under mpirun only rank 0's samples are kept (the others' are not gathered yet).
    if (profiler) attach_profile(profiler->finish(), t, a.quiet);
    write_trace(t, a.trace);
  }
  if (autoscaler && mpi && !a.quiet && rank0) {  // what crossed to rank 0's DS2
    const auto [n, bytes] = autoscaler->reports();
    fmt::print(stderr, "autoscale: rank 0 got {} interval reports ({} bytes) from {} ranks\n", n,
               bytes, mpi->procs() - 1);
  }
  if (!rank0) return 0;
  // Every decision of both planners, in time order.
  std::vector<loop::DecisionRecord> decisions;
  if (autoscaler) decisions = autoscaler->decisions();
  if (rebalancer) {
    const auto rd = rebalancer->decisions();
    decisions.insert(decisions.end(), rd.begin(), rd.end());
  }
  std::stable_sort(decisions.begin(), decisions.end(),
                   [](const auto& x, const auto& y) { return x.time_s < y.time_s; });
  if (!a.stats_json.empty())
    write_stats_json(a.stats_json, r.throughput(), r.intervals, r.latency, digest,
                     a.bins > 0 ? megaphone::migrations_json(migrations->records()) : "",
                     autoscaler || rebalancer ? loop::decisions_json(decisions) : "",
                     r.rss_timeline, rebalancer ? loop::analyses_json(rebalancer->analyses()) : "");
  if (!a.quiet)
    for (const auto& d : decisions) {
      if (d.kind == "rebalance")
        fmt::print(stderr,
                   "rebalance at {:.3f} s: straggler worker-{} (CP {:.1f}%, next {:.1f}%), {} "
                   "bins moved ({})\n",
                   d.time_s, d.straggler, 100 * d.cp_share, 100 * d.next_cp, d.bins.size(),
                   d.reason);
      else
        fmt::print(stderr, "decision at {:.3f} s: {} active workers ({})\n", d.time_s,
                   d.active_workers, d.reason);
    }
  if (a.bins > 0 && !a.quiet)
    for (const auto& m : migrations->records()) {
      fmt::print(stderr,
                 "migration ({}): {} bins, {} bytes in {} steps, {:.3f} s .. {:.3f} s ({:.3f} s), "
                 "max latency {:.3f} ms{}\n",
                 m.strategy, m.bins_moved, m.bytes_moved, m.steps, m.start_s, m.end_s, m.duration_s,
                 m.max_latency_ms, m.completed ? "" : " (not completed)");
      // The trace's times share the run's origin: the migration's critical path is this.
      if (!a.trace.empty() && m.completed)
        fmt::print(
            stderr,
            "  its critical path: snailtrail analyze {} --window whole --from {}us --to {}us\n",
            a.trace, static_cast<int64_t>(std::floor(m.start_s * 1e6)),
            static_cast<int64_t>(std::ceil(m.end_s * 1e6)) + 1);
    }
  if (a.verify) {
    const flow::KeyCounts want = flow::reference_output(cfg, r.generated);
    const std::string diff = flow::first_difference(r.output, want);
    if (!diff.empty()) {
      fmt::print(stderr, "snailtrail: verify: output differs from the plain loop: {}\n", diff);
      return 1;
    }
    if (!a.quiet)
      fmt::print(stderr, "verify: {} keys equal to the plain single-threaded loop\n", want.size());
  }
  return 0;
}

}  // namespace

CommandRunner add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  RunArgs& a = *args;
  nexmark::register_jobs();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a built-in job on the embedded dataflow runtime (docs/RUNTIME.md)");
  cmd->add_option("JOB", a.job,
                  "Job: keycount, wordcount, hashcount (Megaphone's, see --bins), or "
                  "nexmark-q0 ... nexmark-q8 (docs/NEXMARK.md)")
      ->required();
  cmd->add_option("--workers,-w", a.workers, "Worker threads (default 1)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--rate", a.rate,
                  "Offered load in records/s over all workers (open loop), or 'max' (the "
                  "default: closed loop, as fast as the dataflow keeps up; sources stay within "
                  "2 epochs of the output probe)");
  cmd->add_option("--duration,-d", a.duration, "How long the sources run (default 10s)");
  cmd->add_option("--records", a.records,
                  "Stop the sources after this many records in total (default: no limit)");
  cmd->add_option("--seed", a.seed, "Seed of the generated input (default 1)");
  cmd->add_option("--keys", a.keys,
                  "Key domain (keycount) or vocabulary (wordcount) size (default 1000000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62));
  cmd->add_option("--skew", a.skew,
                  "wordcount: share of all words that are the hot word, in [0, 1] (default 0)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--epoch", a.epoch,
                  "Logical time granularity: records generated within one epoch share a "
                  "timestamp (default 1ms)");
  cmd->add_option("--trace", a.trace,
                  "Record the run's own activity and write it as a trace (.snail or .jsonl) "
                  "that analyze, report and scale read (under mpirun: rank 0 writes one trace "
                  "of every rank's workers)");
  cmd->add_option("--trace-to", a.trace_to,
                  "Stream the run's own activity live to `snailtrail serve --tcp HOST:PORT` "
                  "(.snail stream, flushed every 50 ms); exit 1 if it cannot connect within 1 s");
  cmd->add_option("--trace-to-queue", a.trace_to_queue,
                  "--trace-to: events queued for the receiver at most (default 2000000); "
                  "events that do not fit are dropped and counted, never blocking the run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  cmd->add_option("--stats-json", a.stats_json,
                  "Write throughput, 250 ms intervals, the latency CCDF, the output digest and "
                  "the RSS every 10 ms (rss_timeline) as JSON");
  cmd->add_flag("--verify", a.verify,
                "Also run the plain single-threaded loop over the same input; exit 1 with the "
                "first difference if the outputs differ");
  cmd->add_flag("--reference", a.reference,
                "Run only the plain single-threaded loop at full speed (the COST baseline)");
  cmd->add_flag("--quiet,-q", a.quiet, "No statistics lines or summary on stderr");
  cmd->add_option("--bins", a.bins,
                  "keycount/hashcount/nexmark-q3..q8 on Megaphone's migratable operators with "
                  "this many bins (a power of two, e.g. 4096; docs/MEGAPHONE.md, docs/NEXMARK.md)");
  cmd->add_flag("--native", a.native,
                "keycount/hashcount on the plain, non-migratable operator (Megaphone's overhead "
                "baseline; hashcount's default); nexmark-qN: the native keyed state (the default)");
  cmd->add_option("--migrate-at", a.migrate_at,
                  "With --bins: start a migration at each of these times since the start "
                  "(e.g. 10s,20s), alternately from round-robin to worker 0 holding half of the "
                  "bins and back");
  cmd->add_option("--strategy", a.strategy,
                  "Migration strategy: all-at-once (default), fluid (one bin at a time) or "
                  "batched (rounds in which each worker sends and receives at most one bin; "
                  "the default with --autoscale)");
  cmd->add_flag("--autoscale", a.autoscale,
                "keycount/hashcount: the closed loop (docs/CLOSED-LOOP.md): all --max-workers "
                "threads run, only the active ones hold bins; every --policy-interval the DS2 "
                "manager, fed by the run's own trace events, sizes the stateful operator and "
                "its decision is applied as a Megaphone migration (no restart, no input "
                "pause). --bins defaults to 256");
  cmd->add_option("--max-workers", a.max_workers,
                  "--autoscale: worker threads started (the most the job may use; default "
                  "--workers; under mpirun per process, as --workers: DS2 on rank 0 sizes "
                  "all of them)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--initial-workers", a.initial_workers,
                  "--autoscale: workers holding bins at the start (default 1)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option(
      "--policy-interval", a.policy_interval,
      "--autoscale/--rebalance: DS2's and the CP analysis' policy interval (default 1s)");
  cmd->add_option("--warmup", a.warmup,
                  "--autoscale: policy intervals ignored after a change (default 0; intervals "
                  "with a migration in them are always ignored)");
  cmd->add_option("--activation", a.activation,
                  "--autoscale: consecutive DS2 decisions combined (max) before acting "
                  "(default 1)")
      ->check(CLI::Range(1u, 1000u));
  cmd->add_option("--target-ratio", a.target_ratio,
                  "--autoscale: DS2's target-rate ratio: when the sources achieve less than "
                  "this share of the target while the model says the job keeps up, the "
                  "targets are raised by the shortfall (default 0: off)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--target-utilization", a.target_utilization,
                  "--autoscale: size the stateful operator so that its workers are busy this "
                  "share of the time (headroom, in (0, 1]; default 1)")
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--batch-bins", a.batch_bins,
                  "--autoscale with --strategy batched: bins each worker sends (and receives) "
                  "per round (default 0: about 8 rounds per migration)");
  cmd->add_option("--reconfigure", a.reconfigure,
                  "--autoscale: how a decision is applied: migrate (default: a Megaphone "
                  "migration under --strategy, the input keeps flowing) or restart (the "
                  "baseline: stop the input, drain, move every changed bin at once, resume)");
  cmd->add_option("--rate-profile", a.rate_profile,
                  "Piecewise-constant open-loop rate instead of --rate: TIME:RATE,... with "
                  "records/s over all workers (k, M suffixes), e.g. 0s:100k,30s:400k,60s:100k");
  cmd->add_option("--skew-profile", a.skew_profile,
                  "keycount/hashcount on Megaphone's operators: a share of the records over time "
                  "sent to the hot bins [0, bins/8), TIME:SHARE,... with shares in [0, 1] (e.g. "
                  "0s:0,30s:0.5); needs an open-loop --rate/--rate-profile; the bins then start "
                  "in contiguous ranges per worker, the hot range on worker 0 "
                  "(docs/CLOSED-LOOP.md)");
  cmd->add_flag("--rebalance", a.rebalance,
                "keycount/hashcount: every --policy-interval the CP analysis of the run's own "
                "trace looks for a straggler (CP >= 2x the next worker's); its hottest bins (by "
                "records in the interval) move to the least-loaded active workers as a Megaphone "
                "migration (--strategy; default all-at-once, batched with --autoscale) until its "
                "load is near the mean. Alone "
                "or with --autoscale; --bins defaults to 256 (docs/CLOSED-LOOP.md)");
  cmd->add_option("--cost-us", a.cost_us,
                  "With --bins/--autoscale: CPU work per record in the stateful operator, a busy "
                  "wait of this many microseconds (so that one worker provably cannot keep up "
                  "at a given rate)");
  // NEXMark knobs (docs/NEXMARK.md), kept in RunConfig::params.
  auto knob = [cmd, p = &a.params](const char* flag, const char* name, const char* help) {
    cmd->add_option_function<double>(
        flag, [p, name](double v) { (*p)[name] = v; }, help);
  };
  auto window = [cmd, p = &a.durations](const char* flag, const char* name, const char* help) {
    cmd->add_option_function<std::string>(
        flag,
        [p, flag, name](const std::string& v) {
          (*p)[flag] = {name, v};
        },
        help);
  };
  knob("--dilation", "dilation",
       "nexmark: event time runs this many times faster than wall time (default 1)");
  knob("--event-rate", "event_rate",
       "nexmark under --rate max: events/s of the event-time schedule (default 1000000)");
  cmd->add_flag_function(
      "--payloads", [p = &a.params](int64_t) { (*p)["payloads"] = 1; },
      "nexmark: keep the stored persons' and auctions' text fields and padding (NEXMark's "
      "sizes) in the queries' state (Q3, Q4, Q6, Q8); default off (docs/NEXMARK.md)");
  knob("--active-people", "active_people",
       "nexmark: persons that bids and auctions pick from (default 1000)");
  knob("--in-flight-auctions", "in_flight_auctions",
       "nexmark: auctions open on average, that bids pick from (default 100)");
  knob("--hot-auction-ratio", "hot_auction_ratio",
       "nexmark: a bid goes to the hot auction with probability 1 - 1/ratio (default 2)");
  knob("--hot-bidder-ratio", "hot_bidder_ratio",
       "nexmark: a bid comes from the hot bidder with probability 1 - 1/ratio (default 4)");
  knob("--hot-seller-ratio", "hot_seller_ratio",
       "nexmark: an auction is by the hot seller with probability 1 - 1/ratio (default 4)");
  window("--window", "window_ns",
         "nexmark: Q5's sliding and Q7/Q8's tumbling window in event time (default 10s)");
  window("--window-slide", "window_slide_ns",
         "nexmark: Q5's window period in event time, dividing --window (default 5s)");
  cmd->add_flag("--profile", a.profile,
                "Sample the workers' stacks (on-CPU every 1/--profile-hz s of a thread's CPU "
                "time; off-CPU where a worker starts waiting) into the --trace .snail file, "
                "for `snailtrail flamegraph` (docs/FLAME.md)");
  cmd->add_option("--profile-hz", a.profile_hz, "On-CPU samples per second of CPU time, 1..10000")
      ->capture_default_str();
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace snailtrail::cli
