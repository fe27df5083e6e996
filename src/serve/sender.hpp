// `snailtrail send`: replays a trace to a `serve` endpoint as a live producer would, in
// event-time order, as fast as possible or paced by event time or by a rate.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/producer_link.hpp"
#include "trace/trace.hpp"

namespace snailtrail::serve {

struct SendOptions {
  std::string to = "127.0.0.1:7878";
  double speed = 0;  // event time runs this many times faster than wall time; 0: no pacing
  double rate = 0;   // at most this many events per second; 0: no limit
  std::vector<uint32_t> workers;  // only these workers' events; empty: all
  bool jsonl = false;             // JSONL instead of the .snail stream framing
  size_t batch_events = 4096;     // events per write (and per .snail block), at most
  double connect_timeout_s = 5;   // retries while the server is not up yet
  // Send the trace this many times, each copy shifted in time by the trace's span (and its
  // correlators by their range), so that a short trace feeds a long-running load test.
  uint64_t repeat = 1;
  // nats:// only: publish only what the stream does not hold yet of this trace (a send
  // that died is run again; docs/SERVE.md "Through NATS JetStream").
  bool resume = false;
  // TCP: sent as the stream's first line, "Bearer TOKEN" (serve --token-file).
  std::string token;
  // TCP over TLS, verifying the server's certificate against the CA certificates in this
  // PEM file (serve --tls-cert); empty: plain TCP. nats://: TLS with nats-server, likewise.
  std::string tls_ca;
  // nats:// only: a credentials file (user JWT and nkey seed) and a client certificate.
  std::string nats_creds, nats_tls_cert, nats_tls_key;
};

struct SendStats {
  uint64_t events = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  uint64_t skipped_events = 0;  // nats:// --resume: stored by an earlier send
};

// When the i-th event sent (at `offset_ns` of event time after the first) may leave,
// paced by event time (speed) and/or by rate; `start` when there is no pacing.
std::chrono::steady_clock::time_point send_due(const SendOptions& o,
                                               std::chrono::steady_clock::time_point start,
                                               int64_t offset_ns, size_t i);

// Throws std::runtime_error when it cannot connect or the connection breaks.
SendStats send_trace(const Trace& trace, const SendOptions& options);

// A live producer's connection: one .snail stream to serve's --tcp listener, written
// chunk by chunk as the events happen (`snailtrail run --trace-to`). Not thread-safe.
class TraceStream {
 public:
  // Connects (retrying up to `connect_timeout_s`), over TLS and with the token line when
  // `auth` says so; throws std::runtime_error if it cannot (ProducerLink).
  explicit TraceStream(std::string address, double connect_timeout_s = 0,
                       const ClientAuth& auth = {});
  ~TraceStream();
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;
  // Sends the chunk's events (in time order) and names as .snail blocks; throws
  // std::runtime_error when the connection breaks.
  void send(const Trace& chunk);
  // Ends the stream and waits for the server to read it all; throws std::runtime_error
  // when the server did not take it (a refused token).
  void close();
  // The one call from another thread: a send or close blocked on a receiver that stopped
  // reading fails at once (the socket is shut down; it stays open until destruction).
  void interrupt();
  const SendStats& stats() const { return stats_; }

 private:
  std::string address_;
  // Set once; closed by the destructor only, so interrupt() never races it.
  std::unique_ptr<ProducerLink> link_;
  bool first_ = true, closed_ = false;
  SendStats stats_;
};

}  // namespace snailtrail::serve
