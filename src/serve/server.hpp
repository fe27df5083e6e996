// `snailtrail serve`: live trace streams in (TCP, stdin, followed files), one JSON line
// per window out as windows close (a file or stdout), and an HTTP API with the latest
// windows, Prometheus metrics and a health check. docs/SERVE.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/auth.hpp"
#include "serve/ingest.hpp"
#include "serve/live_analyzer.hpp"
#include "serve/nats_source.hpp"

namespace snailtrail::serve {

class SlowTraces;
class OtlpLivePaths;

struct ServeOptions {
  std::vector<std::string> tcp;             // listen addresses "host:port" (port 0: any free port)
  bool stdin_source = false;                // read a stream from stdin
  std::vector<std::string> follow;          // files to follow as they grow
  std::string follow_importer = "auto";     // their format: auto (sniffed), jsonl, snail, spark
  importers::ImportOptions import_options;  // the streaming importers' options
  std::string http;                         // "host:port" of the HTTP API, empty: none
  LiveOptions live;
  std::string window_label = "1s";  // as given on the command line, for the dashboard
  int64_t idle_timeout_ns = 5'000'000'000;
  std::string out;                    // window JSON lines: a file, or "" / "-" for stdout
  size_t retain = 1000;               // windows (and rate intervals) kept for the HTTP API
  int64_t rate_interval_ns = 0;       // DS2 policy interval of /api/rates; 0: the window width
  size_t wait_for_producers = 0;      // no window closes before this many have connected
  int64_t start_grace_ns = 0;         // nor within this wall time after the first data
  size_t queue_events = 1 << 20;      // events decoded but not yet analyzed, at most
  TcpLimits tcp_limits;               // connections, their idle timeout, the input buffer budget
  size_t http_max_connections = 256;  // HTTP clients at once (more are refused)
  unsigned http_threads = 4;          // threads answering complete HTTP requests
  std::string port_file;              // written once listening: "tcp=PORT\nhttp=PORT\n"
  std::vector<std::pair<std::string, int>> extra_ports;  // also in it: NAME=PORT (otlp)
  bool quiet = false;                                    // no log lines on stderr
  NatsSourceOptions nats;                     // a JetStream stream (nats.address empty: none)
  uint32_t shard_index = 0, shard_count = 1;  // write only windows with index % count == index
  AuthTokens auth;                            // bearer tokens (none: open, as on loopback)
  std::string tls_cert, tls_key;              // PEM files: TLS on --tcp and --http
  // Loaded from them (null: loaded by the server); shared with an OTLP receiver beside the
  // server, so that one SIGHUP reloads the certificate of every listener.
  std::shared_ptr<TlsCertificates> certs;
  bool insecure = false;  // allow a non-loopback bind without TLS and a token
  // An OTLP receiver's slow traces beside the server: --http serves /traces from them.
  std::shared_ptr<const SlowTraces> slow_traces;
  // And its recent paths: --http serves /api/critical-path (the /traces page's percentiles).
  std::shared_ptr<const OtlpLivePaths> otlp_paths;
};

// Runs until SIGINT or SIGTERM (or, without TCP and HTTP, until every source has ended),
// then closes the open windows, flushes the outputs and returns 0; a second signal exits
// at once (status 128 + signal). A failed write of the windows stops the server and
// throws std::runtime_error. Throws
// std::invalid_argument for bad options and std::runtime_error when it cannot listen.
int run_server(const ServeOptions& options);

// "host:port" -> (host, port). Throws std::invalid_argument.
std::pair<std::string, int> parse_address(const std::string& address);

}  // namespace snailtrail::serve
