#include "serve/server.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "importers/importer.hpp"
#include "pag/snapshot.hpp"
#include "serve/http_api.hpp"
#include "serve/listener.hpp"
#include "serve/serve_state.hpp"
#include "serve/tls.hpp"
#include "serve/window_resume.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::serve {
namespace {

std::atomic<bool> g_signalled{false};
extern "C" void on_signal(int sig) {
  // The first signal stops the server cleanly; a second one ends it at once (a shutdown
  // that takes too long must not need SIGKILL).
  if (g_signalled.exchange(true)) {
    static const char msg[] = "snailtrail serve: second signal: exiting without flushing\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(128 + sig);
  }
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The options that fail before anything is opened.
FollowFormat check_sources(const ServeOptions& opt) {
  // An OTLP receiver beside (serve --otlp --http) is a source of its own.
  if (opt.tcp.empty() && !opt.stdin_source && opt.follow.empty() && opt.nats.address.empty() &&
      !opt.slow_traces)
    throw UsageError({"no source: give ", field("tcp"), ", ", field("stdin"), ", ", field("follow"),
                      " or ", field("nats")});
  if (opt.shard_count == 0 || opt.shard_index >= opt.shard_count)
    throw UsageError({field("shard"), " must be I/N with I < N"});
  if (opt.retain == 0) throw UsageError({field("retain"), " must be at least 1"});
  FollowFormat follow_format;
  follow_format.importer = opt.follow_importer;
  follow_format.options = opt.import_options;
  if (opt.follow_importer != "auto" && opt.follow.empty())
    throw UsageError({field("follow_importer"), " applies to ", field("follow"), " files only"});
  // Files that cannot be followed fail here (those that do not exist yet, when they appear).
  for (const std::string& path : opt.follow) check_followable(path, opt.follow_importer);
  if (!opt.follow.empty()) importers::check_import_options(opt.import_options, true);
  return follow_format;
}

void check_limits(const ServeOptions& opt, const TcpLimits& tcp_limits) {
  if (tcp_limits.max_connections == 0 || opt.http_max_connections == 0)
    throw std::invalid_argument("connection limits must be at least 1");
  if (tcp_limits.buffer_bytes < (size_t{17} << 20))
    throw UsageError({field("ingest_buffer"),
                      " must be at least 17 (MiB): room for the largest .snail block (16 MiB)"});
  if (tcp_limits.idle_timeout_ns <= 0)
    throw UsageError({field("connection_timeout"), " must be positive"});
}

// Every connection is a file descriptor: raises the soft limit as far as needed (and
// allowed), else lowers the connection limit to what fits.
void fit_file_limit(const ServeOptions& opt, TcpLimits& tcp_limits, bool log) {
  const rlim_t want = tcp_limits.max_connections + opt.http_max_connections + 64;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) return;
  rl.rlim_cur = std::min(want, rl.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &rl);
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur >= want) return;
  const size_t fit = rl.rlim_cur > opt.http_max_connections + 128
                         ? rl.rlim_cur - opt.http_max_connections - 64
                         : 64;
  if (fit < tcp_limits.max_connections) {
    if (log)
      fmt::print(stderr,
                 "snailtrail serve: the open-file limit ({}) allows {} producer "
                 "connections, not {}\n",
                 rl.rlim_cur, fit, tcp_limits.max_connections);
    tcp_limits.max_connections = fit;
  }
}

std::unique_ptr<report::ReportBuilder> live_report(const ServeOptions& opt) {
  report::ReportOptions ro;
  ro.source = "live";
  ro.window_ns = opt.live.window_ns;
  ro.window_label = opt.window_label;
  ro.top_k = opt.live.summary.top_k;
  return std::make_unique<report::ReportBuilder>(ro);
}

// The server: its outputs, listeners, HTTP API and source threads, and the analysis loop
// that runs on the calling thread. Members are declared in the order they are set up, so
// that they are torn down in reverse.
class Server {
 public:
  explicit Server(const ServeOptions& opt) : opt_(opt), log_(!opt.quiet) {}
  int run();

 private:
  void open_output();
  void open_listeners();
  void start_http();
  void install_signals();
  void start_sources();
  void write_port_file();
  void analysis_loop();
  void take(const Batch& batch, Clock::time_point now);
  void accept(const Event& e, Clock::time_point now);
  void publish_stats();
  bool finished(bool had_batch) const;
  void on_window(LiveWindow& w);
  void on_view(const WindowView& view, const Names& names);
  void shut_down();
  void synced_windows();
  void check_output();

  const ServeOptions& opt_;
  const bool log_;
  FollowFormat follow_format_;
  std::FILE* out_ = stdout;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out_file_{nullptr, &std::fclose};
  std::vector<std::unique_ptr<Listener>> listeners_;
  TcpLimits tcp_limits_;
  SharedState shared_;
  IngestCounters counters_;
  std::unique_ptr<BatchQueue> queue_;
  std::unique_ptr<LiveRates> rates_;
  std::atomic<bool> stop_{false};
  std::atomic<int> readers_{0};  // source threads still running
  // --tls-cert/--tls-key: TLS on the TCP ingest and the HTTP API, the certificate reloaded
  // on SIGHUP.
  std::shared_ptr<TlsCertificates> certs_;
  TlsContext tls_;
  std::unique_ptr<HttpFront> http_;
  std::unique_ptr<Listener> http_listener_;
  struct sigaction old_int_ {
  }, old_term_{};
  std::optional<ReloadSignal> hangup_;
  std::mutex threads_mu_;
  std::list<std::thread> threads_;
  std::unique_ptr<TcpIngest> tcp_;
  NatsProgress nats_progress_;
  std::unique_ptr<NatsSource> nats_;
  int64_t resumed_until_ = -1;  // windows up to this index are in --out already (--nats)

  // The analysis loop's state.
  std::deque<std::pair<int64_t, Clock::time_point>> passed_;  // window end -> when passed
  int64_t max_ts_ = INT64_MIN;
  // A failed write (disk full, the reader of a pipe or FIFO gone: EPIPE, SIGPIPE being
  // ignored) stops the server; it exits non-zero instead of analyzing into nothing.
  std::string out_name_;
  std::string out_error_;
  std::unique_ptr<LiveAnalyzer> live_;
  std::unordered_map<uint32_t, Clock::time_point> last_arrival_;
  uint32_t last_worker_ = UINT32_MAX;            // of the previous event in the current batch
  size_t producers_ = 0;                         // streams that have delivered something
  std::optional<Clock::time_point> first_data_;  // when the first stream delivered
  bool late_warned_ = false;
  uint64_t jumps_logged_ = 0;
  Clock::time_point rate_start_;
  uint64_t rate_events_ = 0;
};

int Server::run() {
  follow_format_ = check_sources(opt_);
  // Outputs first, so that a bad path fails before anything listens.
  open_output();
  open_listeners();
  shared_.report = live_report(opt_);
  queue_ = std::make_unique<BatchQueue>(opt_.queue_events);
  if (opt_.rate_interval_ns < 0) throw UsageError({field("rate_interval"), " must be positive"});
  rates_ = std::make_unique<LiveRates>(
      opt_.rate_interval_ns > 0 ? opt_.rate_interval_ns : opt_.live.window_ns, opt_.retain);
  start_http();
  install_signals();
  start_sources();
  write_port_file();
  analysis_loop();
  shut_down();
  check_output();
  return 0;
}

void Server::open_output() {
  if (!opt_.out.empty() && opt_.out != "-") {
    const bool resume = !opt_.nats.address.empty();
    if (resume) resumed_until_ = resume_window_output(opt_.out);  // appended, not rewritten
    out_file_.reset(std::fopen(opt_.out.c_str(), resume ? "a" : "w"));
    if (!out_file_)
      throw std::runtime_error("cannot write " + opt_.out + ": " + std::strerror(errno));
    out_ = out_file_.get();
  }
  out_name_ = out_file_ ? opt_.out : "stdout";
}

void Server::open_listeners() {
  // Before anything binds: nothing exposed beyond this host without TLS and a token.
  std::vector<ListenerSpec> specs;
  for (const std::string& a : opt_.tcp) specs.push_back({"--tcp", a, !opt_.tls_cert.empty()});
  if (!opt_.http.empty()) specs.push_back({"--http", opt_.http, !opt_.tls_cert.empty()});
  check_exposure(specs, opt_.auth.enabled(), opt_.insecure);
  if (opt_.tls_cert.empty() != opt_.tls_key.empty())
    throw std::invalid_argument("--tls-cert and --tls-key go together");
  if (!opt_.tls_cert.empty()) {
    if (opt_.http.empty() && opt_.tcp.empty())
      throw std::invalid_argument("--tls-cert applies to --tcp, --http and --otlp");
    // Bad files fail before binding.
    certs_ =
        opt_.certs ? opt_.certs : std::make_shared<TlsCertificates>(opt_.tls_cert, opt_.tls_key);
    tls_ = certs_->server_context();
  }
  for (const std::string& a : opt_.tcp) listeners_.push_back(std::make_unique<Listener>(a));
  tcp_limits_ = opt_.tcp_limits;
  check_limits(opt_, tcp_limits_);
  fit_file_limit(opt_, tcp_limits_, log_);
}

void Server::start_http() {
  if (opt_.http.empty()) return;
  auto [host, port] = parse_address(opt_.http);
  http_ = std::make_unique<HttpFront>();
  add_api_routes(*http_, ApiSources{shared_, counters_, *queue_, *rates_, tcp_limits_.buffer_bytes,
                                    opt_.auth, opt_.slow_traces.get(), opt_.otlp_paths.get()});
  http_listener_ = std::make_unique<Listener>(opt_.http);
  http_->start(http_listener_->fd(), opt_.http_max_connections, opt_.http_threads, tls_.get());
  if (log_)
    fmt::print(stderr, "snailtrail serve: HTTP API on {}://{}:{}/{}\n", tls_ ? "https" : "http",
               host, http_listener_->port(), opt_.auth.enabled() ? " (bearer token required)" : "");
}

// Signals end the server cleanly; they are checked by every loop.
void Server::install_signals() {
  g_signalled = false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;  // a write blocked on a slow reader stays blocked, not an error
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int_);
  ::sigaction(SIGTERM, &sa, &old_term_);
  std::signal(SIGPIPE, SIG_IGN);
  hangup_.emplace();  // SIGHUP: re-read the token files and the certificate (polled below)
}

void Server::start_sources() {
  auto spawn = [&](auto fn) {
    ++readers_;
    std::lock_guard lock(threads_mu_);
    threads_.emplace_back([&readers = readers_, fn]() mutable {
      fn();
      --readers;
    });
  };
  if (!listeners_.empty()) {
    std::vector<std::pair<int, std::string>> fds;
    for (auto& l : listeners_) {
      if (log_)
        fmt::print(stderr, "snailtrail serve: listening for traces on tcp {}{}\n", l->name(),
                   tls_ ? " (TLS)" : "");
      fds.emplace_back(l->fd(), l->name());
    }
    tcp_ = std::make_unique<TcpIngest>(std::move(fds), *queue_, counters_, tcp_limits_, stop_, log_,
                                       opt_.auth, tls_.get());
  }
  if (opt_.stdin_source)
    spawn([this] { pump_stream(STDIN_FILENO, "stdin", *queue_, counters_, stop_, log_); });
  for (const std::string& path : opt_.follow)
    spawn([this, path] { follow_file(path, follow_format_, *queue_, counters_, stop_, log_); });
  if (!opt_.nats.address.empty()) {
    nats_ = std::make_unique<NatsSource>(opt_.nats, nats_progress_, counters_, log_);
    spawn([this] {
      nats_->run(*queue_, stop_);
      if (nats_progress_.drained.load()) stop_ = true;  // --drain: the stream was read
    });
  }
}

void Server::write_port_file() {
  if (opt_.port_file.empty()) return;
  // Written whole, then renamed: a reader never sees half of it.
  const std::string tmp = opt_.port_file + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  for (auto& l : listeners_) fmt::print(f, "tcp={}\n", l->port());
  if (http_) fmt::print(f, "http={}\n", http_listener_->port());
  for (const auto& [name, port] : opt_.extra_ports) fmt::print(f, "{}={}\n", name, port);
  std::fclose(f);
  if (std::rename(tmp.c_str(), opt_.port_file.c_str()) != 0)
    throw std::runtime_error("cannot write " + opt_.port_file + ": " + std::strerror(errno));
}

// This shard's windows not written before a restart (LiveAnalyzer skips the others).
void Server::on_window(LiveWindow& w) {
  if (out_error_.empty()) {
    errno = 0;
    if (std::fwrite(w.json.data(), 1, w.json.size(), out_) != w.json.size() ||
        std::fputc('\n', out_) == EOF || std::fflush(out_) != 0 || std::ferror(out_)) {
      out_error_ = fmt::format("cannot write the windows to {}: {}", out_name_,
                               errno ? std::strerror(errno) : "write error");
      if (log_) fmt::print(stderr, "snailtrail serve: {}; stopping\n", out_error_);
      stop_ = true;
    }
  }
  if (w.summary.window.empty_run > 0) {              // a run of windows without events
    if (http_) shared_.jobgraph.add_run(w.summary);  // stalls in the Job graph
    return;
  }
  double lag = -1;
  const int64_t end = w.summary.window.end;
  while (!passed_.empty() && passed_.front().first < end) passed_.pop_front();
  if (!passed_.empty() && passed_.front().first == end) lag = seconds_since(passed_.front().second);
  std::lock_guard lock(shared_.mu);
  shared_.windows.emplace_back(w.summary.window.start, std::move(w.json));
  while (shared_.windows.size() > opt_.retain) shared_.windows.pop_front();
  for (int a = 0; a < kActivityTypeCount; ++a) shared_.latest_cp[a] = w.summary.cp.activity[a];
  shared_.has_latest = true;
  shared_.latest_start = w.summary.window.start;
  ++shared_.windows_emitted;
  if (lag >= 0) {
    shared_.lag_last = lag;
    shared_.lag_max = std::max(shared_.lag_max, lag);
  }
}

void Server::on_view(const WindowView& view, const Names& names) {
  std::vector<std::pair<std::string, double>> workers, ops;
  const bool analyzed = view.summary.window.empty_run == 0;
  if (analyzed) {
    const Groups& cp = view.summary.cp;
    for (size_t k = 0; k < cp.worker.size(); ++k)
      workers.emplace_back(k < names.worker.size() ? names.worker[k] : std::to_string(k),
                           cp.worker[k]);
    for (const auto& [id, v] : cp.op)
      if (id != kNone) ops.emplace_back(names.op(id), v);
    workers = bounded_groups(std::move(workers), kMetricGroups);
    ops = bounded_groups(std::move(ops), kMetricGroups);
  }
  shared_.jobgraph.add_window(view, names);
  std::lock_guard lock(shared_.mu);
  if (analyzed) {
    shared_.latest_worker_cp = std::move(workers);
    shared_.latest_op_cp = std::move(ops);
  }
  shared_.report->add(view, names);
}

void Server::analysis_loop() {
  // Other shards' windows, and those written before a restart, are not analyzed.
  LiveOptions live = opt_.live;
  live.shard_index = opt_.shard_index;
  live.shard_count = opt_.shard_count;
  live.written_through = resumed_until_;
  live_ = std::make_unique<LiveAnalyzer>(live, [this](LiveWindow& w) { on_window(w); });
  if (http_) live_->on_view([this](const WindowView& v, const Names& n) { on_view(v, n); });
  const auto grace = std::chrono::nanoseconds(opt_.start_grace_ns);
  const auto idle = std::chrono::nanoseconds(opt_.idle_timeout_ns);
  rate_start_ = Clock::now();
  for (;;) {
    hangup_->poll(opt_.auth, certs_.get(), log_);
    if (g_signalled.load() && !stop_.load()) {
      if (log_) fmt::print(stderr, "snailtrail serve: stopping: closing the open windows\n");
      stop_ = true;
    }
    std::optional<Batch> batch = queue_->pop(50);
    const auto now = Clock::now();
    if (batch) take(*batch, now);
    for (const auto& [id, t] : last_arrival_)
      if (now - t > idle && !live_->is_idle(id)) live_->set_idle(id);
    // Hold the windows until the expected producers are there, and for a grace period
    // after the first one: producers started together connect within it.
    live_->hold(producers_ < opt_.wait_for_producers || !first_data_ ||
                (!stop_.load() && now - *first_data_ < grace));
    if (live_->advance() > 0 && nats_) synced_windows();
    // The rates are read through HTTP only (/api/rates, /metrics): without it they cost
    // nothing.
    if (http_) rates_->advance(live_->closed_until());
    publish_stats();
    if (finished(batch.has_value())) break;
  }
}

void Server::take(const Batch& batch, Clock::time_point now) {
  producers_ += batch.first;
  if (!first_data_ && batch.first) first_data_ = now;
  live_->add_names(batch.names);
  if (http_) rates_->add_names(batch.names);
  for (const auto& [id, name] : batch.names.worker_names) last_arrival_.try_emplace(id, now);
  last_worker_ = UINT32_MAX;
  for (const Event& e : batch.events) accept(e, now);
  rate_events_ += batch.events.size();
}

void Server::accept(const Event& e, Clock::time_point now) {
  // The rates see exactly the events the windows accept.
  if (live_->add(e)) {
    if (http_) rates_->add(e);
  } else if (log_ && live_->stats().time_jumps > jumps_logged_) {
    if (++jumps_logged_ <= 10)
      fmt::print(stderr,
                 "snailtrail serve: refused an event of worker {} at ts {}: more than "
                 "--max-jump ahead of the latest event (ts {}){}\n",
                 e.worker, e.ts, live_->pag().last_ts(),
                 jumps_logged_ == 10 ? "; not logging more of these" : "");
  }
  if (e.worker != last_worker_) {
    last_worker_ = e.worker;
    last_arrival_[e.worker] = now;
  }
  if (e.ts > max_ts_) {
    // Remember when the stream first passed each window end, for the lag.
    const int64_t width = opt_.live.window_ns;
    const int64_t k_old = max_ts_ == INT64_MIN ? windowing::floor_div(e.ts, width)
                                               : windowing::floor_div(max_ts_, width);
    const int64_t k_new = windowing::floor_div(e.ts, width);
    for (int64_t k = std::max(k_old, k_new - 64) + 1; k <= k_new; ++k)
      passed_.emplace_back(k * width, now);
    while (passed_.size() > 100'000) passed_.pop_front();  // windows held back for long
    max_ts_ = e.ts;
  }
}

void Server::publish_stats() {
  const LiveStats& st = live_->stats();
  std::lock_guard lock(shared_.mu);
  shared_.events_analyzed = st.events;
  shared_.late = st.late_events;
  shared_.out_of_order = st.out_of_order;
  shared_.time_jumps = st.time_jumps;
  shared_.empty_windows = st.empty_windows;
  const double seen = static_cast<double>(st.events + st.late_events);
  shared_.late_share = seen > 0 ? static_cast<double>(st.late_events) / seen : 0;
  if (!late_warned_ && shared_.late_share > kLateWarnShare && st.late_events >= 10) {
    late_warned_ = true;
    if (log_)
      fmt::print(stderr,
                 "snailtrail serve: warning: {} of {} events ({:.1f}%) came for windows "
                 "already emitted and were dropped (late): producers that start after "
                 "others need --wait-for N (docs/SERVE.md)\n",
                 st.late_events, static_cast<uint64_t>(seen), 100 * shared_.late_share);
  }
  shared_.retained_nodes = live_->pag().retained_nodes();
  shared_.retained_messages = live_->pag().retained_messages();
  const double dt = seconds_since(rate_start_);
  if (dt >= 1.0) {
    shared_.ingest_rate = static_cast<double>(rate_events_) / dt;
    rate_events_ = 0;
    rate_start_ = Clock::now();
  }
}

bool Server::finished(bool had_batch) const {
  const bool drained = !had_batch && queue_->queued_events() == 0;
  // Without listeners and HTTP the server ends with its sources (stdin at its end).
  if (listeners_.empty() && !http_ && readers_.load() == 0 && drained) return true;
  return stop_.load() && readers_.load() == 0 && (!tcp_ || tcp_->finished()) && drained;
}

// --nats: windows are synced to disk before the messages with their events are acked.
void Server::synced_windows() {
  if (out_file_ && (std::fflush(out_) != 0 || ::fsync(::fileno(out_)) != 0)) return;
  nats_progress_.written_until = live_->closed_until();
}

void Server::shut_down() {
  live_->hold(false);
  // A JetStream stream goes on after we stop: open windows are left to the next run.
  if (!nats_ || nats_progress_.drained.load()) live_->finish();
  if (live_->stats().unterminated_at_shutdown > 0 && log_)
    fmt::print(stderr,
               "snailtrail serve: {} activities still open at shutdown, reported as "
               "unterminated_activities (docs/SERVE.md)\n",
               live_->stats().unterminated_at_shutdown);
  if (http_) rates_->finish();
  {
    std::lock_guard lock(shared_.mu);
    shared_.events_analyzed = live_->stats().events;
    shared_.late = live_->stats().late_events;
    shared_.empty_windows = live_->stats().empty_windows;
  }
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  if (tcp_) tcp_->join();
  if (nats_ && nats_progress_.drained.load()) {
    synced_windows();
    nats_progress_.written_until = INT64_MAX;
    nats_->acknowledge();
  }
  if (http_) http_->shutdown();
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  if (log_) {
    const LiveStats& s = live_->stats();
    fmt::print(stderr,
               "snailtrail serve: {} events analyzed in {} windows ({} more without events, "
               "not analyzed); {} late, {} out of order, {} refused jumps, {} bad lines, {} "
               "bad blocks\n",
               s.events, s.windows, s.empty_windows, s.late_events, s.out_of_order, s.time_jumps,
               counters_.bad_lines.load(), counters_.bad_blocks.load());
    if (nats_)
      fmt::print(stderr,
                 "snailtrail serve: {} JetStream messages read, {} delivered again (skipped), "
                 "{} fetched by sequence; {} windows of other shards or written before not "
                 "analyzed\n",
                 counters_.nats_messages.load(), counters_.nats_redelivered.load(),
                 counters_.nats_gap_fetched.load(), s.skipped_windows);
  }
}

// A failed write of the windows (or of their last flush and close) fails the run.
void Server::check_output() {
  if (out_error_.empty() && (std::fflush(out_) != 0 || std::ferror(out_)))
    out_error_ = fmt::format("cannot write the windows to {}: {}", out_name_, std::strerror(errno));
  if (out_file_ && std::fclose(out_file_.release()) != 0 && out_error_.empty())
    out_error_ = fmt::format("cannot write the windows to {}: {}", out_name_, std::strerror(errno));
  if (!out_error_.empty()) throw std::runtime_error(out_error_);
}

}  // namespace

int run_server(const ServeOptions& opt) {
  return Server(opt).run();
}

}  // namespace snailtrail::serve
