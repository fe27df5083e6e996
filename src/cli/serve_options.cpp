// `snailtrail serve`'s --nats client options (docs/SERVE.md, "NATS credentials and TLS")
// and OpenTelemetry receiver options (docs/SERVE.md, "OpenTelemetry (OTLP/HTTP) receiver").
#include <cstdio>
#include <stdexcept>

#include "cli/duration.hpp"
#include "cli/serve_args.hpp"

namespace snailtrail::cli::servecmd {

void add_nats_client_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--nats-creds", a.nats_creds,
                  "--nats: present this NATS credentials file (user JWT and nkey seed, as nsc "
                  "writes it) to nats-server; a user and password or a token go in the URL "
                  "(nats://USER:PASS@HOST:PORT/STREAM)");
  cmd->add_option("--nats-tls-ca", a.nats_tls_ca,
                  "--nats over TLS, trusting the CA certificate(s) in this PEM file (tls:// "
                  "alone: the system store); the certificate must name the URL's host");
  cmd->add_option("--nats-tls-cert", a.nats_tls_cert,
                  "--nats: a client certificate (PEM) for a nats-server with --tlsverify; needs "
                  "--nats-tls-key");
  cmd->add_option("--nats-tls-key", a.nats_tls_key, "The PEM private key of --nats-tls-cert");
}

serve::NatsAuth nats_auth(const ServeArgs& a) {
  serve::NatsAuth auth;
  auth.creds = a.nats_creds;
  auth.tls_ca = a.nats_tls_ca;
  auth.tls_cert = a.nats_tls_cert;
  auth.tls_key = a.nats_tls_key;
  if (a.nats.empty() &&
      !(auth.creds.empty() && auth.tls_ca.empty() && auth.tls_cert.empty() && auth.tls_key.empty()))
    throw std::invalid_argument(
        "--nats-creds, --nats-tls-ca, --nats-tls-cert and --nats-tls-key apply to --nats");
  return auth;
}

// The OpenTelemetry receiver (docs/SERVE.md, "OpenTelemetry (OTLP/HTTP) receiver").
void add_otlp_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--otlp", a.otlp,
                  "Receive OpenTelemetry spans (OTLP/HTTP, POST /v1/traces, protobuf or JSON) on "
                  "[HOST:]PORT (--otlp alone: 127.0.0.1:4318) and write each completed trace's "
                  "critical path to --out (--otlp-out beside other sources) as one JSON line")
      ->expected(0, 1);
  cmd->add_option("--otlp-max-body", a.otlp_max_body,
                  "OTLP: largest request body, as received and decompressed (bytes, or with "
                  "KiB, MiB, GiB); larger ones are answered 413")
      ->capture_default_str();
  cmd->add_option("--otlp-max-connections", a.otlp_max_connections,
                  "OTLP: client connections at once; at the limit a new client takes the "
                  "longest-idle one's place (lowered to what the open-file limit allows)")
      ->capture_default_str();
  cmd->add_option("--otlp-buffer", a.otlp_buffer,
                  "OTLP: spans received but not yet grouped into traces, at most; over it "
                  "requests are answered 429 with Retry-After")
      ->capture_default_str();
  cmd->add_option("--trace-idle", a.trace_idle,
                  "OTLP: a trace is complete once none of its spans has arrived for this long")
      ->capture_default_str();
  cmd->add_option("--max-open-traces", a.max_open_traces,
                  "OTLP: traces still receiving spans, at most; over it the least recent one "
                  "is completed early (counted as evicted)")
      ->capture_default_str();
  cmd->add_option("--max-open-spans", a.max_open_spans,
                  "OTLP: spans of the open traces, at most; over it the least recent traces "
                  "are completed early (counted as evicted)")
      ->capture_default_str();
  cmd->add_option("--otlp-out", a.otlp_out,
                  "OTLP: write the critical paths to FILE; needed when --otlp runs beside "
                  "--tcp, --stdin, --follow, --nats or --http (their windows go to --out)");
  cmd->add_option("--otlp-window", a.otlp_window,
                  "OTLP: GET /api/critical-path answers over the traces completed this recently "
                  "(?minutes= asks for less)")
      ->capture_default_str();
  cmd->add_option("--otlp-window-traces", a.otlp_window_traces,
                  "OTLP: completed traces kept for /api/critical-path, at most (the oldest go "
                  "first, counted as dropped_traces)")
      ->capture_default_str();
  cmd->add_option("--slow-traces", a.slow_traces,
                  "OTLP: the slowest traces of --slow-window kept with their spans for the live "
                  "Waterfall (GET /traces, /api/slow-traces, /api/trace); 0: none")
      ->capture_default_str();
  cmd->add_option("--slow-window", a.slow_window,
                  "OTLP: a slow trace completed longer ago than this leaves the list")
      ->capture_default_str();
  cmd->add_option("--slow-traces-spans", a.slow_traces_spans,
                  "OTLP: spans of the kept slow traces, at most (the fastest go first)")
      ->capture_default_str();
}

namespace {
// "16MiB", "512KiB", "1048576" -> bytes.
size_t parse_bytes(const std::string& text, const char* option) {
  size_t end = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(text, &end);
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string(option) + ": not a size: " + text);
  }
  const std::string unit = text.substr(end);
  const int shift = unit.empty() || unit == "B"    ? 0
                    : unit == "KiB" || unit == "K" ? 10
                    : unit == "MiB" || unit == "M" ? 20
                    : unit == "GiB" || unit == "G" ? 30
                                                   : -1;
  if (shift < 0 || n > (~0ull >> shift))
    throw std::invalid_argument(std::string(option) +
                                ": not a size (bytes, KiB, MiB, GiB): " + text);
  return static_cast<size_t>(n << shift);
}
}  // namespace

serve::OtlpOptions otlp_options(const ServeArgs& a) {
  serve::OtlpOptions o;
  o.address = a.otlp.empty()                          ? "127.0.0.1:4318"
              : a.otlp.find(':') == std::string::npos ? "127.0.0.1:" + a.otlp
                                                      : a.otlp;
  o.max_body = parse_bytes(a.otlp_max_body, "--otlp-max-body");
  o.buffer_spans = a.otlp_buffer;
  o.max_connections = a.otlp_max_connections;
  o.traces.idle_ns = parse_duration(a.trace_idle);
  o.traces.max_open_traces = a.max_open_traces;
  o.traces.max_open_spans = a.max_open_spans;
  o.live.window_ns = parse_duration(a.otlp_window);
  o.live.max_traces = a.otlp_window_traces;
  o.slow.max_traces = a.slow_traces;
  o.slow.window_ns = parse_duration(a.slow_window);
  o.slow.max_spans = a.slow_traces_spans;
  const ListenSecurity sec = load_security(a.security);
  o.auth = sec.auth;
  o.tls_cert = sec.tls_cert;
  o.tls_key = sec.tls_key;
  serve::check_exposure({{"--otlp", o.address, !o.tls_cert.empty()}}, o.auth.enabled(),
                        sec.insecure);
  return o;
}

// --otlp alone: the paths go to --otlp-out, else --out.
int run_otlp(const ServeArgs& a) {
  return serve::run_otlp_server(otlp_options(a), a.otlp_out.empty() ? a.out : a.otlp_out,
                                a.port_file, a.quiet);
}

}  // namespace snailtrail::cli::servecmd
