// `snailtrail serve`: online analysis of live trace streams (docs/SERVE.md).
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_options.hpp"
#include "cli/serve_args.hpp"
#include "importers/streaming.hpp"
#include "serve/otlp_receiver.hpp"
#include "serve/server.hpp"
#include "serve/tls.hpp"

namespace snailtrail::cli {

namespace servecmd {
namespace {

// Where streams come from and the HTTP server.
void add_source_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--tcp", a.tcp,
                  "Accept producers on HOST:PORT (JSONL or .snail stream, sniffed per "
                  "connection; port 0 picks a free one; --tcp alone: 127.0.0.1:7878); "
                  "repeatable")
      ->expected(0, 1);
  cmd->add_flag("--stdin", a.stdin_source, "Read a stream from stdin");
  cmd->add_option("--follow", a.follow,
                  "Follow FILE as it grows (like tail -f): our JSONL or .snail, a Spark event "
                  "log still being written, an original SnailTrail MessagePack log, a kernel "
                  "trace as perf script text; repeatable");
  cmd->add_option("--importer", a.importer,
                  "Format of the --follow files: auto (sniffed from their first bytes), jsonl, "
                  "snail, " +
                      importers::streaming_importer_names() +
                      ". The other importers read whole files only")
      ->capture_default_str();
  add_import_options(cmd, a.import_options, /*streaming_only=*/true);
  cmd->add_option("--nats", a.nats,
                  "Read a JetStream stream nats://[USER:PASS@]HOST:PORT/STREAM, or tls://... "
                  "(docs/SERVE.md; --nats-creds, --nats-tls-ca); --out is appended, its windows "
                  "are not written again after a restart");
  cmd->add_option("--durable", a.durable, "Durable consumer name of --nats (one per shard)");
  cmd->add_option("--shard", a.shard, "Analyze and write only the windows whose index is I mod N")
      ->capture_default_str();
  cmd->add_option("--nats-timeout", a.nats_timeout,
                  "Seconds to retry connecting to --nats while the server cannot be "
                  "reached (refused credentials or TLS end at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--nats-ack-wait", a.nats_ack_wait,
                  "Seconds before JetStream delivers an unacknowledged message again (it is "
                  "skipped; acknowledged once its windows are written)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--drain", a.drain, "--nats: stop once everything stored so far is analyzed");
  cmd->add_option(
         "--http", a.http,
         "Serve the live dashboard (/) and the HTTP API (/api/windows, /api/summary/latest, "
         "/api/report, /api/rates, /metrics, /healthz) on HOST:PORT (--http alone: "
         "127.0.0.1:7879); no HTTP server without this option")
      ->expected(0, 1);
}

// Windows, their output and what is kept for the HTTP API.
void add_window_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--window,-w", a.window, "Tumbling window width in event time")
      ->capture_default_str();
  cmd->add_option("--lateness", a.lateness,
                  "A window closes once every active worker is this far past its end")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", a.idle_timeout,
                  "A worker silent this long (wall time) stops holding windows back")
      ->capture_default_str();
  cmd->add_option("--gap-threshold", a.gap_threshold,
                  "Gaps shorter than this are closed by alignment (docs/PAG.md)")
      ->capture_default_str();
  cmd->add_option(
      "--out,-o", a.out,
      "Write window JSON lines (with --otlp: critical-path lines) to FILE (default: stdout)");
  cmd->add_option("--retain", a.retain,
                  "Windows (and DS2 rate intervals) kept in memory for the HTTP API")
      ->capture_default_str();
  cmd->add_option("--rate-interval", a.rate_interval,
                  "DS2 policy interval of /api/rates (rates per operator instance, for "
                  "`scale manage --serve`); default: the window width");
  cmd->add_option("--wait-for", a.wait_for,
                  "Close no window before this many producers have sent their first data "
                  "(give the number of producers when they may start at different times)")
      ->capture_default_str();
  cmd->add_option("--start-grace", a.start_grace,
                  "Close no window within this wall time after the first data, so that "
                  "producers started together all connect first (0: no grace)")
      ->capture_default_str();
  cmd->add_option("--max-jump", a.max_jump,
                  "Refuse (count, log) an event more than this ahead of the latest event "
                  "(event time): one absurd timestamp must not close every window (0: no "
                  "limit)")
      ->capture_default_str();
}

// Summaries and the limits that protect the server.
void add_summary_and_limit_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--summary", a.summary,
                  "Comma list of activity, worker, operator, communication, top, diagnostics, "
                  "or all")
      ->capture_default_str();
  cmd->add_option("--top", a.top, "Number of top critical activities")->capture_default_str();
  cmd->add_option("--seed", a.seed, "Seed of the sampled single critical path")
      ->capture_default_str();
  cmd->add_option("--port-file", a.port_file,
                  "Once listening, write the bound ports to FILE (tcp=PORT, http=PORT)");
  cmd->add_option("--max-connections", a.max_connections,
                  "Producer connections at once; more are closed at once, counted and logged")
      ->capture_default_str();
  cmd->add_option("--connection-timeout", a.connection_timeout,
                  "Close a producer connection that sends nothing for this long (what it "
                  "completed is kept)")
      ->capture_default_str();
  cmd->add_option("--ingest-buffer", a.ingest_buffer_mib,
                  "MiB of received but undecoded input (incomplete blocks and lines) all "
                  "connections may hold beyond 64 KiB each; over it, connections are not read "
                  "(TCP backpressure)")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", a.quiet, "No log lines on stderr");
}

serve::ServeOptions to_serve_options(const ServeArgs& a, const CLI::App& cmd) {
  serve::ServeOptions o;
  // A flag given without a value means the default address.
  for (const std::string& t : a.tcp) o.tcp.push_back(t.empty() ? "127.0.0.1:7878" : t);
  if (cmd.count("--tcp") > 0 && o.tcp.empty()) o.tcp.push_back("127.0.0.1:7878");
  o.stdin_source = a.stdin_source;
  o.follow = a.follow;
  o.follow_importer = a.importer;
  o.import_options = a.import_options;
  if (cmd.count("--http") > 0) o.http = a.http.empty() ? "127.0.0.1:7879" : a.http;
  o.live.window_ns = parse_duration(a.window);
  if (o.live.window_ns <= 0) throw std::invalid_argument("--window must be positive");
  o.window_label = a.window;
  o.live.lateness_ns = parse_duration(a.lateness);
  o.idle_timeout_ns = parse_duration(a.idle_timeout);
  o.live.pag.gap_threshold_ns = parse_duration(a.gap_threshold);
  o.live.selection = SummarySelection::parse(a.summary);
  o.live.summary.top_k = a.top;
  o.live.summary.seed = a.seed;
  o.out = a.out;
  o.retain = a.retain;
  if (!a.rate_interval.empty()) {
    o.rate_interval_ns = parse_duration(a.rate_interval);
    if (o.rate_interval_ns <= 0) throw std::invalid_argument("--rate-interval must be positive");
  }
  o.wait_for_producers = a.wait_for;
  // "0" (no grace, no limit) needs no unit.
  auto duration_or_zero = [](const std::string& t) { return t == "0" ? 0 : parse_duration(t); };
  o.start_grace_ns = duration_or_zero(a.start_grace);
  if (o.start_grace_ns < 0) throw std::invalid_argument("--start-grace must not be negative");
  o.live.max_jump_ns = duration_or_zero(a.max_jump);
  if (o.live.max_jump_ns < 0) throw std::invalid_argument("--max-jump must not be negative");
  o.port_file = a.port_file;
  o.quiet = a.quiet;
  o.nats.address = a.nats;
  o.nats.durable = a.durable;
  o.nats.drain = a.drain;
  o.nats.connect_timeout_s = a.nats_timeout;
  o.nats.ack_wait_s = a.nats_ack_wait;
  o.nats.auth = nats_auth(a);
  if (a.nats.empty() && (!a.durable.empty() || a.drain))
    throw std::invalid_argument("--durable and --drain apply to --nats");
  unsigned i = 0, n = 0;
  char end = 0;
  if (std::sscanf(a.shard.c_str(), "%u/%u%c", &i, &n, &end) != 2 || n == 0 || i >= n)
    throw std::invalid_argument("--shard must be I/N with 0 <= I < N, not \"" + a.shard + "\"");
  o.shard_index = i;
  o.shard_count = n;
  o.tcp_limits.max_connections = a.max_connections;
  o.tcp_limits.idle_timeout_ns = parse_duration(a.connection_timeout);
  if (a.ingest_buffer_mib > (size_t{1} << 20))
    throw std::invalid_argument("--ingest-buffer is in MiB: at most 1048576");
  o.tcp_limits.buffer_bytes = a.ingest_buffer_mib << 20;
  ListenSecurity sec = load_security(a.security);
  o.auth = std::move(sec.auth);
  o.tls_cert = sec.tls_cert;
  o.tls_key = sec.tls_key;
  o.insecure = sec.insecure;
  return o;
}

}  // namespace
}  // namespace servecmd

CommandRunner add_serve_command(CLI::App& app) {
  using namespace servecmd;  // NOLINT: this command's own helpers
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Analyze live trace streams: one JSON line per window as soon as it closes, plus an "
      "HTTP API");
  add_source_options(cmd, *args);
  add_window_options(cmd, *args);
  add_summary_and_limit_options(cmd, *args);
  add_otlp_options(cmd, *args);
  add_security_options(cmd, args->security,
                       "every listener: the TCP ingest (send --tls-ca), the HTTP API and "
                       "dashboard, --otlp",
                       true);
  add_nats_client_options(cmd, *args);
  return [cmd, args]() {
    if (!*cmd) return -1;
    const ServeArgs& a = *args;
    const bool others = !a.tcp.empty() || cmd->count("--tcp") > 0 || a.stdin_source ||
                        !a.follow.empty() || cmd->count("--http") > 0 || !a.nats.empty();
    if (cmd->count("--otlp") > 0 && !others) return run_otlp(a);
    serve::ServeOptions options = to_serve_options(a, *cmd);
    if (cmd->count("--otlp") == 0) return serve::run_server(options);
    // Beside the other sources: its own port and output, stopped after them.
    if (a.otlp_out.empty())
      throw std::invalid_argument(
          "--otlp beside --tcp, --stdin, --follow, --nats or --http needs --otlp-out FILE for "
          "its critical paths (--out holds the windows)");
    serve::OtlpOptions otlp_opt = otlp_options(a);
    // One set of token files and one certificate: the server's SIGHUP reloads both.
    otlp_opt.auth = options.auth;
    if (!options.tls_cert.empty())
      otlp_opt.certs = options.certs =
          std::make_shared<serve::TlsCertificates>(options.tls_cert, options.tls_key);
    serve::OtlpService otlp(otlp_opt, a.otlp_out, a.quiet);
    otlp.start();
    options.extra_ports.emplace_back("otlp", otlp.port());
    options.slow_traces = otlp.slow_traces();  // --http's /traces
    options.otlp_paths = otlp.live_paths();    // and its /api/critical-path
    const int code = serve::run_server(options);
    otlp.finish();
    return code;
  };
}

}  // namespace snailtrail::cli
