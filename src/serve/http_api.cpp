#include "serve/http_api.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include <httplib.h>

#include "serve/otlp_live.hpp"
#include "serve/otlp_slow.hpp"

namespace snailtrail::serve {
namespace {

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

// The retained windows starting at `since` or later, as one JSON array.
std::string windows_since(SharedState& shared, int64_t since) {
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
  return body;
}

}  // namespace

void add_api_routes(HttpFront& http, const ApiSources& src) {
  SharedState& shared = src.shared;
  // Every route reads; /healthz stays open for load balancers and probes.
  http.set_pre_routing_handler(
      [&auth = src.auth](const httplib::Request& req, httplib::Response& res) {
        if (req.path == "/healthz" || authorize_http(auth, req, res, false))
          return httplib::Server::HandlerResponse::Unhandled;
        return httplib::Server::HandlerResponse::Handled;
      });
  // The live dashboard: the report's page, polling /api/report.
  // Beside --otlp, with its link to the slow traces' Waterfall (/traces) shown.
  std::string dashboard = report::render_dashboard_html();
  if (src.slow) {
    const std::string hidden = "href=\"traces\" hidden>";
    const size_t at = dashboard.find(hidden);
    if (at != std::string::npos) dashboard.replace(at, hidden.size(), "href=\"traces\">");
  }
  http.Get("/", [dashboard](const httplib::Request&, httplib::Response& res) {
    res.set_content(dashboard, "text/html; charset=utf-8");
  });
  http.Get("/api/report", [&shared](const httplib::Request&, httplib::Response& res) {
    std::string body;
    {
      std::lock_guard lock(shared.mu);
      body = shared.report->json();
    }
    res.set_content(body, "application/json");
  });
  // The Job graph of the windows analyzed so far (docs/REPORT.md, "Job graph", live).
  http.Get("/api/jobgraph", [&shared](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(shared.jobgraph.json(), "application/json");
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  http.Get("/metrics", [src, &http](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        metrics_text(src.shared, src.counters, src.queue, http.counters(), src.buffer_budget) +
            src.rates.metrics(),
        "text/plain; version=0.0.4");
  });
  http.Get("/api/rates", [&rates = src.rates](const httplib::Request& req, httplib::Response& res) {
    if (std::optional<int64_t> since = since_param(req, res))
      res.set_content(rates.page(*since), "application/json");
  });
  http.Get("/api/windows", [&shared](const httplib::Request& req, httplib::Response& res) {
    if (const std::optional<int64_t> since = since_param(req, res))
      res.set_content(windows_since(shared, *since), "application/json");
  });
  http.Get("/api/summary/latest", [&shared](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(shared.mu);
    if (shared.windows.empty()) {
      res.status = 404;
      res.set_content("{\"error\":\"no window has closed yet\"}\n", "application/json");
      return;
    }
    res.set_content(shared.windows.back().second + "\n", "application/json");
  });
  if (src.slow) add_slow_trace_routes(http, *src.slow);
  if (src.paths) add_critical_path_route(http, *src.paths);
}

}  // namespace snailtrail::serve
