// `snailtrail run JOB --http [HOST:]PORT` (docs/CLOSED-LOOP.md "The live dashboard"): while
// the job runs, an HTTP server (serve's HttpFront) answers `/api/timeline` with the run so
// far and `/` with a self-contained page (web/timeline.html) that polls it and draws the
// latency timeline with the decisions and migrations marked, and `/api/jobgraph` with the
// Job graph of the run's own trace so far (cli/run_job_graph.hpp), drawn below it.
//
// One source of truth with --stats-json: the intervals are the runtime's own (the
// statistics thread hands each one over as it publishes it, RunConfig::on_interval), the
// decisions and migrations are serialised by the same functions as --stats-json's, and
// once the run has ended the dashboard shows exactly the strings written there. Nothing
// runs on the workers' path: the statistics thread appends under a lock every interval,
// the HTTP thread copies under it.
//
// Who may look is serve --http's rule (docs/SERVE.md, "Running across hosts"): with
// --token-file every page but /healthz needs a bearer token, with --tls-cert it is HTTPS,
// and a non-loopback address needs both unless --insecure; SIGHUP re-reads the token
// files and the certificate.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/listen_security.hpp"
#include "flow/runtime.hpp"
#include "serve/tls.hpp"

namespace snailtrail::serve {
class HttpFront;
class Listener;
}  // namespace snailtrail::serve

namespace snailtrail::cli {

class RunDashboard {
 public:
  // What the page shows of the run's configuration, and where the live data comes from
  // (each called from the HTTP thread; each may be empty).
  struct Sources {
    std::string job;
    uint32_t workers = 1;
    uint32_t bins = 0;
    bool autoscale = false, rebalance = false;
    std::string rate;                              // --rate or --rate-profile as given
    std::function<uint32_t()> active;              // active workers now (default: workers)
    std::function<std::string()> decisions_json;   // "[...]" so far
    std::function<std::string()> migrations_json;  // "[...]" so far
  };

  // Listens on `address` ("[HOST:]PORT"; HOST defaults to 127.0.0.1, port 0 picks a free
  // one) and starts answering, with the tokens and TLS of `security`. Throws
  // std::invalid_argument (a bad file, an exposed address without TLS and a token: exit
  // 2) / std::runtime_error.
  RunDashboard(const std::string& address, Sources sources, ListenSecurity security = {});
  ~RunDashboard();
  RunDashboard(const RunDashboard&) = delete;
  RunDashboard& operator=(const RunDashboard&) = delete;

  // "http://HOST:PORT/" (https:// with TLS)
  std::string url() const;
  // The statistics thread: one interval published.
  void on_interval(const flow::IntervalStats& st);
  // The run has ended: its final decisions and migrations (the --stats-json strings; ""
  // for none) and intervals (RunResult::intervals, which on_interval saw one by one).
  void finish(const std::vector<flow::IntervalStats>& intervals, std::string decisions,
              std::string migrations);
  // Keeps serving the final timeline for `seconds`, then stops.
  void linger(double seconds);
  // The body of /api/timeline.
  std::string timeline_json() const;
  // The Job graph so far with the given marks (RunJobGraph::json); without one
  // /api/jobgraph answers "null".
  void set_jobgraph(std::function<std::string(std::string)> f);
  // The body of /api/jobgraph: the Job graph with the decisions and migrations so far.
  std::string jobgraph_json() const;

 private:
  struct Point {
    flow::IntervalStats st;
    uint32_t active = 0;
  };
  Sources src_;
  std::string page_;  // GET /
  mutable std::mutex mu_;
  std::vector<Point> points_;
  bool done_ = false;
  std::string decisions_, migrations_;  // once done
  std::function<std::string(std::string)> jobgraph_;
  serve::AuthTokens auth_;
  std::unique_ptr<serve::TlsCertificates> certs_;  // outlive the context and the front
  serve::TlsContext tls_;
  std::unique_ptr<serve::Listener> listener_;
  std::unique_ptr<serve::HttpFront> http_;
  // SIGHUP re-reads the token files and the certificate, as serve does: polled by
  // reloader_ every 100 ms while the dashboard lives (only with token files or TLS).
  std::unique_ptr<serve::ReloadSignal> hangup_;
  std::atomic<bool> stop_reloading_{false};
  std::thread reloader_;
  void stop_reloader();
};

}  // namespace snailtrail::cli
