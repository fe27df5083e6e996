#include "cli/run_dashboard.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "report/job_graph.hpp"
#include "report/web_assets.hpp"
#include "serve/http_front.hpp"
#include "serve/listener.hpp"
#include "trace/json_text.hpp"

namespace snailtrail::cli {
namespace {

std::string num(double v) {
  return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string("0");
}

std::string quoted(const std::string& s) {
  std::string o;
  append_json_string(o, s, kJsonPlain);
  return o;
}

}  // namespace

RunDashboard::RunDashboard(const std::string& address, Sources sources, ListenSecurity security)
    : src_(std::move(sources)), auth_(std::move(security.auth)) {
  // "PORT" alone: on 127.0.0.1.
  const std::string where =
      address.find(':') == std::string::npos ? "127.0.0.1:" + address : address;
  const bool tls = !security.tls_cert.empty();
  serve::check_exposure({{"--http", where, tls}}, auth_.enabled(), security.insecure);
  if (tls) {  // bad files fail before binding
    certs_ = std::make_unique<serve::TlsCertificates>(security.tls_cert, security.tls_key);
    tls_ = certs_->server_context();
  }
  // The timeline page with the report's Job graph script (one implementation).
  page_ = std::string(report::assets::kTimelineHtml);
  const std::string slot = "<!--SNAILTRAIL_JOBGRAPH_JS-->";
  const size_t at = page_.find(slot);
  if (at != std::string::npos)
    page_.replace(at, slot.size(),
                  "<script>\n" + std::string(report::assets::kJobGraphJs) + "\n</script>");
  listener_ = std::make_unique<serve::Listener>(where);
  http_ = std::make_unique<serve::HttpFront>();
  http_->Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    if (!serve::authorize_http(auth_, req, res, false)) return;
    res.set_content(page_, "text/html; charset=utf-8");
  });
  http_->Get("/api/jobgraph", [this](const httplib::Request& req, httplib::Response& res) {
    if (!serve::authorize_http(auth_, req, res, false)) return;
    res.set_header("Cache-Control", "no-store");
    res.set_content(jobgraph_json(), "application/json");
  });
  http_->Get("/api/timeline", [this](const httplib::Request& req, httplib::Response& res) {
    if (!serve::authorize_http(auth_, req, res, false)) return;
    res.set_header("Cache-Control", "no-store");
    res.set_content(timeline_json(), "application/json");
  });
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  http_->start(listener_->fd(), 64, 1, tls_.get());
  if (auth_.files || certs_) {
    hangup_ = std::make_unique<serve::ReloadSignal>("snailtrail run");
    reloader_ = std::thread([this] {
      while (!stop_reloading_) {
        hangup_->poll(auth_, certs_.get(), true);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
}

RunDashboard::~RunDashboard() {
  stop_reloader();
  if (http_) http_->shutdown();
}

void RunDashboard::stop_reloader() {
  stop_reloading_ = true;
  if (reloader_.joinable()) reloader_.join();
}

std::string RunDashboard::url() const {
  return (tls_ ? "https://" : "http://") + listener_->name() + "/";
}

void RunDashboard::on_interval(const flow::IntervalStats& st) {
  const uint32_t active = src_.active ? src_.active() : src_.workers;
  std::lock_guard<std::mutex> lock(mu_);
  points_.push_back({st, active});
}

void RunDashboard::finish(const std::vector<flow::IntervalStats>& intervals, std::string decisions,
                          std::string migrations) {
  std::lock_guard<std::mutex> lock(mu_);
  // The same intervals as on_interval's (the runtime publishes every one); the active
  // workers seen then are kept.
  std::vector<Point> points;
  for (size_t i = 0; i < intervals.size(); ++i) {
    const uint32_t active = i < points_.size() ? points_[i].active
                            : points_.empty()  ? src_.workers
                                               : points_.back().active;
    points.push_back({intervals[i], active});
  }
  points_ = std::move(points);
  decisions_ = decisions.empty() ? "[]" : std::move(decisions);
  migrations_ = migrations.empty() ? "[]" : std::move(migrations);
  done_ = true;
}

void RunDashboard::linger(double seconds) {
  if (seconds > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(seconds, 86400.0)));
  stop_reloader();
  http_->shutdown();
}

void RunDashboard::set_jobgraph(std::function<std::string(std::string)> f) {
  std::lock_guard<std::mutex> lock(mu_);
  jobgraph_ = std::move(f);
}

std::string RunDashboard::jobgraph_json() const {
  std::function<std::string(std::string)> graph;
  std::string decisions, migrations;
  {
    std::lock_guard<std::mutex> lock(mu_);
    graph = jobgraph_;
    if (done_) {
      decisions = decisions_;
      migrations = migrations_;
    }
  }
  if (!graph) return "null";
  if (decisions.empty()) decisions = src_.decisions_json ? src_.decisions_json() : "[]";
  if (migrations.empty()) migrations = src_.migrations_json ? src_.migrations_json() : "[]";
  // The marks as `report --stats-json` reads them from the file (one parser).
  const std::string marks = report::loop_marks_json(
      "{\"decisions\": " + (decisions.empty() ? std::string("[]") : decisions) +
          ", \"migrations\": " + (migrations.empty() ? std::string("[]") : migrations) + "}",
      "run --http");
  return graph(marks);
}

std::string RunDashboard::timeline_json() const {
  std::vector<Point> points;
  bool done;
  std::string decisions, migrations;
  {
    std::lock_guard<std::mutex> lock(mu_);
    points = points_;
    done = done_;
    decisions = decisions_;
    migrations = migrations_;
  }
  if (!done) {  // live: the planners' and the migration log's own copies (their locks)
    decisions = src_.decisions_json ? src_.decisions_json() : "[]";
    migrations = src_.migrations_json ? src_.migrations_json() : "[]";
  }
  std::string out = fmt::format(
      "{{\"config\": {{\"job\": {}, \"workers\": {}, \"bins\": {}, \"autoscale\": {}, "
      "\"rebalance\": {}, \"rate\": {}}}, \"done\": {}, \"intervals\": [",
      quoted(src_.job), src_.workers, src_.bins, src_.autoscale, src_.rebalance, quoted(src_.rate),
      done);
  double prev = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const double dt = p.st.t_s - prev;
    prev = p.st.t_s;
    out += fmt::format(
        "{}{{\"t_s\": {}, \"records\": {}, \"samples\": {}, \"throughput\": {}, \"p50_ms\": {}, "
        "\"p99_ms\": {}, \"max_ms\": {}, \"active_workers\": {}}}",
        i ? ", " : "", num(p.st.t_s), p.st.records, p.st.samples,
        num(dt > 0 ? static_cast<double>(p.st.records) / dt : 0), num(p.st.p50_ms),
        num(p.st.p99_ms), num(p.st.max_ms), p.active);
  }
  out += "], \"decisions\": " + (decisions.empty() ? std::string("[]") : decisions);
  out += ", \"migrations\": " + (migrations.empty() ? std::string("[]") : migrations) + "}\n";
  return out;
}

}  // namespace snailtrail::cli
