// `serve`'s HTTP API: the live dashboard (/, /api/report and /api/jobgraph), /healthz, /metrics,
// /api/rates, /api/windows and /api/summary/latest; beside --otlp, the slow traces'
// page /traces with /api/slow-traces and /api/trace (otlp_slow.hpp). docs/SERVE.md.
#pragma once

#include <cstddef>

#include "serve/auth.hpp"
#include "serve/http_front.hpp"
#include "serve/ingest.hpp"
#include "serve/live_rates.hpp"
#include "serve/serve_state.hpp"

namespace snailtrail::serve {

class SlowTraces;
class OtlpLivePaths;

// What the routes read; every reference outlives the HTTP front.
struct ApiSources {
  SharedState& shared;
  const IngestCounters& counters;
  const BatchQueue& queue;
  LiveRates& rates;
  size_t buffer_budget;                  // --ingest-buffer, shown in /metrics
  const AuthTokens& auth;                // with a token, every route but /healthz needs it
  const SlowTraces* slow = nullptr;      // with --otlp: /traces, /api/slow-traces, /api/trace
  const OtlpLivePaths* paths = nullptr;  // with --otlp: /api/critical-path
};

// Registers the routes on `http` (before it starts).
void add_api_routes(HttpFront& http, const ApiSources& sources);

}  // namespace snailtrail::serve
