// `snailtrail serve`: online analysis of live trace streams (docs/SERVE.md).
#include <memory>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_options.hpp"
#include "importers/streaming.hpp"
#include "serve/server.hpp"

namespace snailtrail::cli {

CommandRunner add_serve_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> tcp;
    bool stdin_source = false;
    std::vector<std::string> follow;
    std::string importer = "auto";
    importers::ImportOptions import_options;
    std::string http;
    std::string rate_interval;
    std::string window = "1s", lateness = "200ms", idle_timeout = "5s", gap_threshold = "100us";
    std::string out;
    size_t retain = 1000;
    size_t wait_for = 0;
    std::string start_grace = "1s";
    std::string max_jump = "24h";
    std::string summary = "all";
    size_t top = 10;
    uint64_t seed = 1;
    std::string port_file;
    bool quiet = false;
    size_t max_connections = 1024;
    std::string connection_timeout = "60s";
    size_t ingest_buffer_mib = 256;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Analyze live trace streams: one JSON line per window as soon as it closes, plus an "
      "HTTP API");
  cmd->add_option("--tcp", args->tcp,
                  "Accept producers on HOST:PORT (JSONL or .snail stream, sniffed per "
                  "connection; port 0 picks a free one; --tcp alone: 127.0.0.1:7878); "
                  "repeatable")
      ->expected(0, 1);
  cmd->add_flag("--stdin", args->stdin_source, "Read a stream from stdin");
  cmd->add_option("--follow", args->follow,
                  "Follow FILE as it grows (like tail -f): our JSONL or .snail, a Spark event "
                  "log still being written, an original SnailTrail MessagePack log, a kernel "
                  "trace as perf script text; repeatable");
  cmd->add_option("--importer", args->importer,
                  "Format of the --follow files: auto (sniffed from their first bytes), jsonl, "
                  "snail, " +
                      importers::streaming_importer_names() +
                      ". The other importers read whole files only")
      ->capture_default_str();
  add_import_options(cmd, args->import_options, /*streaming_only=*/true);
  cmd->add_option(
         "--http", args->http,
         "Serve the live dashboard (/) and the HTTP API (/api/windows, /api/summary/latest, "
         "/api/report, /api/rates, /metrics, /healthz) on HOST:PORT (--http alone: "
         "127.0.0.1:7879); no HTTP server without this option")
      ->expected(0, 1);
  cmd->add_option("--window,-w", args->window, "Tumbling window width in event time")
      ->capture_default_str();
  cmd->add_option("--lateness", args->lateness,
                  "A window closes once every active worker is this far past its end")
      ->capture_default_str();
  cmd->add_option("--idle-timeout", args->idle_timeout,
                  "A worker silent this long (wall time) stops holding windows back")
      ->capture_default_str();
  cmd->add_option("--gap-threshold", args->gap_threshold,
                  "Gaps shorter than this are closed by alignment (docs/PAG.md)")
      ->capture_default_str();
  cmd->add_option("--out,-o", args->out, "Write window JSON lines to FILE (default: stdout)");
  cmd->add_option("--retain", args->retain,
                  "Windows (and DS2 rate intervals) kept in memory for the HTTP API")
      ->capture_default_str();
  cmd->add_option("--rate-interval", args->rate_interval,
                  "DS2 policy interval of /api/rates (rates per operator instance, for "
                  "`scale manage --serve`); default: the window width");
  cmd->add_option("--wait-for", args->wait_for,
                  "Close no window before this many producers have sent their first data "
                  "(give the number of producers when they may start at different times)")
      ->capture_default_str();
  cmd->add_option("--start-grace", args->start_grace,
                  "Close no window within this wall time after the first data, so that "
                  "producers started together all connect first (0: no grace)")
      ->capture_default_str();
  cmd->add_option("--max-jump", args->max_jump,
                  "Refuse (count, log) an event more than this ahead of the latest event "
                  "(event time): one absurd timestamp must not close every window (0: no "
                  "limit)")
      ->capture_default_str();
  cmd->add_option("--summary", args->summary,
                  "Comma list of activity, worker, operator, communication, top, diagnostics, "
                  "or all")
      ->capture_default_str();
  cmd->add_option("--top", args->top, "Number of top critical activities")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the sampled single critical path")
      ->capture_default_str();
  cmd->add_option("--port-file", args->port_file,
                  "Once listening, write the bound ports to FILE (tcp=PORT, http=PORT)");
  cmd->add_option("--max-connections", args->max_connections,
                  "Producer connections at once; more are closed at once, counted and logged")
      ->capture_default_str();
  cmd->add_option("--connection-timeout", args->connection_timeout,
                  "Close a producer connection that sends nothing for this long (what it "
                  "completed is kept)")
      ->capture_default_str();
  cmd->add_option("--ingest-buffer", args->ingest_buffer_mib,
                  "MiB of received but undecoded input (incomplete blocks and lines) all "
                  "connections may hold beyond 64 KiB each; over it, connections are not read "
                  "(TCP backpressure)")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", args->quiet, "No log lines on stderr");
  return [cmd, args]() {
    if (!*cmd) return -1;
    serve::ServeOptions o;
    // A flag given without a value means the default address.
    for (const std::string& t : args->tcp) o.tcp.push_back(t.empty() ? "127.0.0.1:7878" : t);
    if (cmd->count("--tcp") > 0 && o.tcp.empty()) o.tcp.push_back("127.0.0.1:7878");
    o.stdin_source = args->stdin_source;
    o.follow = args->follow;
    o.follow_importer = args->importer;
    o.import_options = args->import_options;
    if (cmd->count("--http") > 0) o.http = args->http.empty() ? "127.0.0.1:7879" : args->http;
    o.live.window_ns = parse_duration(args->window);
    if (o.live.window_ns <= 0) throw std::invalid_argument("--window must be positive");
    o.window_label = args->window;
    o.live.lateness_ns = parse_duration(args->lateness);
    o.idle_timeout_ns = parse_duration(args->idle_timeout);
    o.live.pag.gap_threshold_ns = parse_duration(args->gap_threshold);
    o.live.selection = SummarySelection::parse(args->summary);
    o.live.summary.top_k = args->top;
    o.live.summary.seed = args->seed;
    o.out = args->out;
    o.retain = args->retain;
    if (!args->rate_interval.empty()) {
      o.rate_interval_ns = parse_duration(args->rate_interval);
      if (o.rate_interval_ns <= 0) throw std::invalid_argument("--rate-interval must be positive");
    }
    o.wait_for_producers = args->wait_for;
    // "0" (no grace, no limit) needs no unit.
    auto duration_or_zero = [](const std::string& t) { return t == "0" ? 0 : parse_duration(t); };
    o.start_grace_ns = duration_or_zero(args->start_grace);
    if (o.start_grace_ns < 0) throw std::invalid_argument("--start-grace must not be negative");
    o.live.max_jump_ns = duration_or_zero(args->max_jump);
    if (o.live.max_jump_ns < 0) throw std::invalid_argument("--max-jump must not be negative");
    o.port_file = args->port_file;
    o.quiet = args->quiet;
    o.tcp_limits.max_connections = args->max_connections;
    o.tcp_limits.idle_timeout_ns = parse_duration(args->connection_timeout);
    if (args->ingest_buffer_mib > (size_t{1} << 20))
      throw std::invalid_argument("--ingest-buffer is in MiB: at most 1048576");
    o.tcp_limits.buffer_bytes = args->ingest_buffer_mib << 20;
    return serve::run_server(o);
  };
}

}  // namespace snailtrail::cli
