// `serve --otlp`: an OpenTelemetry OTLP/HTTP trace receiver (docs/SERVE.md,
// "OpenTelemetry (OTLP/HTTP) receiver"). `POST /v1/traces` takes protobuf or JSON export
// requests (gzip or not, chunked or not); HTTP threads decode them into a bounded buffer
// of spans, one thread groups the spans by trace (otlp_traces.hpp) and writes each
// completed trace's critical path as one JSON line, the object `critical-path --format
// json` writes for that trace. `GET /metrics` gives the receiver's counters and the
// critical time per service; `GET /api/critical-path` the recent traces' (otlp_live.hpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "importers/otel/spans.hpp"
#include "serve/auth.hpp"
#include "serve/otlp_live.hpp"
#include "serve/otlp_slow.hpp"
#include "serve/otlp_traces.hpp"
#include "serve/tls.hpp"

namespace snailtrail::serve {

class HttpFront;
class Listener;

struct OtlpOptions {
  std::string address = "127.0.0.1:4318";  // port 0: any free port
  size_t max_body = size_t{16} << 20;      // request body, received and decompressed
  size_t buffer_spans = size_t{1} << 20;   // decoded spans not yet grouped; over it: 429
  int retry_after_s = 1;                   // Retry-After of a 429
  OtlpTraceLimits traces;
  OtlpLiveLimits live;   // what /api/critical-path keeps of the completed traces
  SlowTraceLimits slow;  // what /traces and /api/slow-traces keep (otlp_slow.hpp)
  unsigned threads = 8;  // HTTP worker threads (the event loop reads and writes)
  // Clients at once; at the limit a new one takes an idle one's place (HttpFront).
  size_t max_connections = 4096;
  AuthTokens auth;                // with a token: POST needs the write token, /metrics either
  std::string tls_cert, tls_key;  // PEM files: HTTPS instead of HTTP
  std::shared_ptr<TlsCertificates> certs;  // loaded from them (null: loaded at start())
};

struct OtlpCounters {
  std::atomic<uint64_t> requests{0}, spans_accepted{0}, spans_rejected{0}, bad_requests{0},
      too_large{0}, unsupported_type{0}, throttled{0}, traces_written{0}, traces_evicted{0},
      open_traces{0}, open_spans{0}, buffered_spans{0};
};

class OtlpReceiver {
 public:
  // Critical paths go to `out` (not owned), flushed after every batch of them.
  OtlpReceiver(const OtlpOptions& options, std::FILE* out);
  ~OtlpReceiver();
  // Binds (throws std::runtime_error if it cannot) and starts answering.
  void start();
  int port() const { return port_; }
  // Stops answering, completes every open trace and writes its path.
  void stop();
  // Tests: while held, nothing leaves the buffer (so that it fills up).
  void hold(bool on);
  const OtlpCounters& counters() const { return counters_; }
  // The slowest recent traces (for serve --http's /traces beside this receiver's own).
  std::shared_ptr<const SlowTraces> slow_traces() const { return slow_; }
  // The recent traces' paths (for serve --http's /api/critical-path, which /traces asks).
  std::shared_ptr<const OtlpLivePaths> live_paths() const { return live_; }
  // A write to `out` failed: its message (the receiver then writes nothing more).
  std::string write_error() const;

 private:
  void add_routes();
  void assemble_loop();
  void write_paths(std::vector<importers::SpanSet>& done);
  void write_out(const fmt::memory_buffer& text);
  bool admit(importers::SpanSet& spans);
  // The buffer has no room for a request as large as the last one admitted: answered 429
  // before decoding (a client retrying at once would otherwise cost a decode each time).
  bool likely_full() const;
  // The whole HTTP answer to a request whose body is over --otlp-max-body (its head
  // given): 413 with the OTLP error body, in the request's encoding.
  std::string too_large_response(std::string_view head);
  // Raises the open-file limit for `connections` clients as far as allowed; the clients
  // that fit.
  static size_t fit_open_files(size_t connections);
  std::string metrics() const;

  OtlpOptions opt_;
  std::FILE* out_;
  OtlpCounters counters_;
  std::unique_ptr<HttpFront> http_;
  std::unique_ptr<Listener> listener_;
  TlsContext tls_;
  std::thread assembler_;
  int port_ = 0;
  OpenTraces traces_;
  std::shared_ptr<OtlpLivePaths> live_;  // shared with serve --http's /api/critical-path
  std::shared_ptr<SlowTraces> slow_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  struct Arrived {
    int64_t at_ns;  // when the request was admitted: a backlog does not keep traces open
    importers::SpanSet spans;
  };
  std::deque<Arrived> buffer_;
  size_t buffered_ = 0;
  size_t last_admitted_ = 0;  // spans of the last request admitted
  bool held_ = false, stopping_ = false;
  std::string write_error_;
};

// A receiver writing its paths to a file it opens ("" or "-": stdout), for `serve --otlp`
// alone or beside serve's other sources.
class OtlpService {
 public:
  OtlpService(const OtlpOptions& options, const std::string& out_path, bool quiet);
  ~OtlpService();
  // Binds and starts answering; logs where unless quiet. Throws if it cannot bind.
  void start();
  int port() const { return receiver_->port(); }
  std::string write_error() const { return receiver_->write_error(); }
  std::shared_ptr<const SlowTraces> slow_traces() const { return receiver_->slow_traces(); }
  std::shared_ptr<const OtlpLivePaths> live_paths() const { return receiver_->live_paths(); }
  // Stops, writes the open traces, logs the totals; throws if writing the paths failed.
  void finish();

 private:
  OtlpOptions options_;
  std::string out_path_;
  bool quiet_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::unique_ptr<OtlpReceiver> receiver_;
  bool finished_ = false;
};

// Runs a receiver until SIGINT or SIGTERM; paths to `out_path` ("" or "-": stdout);
// `port_file`: written once listening ("otlp=PORT"). Returns 0, or throws.
int run_otlp_server(const OtlpOptions& options, const std::string& out_path,
                    const std::string& port_file, bool quiet);

}  // namespace snailtrail::serve
