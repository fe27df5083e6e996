#include "serve/server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "importers/importer.hpp"
#include "pag/snapshot.hpp"
#include "report/report.hpp"
#include "serve/http_front.hpp"
#include "serve/ingest.hpp"
#include "serve/live_rates.hpp"

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

class Listener {
 public:
  Listener(const std::string& address) {
    auto [host, port] = parse_address(address);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) throw std::runtime_error("cannot resolve " + address + ": " + ::gai_strerror(rc));
    std::string last_error = "no address";
    for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
        fd_ = fd;
        break;
      }
      last_error = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) throw std::runtime_error("cannot listen on " + address + ": " + last_error);
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    host_ = host;
  }
  ~Listener() {
    if (fd_ >= 0) ::close(fd_);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int fd() const { return fd_; }
  int port() const { return port_; }
  std::string name() const { return fmt::format("{}:{}", host_, port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::string host_;
};

// Late events above this share of the events warn on stderr and in /metrics.
constexpr double kLateWarnShare = 0.01;

// Workers and operators named in /metrics per window; the rest are one "(other)" series.
constexpr size_t kMetricGroups = 16;

// The `keep` largest (name, value) pairs, largest first (ties: by name), then "(other)"
// with the sum of the rest when there is a rest.
std::vector<std::pair<std::string, double>> bounded_groups(
    std::vector<std::pair<std::string, double>> all, size_t keep) {
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (all.size() > keep) {
    double rest = 0;
    for (size_t i = keep; i < all.size(); ++i) rest += all[i].second;
    all.resize(keep);
    all.emplace_back("(other)", rest);
  }
  return all;
}

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// What the HTTP API reads, written by the analysis thread.
struct SharedState {
  std::mutex mu;
  std::deque<std::pair<int64_t, std::string>> windows;  // (start_ns, JSON), oldest first
  std::array<double, kActivityTypeCount> latest_cp{};
  // CP per worker and per operator in the latest window: the kMetricGroups most critical
  // by name, then "(other)" with the rest summed (bounded label sets for Prometheus).
  std::vector<std::pair<std::string, double>> latest_worker_cp, latest_op_cp;
  bool has_latest = false;
  int64_t latest_start = 0;
  uint64_t windows_emitted = 0;
  uint64_t events_analyzed = 0, late = 0, out_of_order = 0, time_jumps = 0, empty_windows = 0;
  double late_share = 0;  // late / (analyzed + late) events so far
  double lag_last = 0, lag_max = 0, ingest_rate = 0;
  size_t retained_nodes = 0, retained_messages = 0;
  std::unique_ptr<report::ReportBuilder> report;  // the dashboard's data
};

std::string metrics_text(SharedState& s, const IngestCounters& c, const BatchQueue& q,
                         const HttpFront::Counters& h, size_t budget) {
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, double value) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                   type, name, value);
  };
  std::lock_guard lock(s.mu);
  metric("snailtrail_events_ingested_total", "counter", "Events decoded from all sources.",
         static_cast<double>(c.events.load()));
  metric("snailtrail_events_analyzed_total", "counter", "Events accepted into windows.",
         static_cast<double>(s.events_analyzed));
  metric("snailtrail_bytes_received_total", "counter", "Bytes read from all sources.",
         static_cast<double>(c.bytes.load()));
  metric("snailtrail_ingest_rate_events_per_second", "gauge",
         "Events decoded per second over the last second.", s.ingest_rate);
  metric("snailtrail_windows_emitted_total", "counter", "Windows analyzed and written.",
         static_cast<double>(s.windows_emitted));
  metric("snailtrail_window_lag_seconds", "gauge",
         "Wall time from the stream passing a window's end to its result, last window.",
         s.lag_last);
  metric("snailtrail_window_lag_seconds_max", "gauge", "The largest window lag so far.", s.lag_max);
  metric("snailtrail_late_events_total", "counter",
         "Events for windows already emitted: counted, not merged.", static_cast<double>(s.late));
  metric("snailtrail_late_event_share", "gauge",
         "Share of events dropped as late so far (late / (analyzed + late)).", s.late_share);
  metric("snailtrail_late_events_warning", "gauge",
         "1 when more than 1% of the events were dropped as late: start producers together "
         "or use --wait-for.",
         s.late_share > kLateWarnShare ? 1 : 0);
  metric("snailtrail_time_jump_events_total", "counter",
         "Events refused for jumping more than --max-jump ahead of the latest event.",
         static_cast<double>(s.time_jumps));
  metric("snailtrail_empty_windows_total", "counter",
         "Windows without events written as empty_windows records (not analyzed).",
         static_cast<double>(s.empty_windows));
  metric("snailtrail_out_of_order_events_total", "counter",
         "Events older than their worker's previous event: dropped.",
         static_cast<double>(s.out_of_order));
  metric("snailtrail_invalid_lines_total", "counter", "Malformed JSONL lines skipped.",
         static_cast<double>(c.bad_lines.load()));
  metric("snailtrail_invalid_blocks_total", "counter", "Invalid .snail blocks skipped.",
         static_cast<double>(c.bad_blocks.load()));
  metric("snailtrail_truncated_streams_total", "counter",
         "Streams that ended inside a line or block.", static_cast<double>(c.truncated.load()));
  metric("snailtrail_broken_streams_total", "counter",
         "Streams closed because their framing was lost.",
         static_cast<double>(c.broken_streams.load()));
  metric("snailtrail_connections_total", "counter", "TCP connections accepted.",
         static_cast<double>(c.connections_total.load()));
  metric("snailtrail_connections_open", "gauge", "TCP connections open now.",
         static_cast<double>(c.connections_open.load()));
  metric("snailtrail_connections_refused_total", "counter",
         "TCP connections closed at once: --max-connections were open.",
         static_cast<double>(c.connections_refused.load()));
  metric("snailtrail_connections_timed_out_total", "counter",
         "TCP connections closed after --connection-timeout of silence.",
         static_cast<double>(c.connections_timed_out.load()));
  metric("snailtrail_ingest_buffered_bytes", "gauge",
         "TCP input received but not decoded yet (incomplete blocks and lines).",
         static_cast<double>(c.buffered_bytes.load()));
  metric("snailtrail_ingest_buffered_bytes_max", "gauge", "The largest buffered input so far.",
         static_cast<double>(c.buffered_peak.load()));
  metric("snailtrail_ingest_buffer_budget_bytes", "gauge",
         "--ingest-buffer: the budget of buffered input beyond 64 KiB per connection.",
         static_cast<double>(budget));
  metric("snailtrail_ingest_paused_connections", "gauge",
         "TCP connections not read now: waiting for the input buffer budget.",
         static_cast<double>(c.paused_connections.load()));
  metric("snailtrail_http_connections_open", "gauge", "HTTP clients connected now.",
         static_cast<double>(h.connections_open.load()));
  metric("snailtrail_http_connections_refused_total", "counter",
         "HTTP clients closed at once: the HTTP connection limit was reached.",
         static_cast<double>(h.refused.load()));
  metric("snailtrail_http_timeouts_total", "counter",
         "HTTP clients closed for sending a request or taking a response too slowly, or idle.",
         static_cast<double>(h.timed_out.load()));
  metric("snailtrail_queued_events", "gauge", "Events decoded, waiting for analysis.",
         static_cast<double>(q.queued_events()));
  metric("snailtrail_retained_nodes", "gauge", "PAG nodes kept for windows not yet closed.",
         static_cast<double>(s.retained_nodes));
  out +=
      "# HELP snailtrail_latest_window_cp Critical participation per activity type in the "
      "latest window.\n# TYPE snailtrail_latest_window_cp gauge\n";
  if (s.has_latest)
    for (int a = 0; a < kActivityTypeCount; ++a)
      fmt::format_to(std::back_inserter(out), "snailtrail_latest_window_cp{{activity=\"{}\"}} {}\n",
                     name_of(static_cast<ActivityType>(a)), s.latest_cp[a]);
  auto groups = [&](const char* name, const char* label, const char* help,
                    const std::vector<std::pair<std::string, double>>& values) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const auto& [key, v] : values)
      fmt::format_to(std::back_inserter(out), "{}{{{}=\"{}\"}} {}\n", name, label, label_value(key),
                     v);
  };
  groups("snailtrail_latest_window_worker_cp", "worker",
         "Critical participation of each worker's timeline in the latest window (the 16 most "
         "critical; the rest summed as \"(other)\").",
         s.latest_worker_cp);
  groups("snailtrail_latest_window_operator_cp", "operator",
         "Critical participation of each operator's activities in the latest window (the 16 "
         "most critical; the rest summed as \"(other)\").",
         s.latest_op_cp);
  return out;
}

// The `since` parameter (ns) of /api/windows and /api/rates: INT64_MIN without it, nullopt
// (and a 400 answer) when it is not an integer.
std::optional<int64_t> since_param(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("since")) return INT64_MIN;
  try {
    size_t used = 0;
    const std::string text = req.get_param_value("since");
    const int64_t v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  res.status = 400;
  res.set_content("{\"error\":\"since must be an integer (ns)\"}\n", "application/json");
  return std::nullopt;
}

}  // namespace

std::pair<std::string, int> parse_address(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    throw std::invalid_argument("address \"" + address + "\" is not HOST:PORT");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";
  const std::string port_text = address.substr(colon + 1);
  int port = 0;
  for (char ch : port_text) {
    if (ch < '0' || ch > '9' || port > 65535)
      throw std::invalid_argument("bad port in \"" + address + "\"");
    port = port * 10 + (ch - '0');
  }
  if (port > 65535) throw std::invalid_argument("bad port in \"" + address + "\"");
  return {host, port};
}

int run_server(const ServeOptions& opt) {
  if (opt.tcp.empty() && !opt.stdin_source && opt.follow.empty())
    throw std::invalid_argument("no source: give --tcp, --stdin or --follow");
  if (opt.retain == 0) throw std::invalid_argument("--retain must be at least 1");
  FollowFormat follow_format;
  follow_format.importer = opt.follow_importer;
  follow_format.options = opt.import_options;
  if (opt.follow_importer != "auto" && opt.follow.empty())
    throw std::invalid_argument("--importer applies to --follow files only");
  // Files that cannot be followed fail here (those that do not exist yet, when they appear).
  for (const std::string& path : opt.follow) check_followable(path, opt.follow_importer);
  if (!opt.follow.empty()) importers::check_import_options(opt.import_options, true);
  const bool log = !opt.quiet;

  // Outputs first, so that a bad path fails before anything listens.
  std::FILE* out = stdout;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out_file(nullptr, &std::fclose);
  if (!opt.out.empty() && opt.out != "-") {
    out_file.reset(std::fopen(opt.out.c_str(), "w"));
    if (!out_file)
      throw std::runtime_error("cannot write " + opt.out + ": " + std::strerror(errno));
    out = out_file.get();
  }

  std::vector<std::unique_ptr<Listener>> listeners;
  for (const std::string& a : opt.tcp) listeners.push_back(std::make_unique<Listener>(a));
  TcpLimits tcp_limits = opt.tcp_limits;
  if (tcp_limits.max_connections == 0 || opt.http_max_connections == 0)
    throw std::invalid_argument("connection limits must be at least 1");
  if (tcp_limits.buffer_bytes < (size_t{17} << 20))
    throw std::invalid_argument(
        "--ingest-buffer must be at least 17 (MiB): room for the largest .snail block (16 MiB)");
  if (tcp_limits.idle_timeout_ns <= 0)
    throw std::invalid_argument("--connection-timeout must be positive");
  {
    // Every connection is a file descriptor: raise the soft limit as far as needed (and
    // allowed), else lower the connection limit to what fits.
    const rlim_t want = tcp_limits.max_connections + opt.http_max_connections + 64;
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
      rl.rlim_cur = std::min(want, rl.rlim_max);
      ::setrlimit(RLIMIT_NOFILE, &rl);
      ::getrlimit(RLIMIT_NOFILE, &rl);
      if (rl.rlim_cur < want) {
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
    }
  }

  SharedState shared;
  {
    report::ReportOptions ro;
    ro.source = "live";
    ro.window_ns = opt.live.window_ns;
    ro.window_label = opt.window_label;
    ro.top_k = opt.live.summary.top_k;
    shared.report = std::make_unique<report::ReportBuilder>(ro);
  }
  IngestCounters counters;
  BatchQueue queue(opt.queue_events);
  if (opt.rate_interval_ns < 0) throw std::invalid_argument("--rate-interval must be positive");
  LiveRates rates(opt.rate_interval_ns > 0 ? opt.rate_interval_ns : opt.live.window_ns, opt.retain);
  std::atomic<bool> stop{false};
  std::atomic<int> readers{0};  // source threads still running

  // The HTTP API.
  std::unique_ptr<HttpFront> http;
  std::unique_ptr<Listener> http_listener;
  int http_port = 0;
  if (!opt.http.empty()) {
    auto [host, port] = parse_address(opt.http);
    http = std::make_unique<HttpFront>();
    // The live dashboard: the report's page, polling /api/report.
    http->Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(report::render_dashboard_html(), "text/html; charset=utf-8");
    });
    http->Get("/api/report", [&](const httplib::Request&, httplib::Response& res) {
      std::string body;
      {
        std::lock_guard lock(shared.mu);
        body = shared.report->json();
      }
      res.set_content(body, "application/json");
    });
    http->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    http->Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          metrics_text(shared, counters, queue, http->counters(), tcp_limits.buffer_bytes) +
              rates.metrics(),
          "text/plain; version=0.0.4");
    });
    http->Get("/api/rates", [&](const httplib::Request& req, httplib::Response& res) {
      if (std::optional<int64_t> since = since_param(req, res))
        res.set_content(rates.page(*since), "application/json");
    });
    http->Get("/api/windows", [&](const httplib::Request& req, httplib::Response& res) {
      const std::optional<int64_t> since_or = since_param(req, res);
      if (!since_or) return;
      const int64_t since = *since_or;
      std::string body = "[";
      {
        std::lock_guard lock(shared.mu);
        bool first = true;
        for (const auto& [start, json] : shared.windows) {
          if (start < since) continue;
          if (!first) body += ',';
          first = false;
          body += json;
        }
      }
      body += "]\n";
      res.set_content(body, "application/json");
    });
    http->Get("/api/summary/latest", [&](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(shared.mu);
      if (shared.windows.empty()) {
        res.status = 404;
        res.set_content("{\"error\":\"no window has closed yet\"}\n", "application/json");
        return;
      }
      res.set_content(shared.windows.back().second + "\n", "application/json");
    });
    http_listener = std::make_unique<Listener>(opt.http);
    http_port = http_listener->port();
    http->start(http_listener->fd(), opt.http_max_connections, opt.http_threads);
    if (log) fmt::print(stderr, "snailtrail serve: HTTP API on http://{}:{}/\n", host, http_port);
  }

  // Signals end the server cleanly; they are checked by every loop below.
  g_signalled = false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;  // a write blocked on a slow reader stays blocked, not an error
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  std::signal(SIGPIPE, SIG_IGN);

  // Sources.
  std::mutex threads_mu;
  std::list<std::thread> threads;
  auto spawn = [&](auto fn) {
    ++readers;
    std::lock_guard lock(threads_mu);
    threads.emplace_back([&readers, fn]() mutable {
      fn();
      --readers;
    });
  };
  std::unique_ptr<TcpIngest> tcp;
  if (!listeners.empty()) {
    std::vector<std::pair<int, std::string>> fds;
    for (auto& l : listeners) {
      if (log) fmt::print(stderr, "snailtrail serve: listening for traces on tcp {}\n", l->name());
      fds.emplace_back(l->fd(), l->name());
    }
    tcp = std::make_unique<TcpIngest>(std::move(fds), queue, counters, tcp_limits, stop, log);
  }
  if (opt.stdin_source)
    spawn([&] { pump_stream(STDIN_FILENO, "stdin", queue, counters, stop, log); });
  for (const std::string& path : opt.follow)
    spawn([&, path] { follow_file(path, follow_format, queue, counters, stop, log); });

  if (!opt.port_file.empty()) {
    // Written whole, then renamed: a reader never sees half of it.
    const std::string tmp = opt.port_file + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
    for (auto& l : listeners) fmt::print(f, "tcp={}\n", l->port());
    if (http) fmt::print(f, "http={}\n", http_port);
    std::fclose(f);
    if (std::rename(tmp.c_str(), opt.port_file.c_str()) != 0)
      throw std::runtime_error("cannot write " + opt.port_file + ": " + std::strerror(errno));
  }

  // The analysis loop (this thread).
  const int64_t width = opt.live.window_ns;
  std::deque<std::pair<int64_t, Clock::time_point>>
      passed;  // window end -> when the stream passed it
  int64_t max_ts = INT64_MIN;
  // A failed write (disk full, the reader of a pipe or FIFO gone: EPIPE, SIGPIPE being
  // ignored) stops the server; it exits non-zero instead of analyzing into nothing.
  const std::string out_name = out_file ? opt.out : "stdout";
  std::string out_error;
  auto on_window = [&](LiveWindow& w) {
    if (out_error.empty()) {
      errno = 0;
      if (std::fwrite(w.json.data(), 1, w.json.size(), out) != w.json.size() ||
          std::fputc('\n', out) == EOF || std::fflush(out) != 0 || std::ferror(out)) {
        out_error = fmt::format("cannot write the windows to {}: {}", out_name,
                                errno ? std::strerror(errno) : "write error");
        if (log) fmt::print(stderr, "snailtrail serve: {}; stopping\n", out_error);
        stop = true;
      }
    }
    if (w.summary.window.empty_run > 0) return;  // a run of windows without events
    double lag = -1;
    const int64_t end = w.summary.window.end;
    while (!passed.empty() && passed.front().first < end) passed.pop_front();
    if (!passed.empty() && passed.front().first == end) lag = seconds_since(passed.front().second);
    std::lock_guard lock(shared.mu);
    shared.windows.emplace_back(w.summary.window.start, std::move(w.json));
    while (shared.windows.size() > opt.retain) shared.windows.pop_front();
    for (int a = 0; a < kActivityTypeCount; ++a) shared.latest_cp[a] = w.summary.cp.activity[a];
    shared.has_latest = true;
    shared.latest_start = w.summary.window.start;
    ++shared.windows_emitted;
    if (lag >= 0) {
      shared.lag_last = lag;
      shared.lag_max = std::max(shared.lag_max, lag);
    }
  };
  LiveAnalyzer live(opt.live, on_window);
  if (http)
    live.on_view([&](const WindowView& view, const Names& names) {
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
      std::lock_guard lock(shared.mu);
      if (analyzed) {
        shared.latest_worker_cp = std::move(workers);
        shared.latest_op_cp = std::move(ops);
      }
      shared.report->add(view, names);
    });
  std::unordered_map<uint32_t, Clock::time_point> last_arrival;
  size_t producers = 0;  // streams that have delivered something (names or events)
  std::optional<Clock::time_point> first_data;  // when the first stream delivered
  const auto grace = std::chrono::nanoseconds(opt.start_grace_ns);
  bool late_warned = false;
  uint64_t jumps_logged = 0;
  Clock::time_point rate_start = Clock::now();
  uint64_t rate_events = 0;
  const auto idle = std::chrono::nanoseconds(opt.idle_timeout_ns);
  for (;;) {
    if (g_signalled.load() && !stop.load()) {
      if (log) fmt::print(stderr, "snailtrail serve: stopping: closing the open windows\n");
      stop = true;
    }
    std::optional<Batch> batch = queue.pop(50);
    const auto now = Clock::now();
    if (batch) {
      producers += batch->first;
      if (!first_data && batch->first) first_data = now;
      live.add_names(batch->names);
      rates.add_names(batch->names);
      for (const auto& [id, name] : batch->names.worker_names) last_arrival.try_emplace(id, now);
      uint32_t last_worker = UINT32_MAX;
      for (const Event& e : batch->events) {
        // The rates see exactly the events the windows accept.
        if (live.add(e)) {
          rates.add(e);
        } else if (log && live.stats().time_jumps > jumps_logged) {
          if (++jumps_logged <= 10)
            fmt::print(stderr,
                       "snailtrail serve: refused an event of worker {} at ts {}: more than "
                       "--max-jump ahead of the latest event (ts {}){}\n",
                       e.worker, e.ts, live.pag().last_ts(),
                       jumps_logged == 10 ? "; not logging more of these" : "");
        }
        if (e.worker != last_worker) {
          last_worker = e.worker;
          last_arrival[e.worker] = now;
        }
        if (e.ts > max_ts) {
          // Remember when the stream first passed each window end, for the lag.
          const int64_t k_old = max_ts == INT64_MIN ? windowing::floor_div(e.ts, width)
                                                    : windowing::floor_div(max_ts, width);
          const int64_t k_new = windowing::floor_div(e.ts, width);
          for (int64_t k = std::max(k_old, k_new - 64) + 1; k <= k_new; ++k)
            passed.emplace_back(k * width, now);
          while (passed.size() > 100'000) passed.pop_front();  // windows held back for long
          max_ts = e.ts;
        }
      }
      rate_events += batch->events.size();
    }
    for (const auto& [id, t] : last_arrival)
      if (now - t > idle && !live.is_idle(id)) live.set_idle(id);
    // Hold the windows until the expected producers are there, and for a grace period
    // after the first one: producers started together connect within it.
    live.hold(producers < opt.wait_for_producers || !first_data ||
              (!stop.load() && now - *first_data < grace));
    live.advance();
    rates.advance(live.closed_until());
    {
      std::lock_guard lock(shared.mu);
      shared.events_analyzed = live.stats().events;
      shared.late = live.stats().late_events;
      shared.out_of_order = live.stats().out_of_order;
      shared.time_jumps = live.stats().time_jumps;
      shared.empty_windows = live.stats().empty_windows;
      const double seen = static_cast<double>(live.stats().events + live.stats().late_events);
      shared.late_share = seen > 0 ? static_cast<double>(live.stats().late_events) / seen : 0;
      if (!late_warned && shared.late_share > kLateWarnShare && live.stats().late_events >= 10) {
        late_warned = true;
        if (log)
          fmt::print(stderr,
                     "snailtrail serve: warning: {} of {} events ({:.1f}%) came for windows "
                     "already emitted and were dropped (late): producers that start after "
                     "others need --wait-for N (docs/SERVE.md)\n",
                     live.stats().late_events, static_cast<uint64_t>(seen),
                     100 * shared.late_share);
      }
      shared.retained_nodes = live.pag().retained_nodes();
      shared.retained_messages = live.pag().retained_messages();
      const double dt = seconds_since(rate_start);
      if (dt >= 1.0) {
        shared.ingest_rate = static_cast<double>(rate_events) / dt;
        rate_events = 0;
        rate_start = Clock::now();
      }
    }
    // Without listeners and HTTP the server ends with its sources (stdin at its end).
    if (listeners.empty() && !http && readers.load() == 0 && !batch && queue.queued_events() == 0)
      break;
    if (stop.load() && readers.load() == 0 && (!tcp || tcp->finished()) && !batch &&
        queue.queued_events() == 0)
      break;
  }
  live.hold(false);
  live.finish();
  if (live.stats().unterminated_at_shutdown > 0 && log)
    fmt::print(stderr,
               "snailtrail serve: {} activities still open at shutdown, reported as "
               "unterminated_activities (docs/SERVE.md)\n",
               live.stats().unterminated_at_shutdown);
  rates.finish();
  {
    std::lock_guard lock(shared.mu);
    shared.events_analyzed = live.stats().events;
    shared.late = live.stats().late_events;
    shared.empty_windows = live.stats().empty_windows;
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  if (tcp) tcp->join();
  if (http) http->shutdown();
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (log) {
    const LiveStats& s = live.stats();
    fmt::print(stderr,
               "snailtrail serve: {} events analyzed in {} windows ({} more without events, "
               "not analyzed); {} late, {} out of order, {} refused jumps, {} bad lines, {} "
               "bad blocks\n",
               s.events, s.windows, s.empty_windows, s.late_events, s.out_of_order, s.time_jumps,
               counters.bad_lines.load(), counters.bad_blocks.load());
  }
  if (out_error.empty() && (std::fflush(out) != 0 || std::ferror(out)))
    out_error = fmt::format("cannot write the windows to {}: {}", out_name, std::strerror(errno));
  if (out_file && std::fclose(out_file.release()) != 0 && out_error.empty())
    out_error = fmt::format("cannot write the windows to {}: {}", out_name, std::strerror(errno));
  if (!out_error.empty()) throw std::runtime_error(out_error);
  return 0;
}

}  // namespace snailtrail::serve
