// Trace streams through a NATS JetStream broker (docs/SERVE.md, "Through NATS JetStream"):
// the address form nats://HOST:PORT/STREAM, a connection with its JetStream context, and
// the producer side. A message is one worker's events (or the names) as a whole .snail
// stream (header and blocks, the bytes of the TCP ingest), on subject STREAM.<worker>
// (names on STREAM.names), so that many events travel per message.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "serve/sender.hpp"
#include "trace/trace.hpp"

struct __natsConnection;
struct __jsCtx;

namespace snailtrail::serve {

struct NatsPublishFailures;
struct NatsCredsCallbacks;

// nats://[USER:PASS@ or TOKEN@]HOST:PORT/STREAM, or tls://... for TLS.
struct NatsAddress {
  std::string server;  // nats://[credentials@]HOST:PORT, for the client only: never printed
  std::string host;    // HOST, the name the server's certificate must carry
  std::string stream;  // letters, digits, '-' and '_'
  std::string text;    // as given, its password or token replaced by *** (for messages)
  bool tls = false;    // tls://
};

// nats://..., or tls://HOST:PORT/STREAM (tls://HOST:PORT alone is a TCP ingest over TLS).
bool is_nats_address(const std::string& s);
// Throws std::invalid_argument naming what is wrong (the address redacted).
NatsAddress parse_nats_address(const std::string& s);
// `s` with the password of nats://USER:PASS@... or the token of nats://TOKEN@... replaced
// by *** (nats://USER:***@..., nats://***@...); any other text unchanged.
std::string redact_nats_url(const std::string& s);

// What a client presents to a protected nats-server beside the URL's user and password or
// token (docs/SERVE.md, "NATS credentials and TLS"). Any TLS file turns TLS on.
struct NatsAuth {
  std::string creds;     // a .creds file: the user JWT and its nkey seed (operator mode)
  std::string tls_ca;    // PEM CA certificate(s) the server's certificate must chain to
  std::string tls_cert;  // a client certificate (PEM), for a server with --tlsverify
  std::string tls_key;   // its private key
  // The options that set them, for messages.
  std::string creds_flag = "--nats-creds", ca_flag = "--nats-tls-ca", cert_flag = "--nats-tls-cert",
              key_flag = "--nats-tls-key";
};

// A connection to the server and its JetStream context. Throws std::runtime_error with
// the server's address (redacted) and the client's reason when it cannot connect within
// `connect_timeout_s` (retrying while the server is not up yet; at once when the server
// refuses the credentials or the TLS handshake fails), std::invalid_argument when a file
// of `auth` cannot be read. With `reconnect`, a connection lost later is re-established
// by the client (which buffers what is published meanwhile); without, it stays closed
// and everything fails at once.
class NatsLink {
 public:
  NatsLink(const NatsAddress& address, double connect_timeout_s, bool reconnect = true,
           const NatsAuth& auth = {});
  ~NatsLink();
  NatsLink(const NatsLink&) = delete;
  NatsLink& operator=(const NatsLink&) = delete;
  // The stream (subjects STREAM.>, file storage), created if missing; throws
  // std::runtime_error when it can be neither found nor created (e.g. no -js).
  void ensure_stream();
  __natsConnection* connection() const { return nc_; }
  __jsCtx* js() const { return js_; }
  const NatsAddress& address() const { return address_; }
  // The async publishes that failed so far (their acks said so, or never came).
  uint64_t failed() const;
  std::string first_failure() const;

 private:
  NatsAddress address_;
  __natsConnection* nc_ = nullptr;
  __jsCtx* js_ = nullptr;
  std::unique_ptr<NatsPublishFailures> failures_;
  std::unique_ptr<NatsCredsCallbacks> creds_;  // outlives the connection (reconnects)
};

// "STATUS: text" of the client's last error, for messages.
std::string nats_error(int status);

struct NatsSendStats {
  uint64_t events = 0, bytes = 0, messages = 0;
  uint64_t skipped_events = 0, skipped_messages = 0;  // --resume: stored already
};

// What makes a producer's messages recognizable when it is run again (`send`): message i
// of worker W carries the JetStream message id (Nats-Msg-Id) "PREFIX.W.i", the names
// "PREFIX.names.HASH". The server drops a message whose id it stored within the
// stream's duplicate window (2 minutes by default), and `resume` skips, for each worker,
// the messages up to the last one stored on its subject under the same prefix.
struct NatsIdentity {
  std::string prefix;  // empty: no ids (run --trace-to)
  bool resume = false;
};

// Publishes chunks of a live stream: each worker's events are buffered until
// `events_per_message`, then published (acknowledged asynchronously, a bounded number in
// flight). Names go first, on STREAM.names. Not thread-safe.
class NatsPublisher {
 public:
  NatsPublisher(const NatsAddress& address, double connect_timeout_s,
                size_t events_per_message = 4096, NatsIdentity identity = {},
                const NatsAuth& auth = {});
  ~NatsPublisher();
  // Events of a chunk (each worker's in time order) and names.
  void add(const Trace& chunk);
  // Publishes what is buffered (without waiting for the acknowledgements).
  void flush();
  // Publishes what is buffered and waits until the server has stored every message;
  // throws std::runtime_error if any publish failed.
  void finish(double timeout_s = 30);
  const NatsSendStats& stats() const { return stats_; }

 private:
  void publish(const std::string& subject, const Trace& message, const std::string& id);
  void flush_worker(uint32_t worker);
  uint64_t stored_until(const std::string& subject);
  [[noreturn]] void lost(const std::string& what, int status) const;
  NatsLink link_;
  size_t per_message_;
  NatsIdentity identity_;
  std::map<uint32_t, Trace> buffers_;
  std::map<uint32_t, uint64_t> published_;  // messages per worker so far, stored or skipped
  std::map<uint32_t, uint64_t> stored_;     // resume: the last one stored per worker
  std::string source_;
  NatsSendStats stats_;
};

// `send TRACE --to nats://...`: the selected workers' events in event-time order (paced by
// speed and rate as on TCP), then waits until the server has stored them all. Repeat is
// not supported on this path (std::invalid_argument). Messages carry ids (NatsIdentity:
// PREFIX is a hash of the trace, batch size and pacing); `options.resume` skips what the
// stream holds already. Throws std::runtime_error when the server is unreachable, the
// stream cannot be created, a publish fails or the connection is lost (saying to run
// again with --resume).
SendStats send_trace_nats(const Trace& trace, const SendOptions& options);

}  // namespace snailtrail::serve
