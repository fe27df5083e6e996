// `snailtrail serve`'s arguments, shared by serve_command.cpp (sources, windows, the
// server) and serve_options.cpp (the OTLP receiver, tokens and TLS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/listen_security.hpp"
#include "importers/streaming.hpp"
#include "serve/auth.hpp"
#include "serve/nats_link.hpp"
#include "serve/otlp_receiver.hpp"

namespace snailtrail::cli::servecmd {

struct ServeArgs {
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
  std::string nats, durable, shard = "0/1";
  bool drain = false;
  double nats_timeout = 5;
  double nats_ack_wait = 300;
  // What --nats presents to a protected nats-server (docs/SERVE.md).
  std::string nats_creds, nats_tls_ca, nats_tls_cert, nats_tls_key;
  // The OTLP/HTTP receiver.
  std::string otlp;
  std::string otlp_max_body = "16MiB";
  size_t otlp_max_connections = 4096;
  size_t otlp_buffer = size_t{1} << 20;
  std::string trace_idle = "5s";
  size_t max_open_traces = 100'000;
  size_t max_open_spans = size_t{1} << 20;
  std::string otlp_window = "5m";
  size_t otlp_window_traces = 20'000;
  size_t slow_traces = 50;             // --slow-traces: the live Waterfall's traces
  std::string slow_window = "5m";      // --slow-window
  size_t slow_traces_spans = 200'000;  // --slow-traces-spans
  std::string otlp_out;
  SecurityArgs security;  // who may send and read (listen_security.hpp)
};

// --nats's client options: --nats-creds, --nats-tls-ca, --nats-tls-cert, --nats-tls-key
// (serve's --tls-* are its own listeners').
void add_nats_client_options(CLI::App* cmd, ServeArgs& a);
// --nats's credentials and TLS files (refused without --nats).
serve::NatsAuth nats_auth(const ServeArgs& a);
// --otlp and the receiver's limits.
void add_otlp_options(CLI::App* cmd, ServeArgs& a);
serve::OtlpOptions otlp_options(const ServeArgs& a);
// --otlp alone: the paths go to --otlp-out, else --out.
int run_otlp(const ServeArgs& a);

}  // namespace snailtrail::cli::servecmd
