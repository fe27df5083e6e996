// A producer's connection to serve's TCP ingest, shared by `send` and `run --trace-to`
// (docs/SERVE.md, "Running across hosts"): connect (retrying while the server starts),
// TLS verified against a CA file (or the system's CA store) with the host name checked,
// the token as the stream's first line, and an end that tells a taken stream from a
// refused one.
#pragma once

#include <string>
#include <string_view>

struct ssl_st;
struct ssl_ctx_st;

namespace snailtrail::serve {

// What a client of a protected serve presents (--token-file, --tls-ca).
struct ClientAuth {
  std::string token;  // sent as "Bearer TOKEN\n" first; empty: none
  // PEM CA certificate(s) to verify the server with. Empty: plain TCP, unless the address
  // is tls://HOST:PORT, which verifies against the system's CA store.
  std::string tls_ca;
  std::string nats_creds;                   // nats:// destinations only: a NATS credentials file
  std::string nats_tls_cert, nats_tls_key;  // and a client certificate (--tlsverify)
  // The options that set them, for messages.
  std::string token_flag = "--token-file", ca_flag = "--tls-ca";
};

// tls://HOST:PORT: TLS asked for by the address (HOST:PORT returned); false: as it is.
bool strip_tls_scheme(std::string& address);

class ProducerLink {
 public:
  // Connects to HOST:PORT or tls://HOST:PORT (retrying up to `connect_timeout_s`), starts
  // TLS (tls:// or a CA file) and sends the token line. Throws std::runtime_error when it cannot
  // connect or the server's certificate is not trusted (the reason named: expired, hostname
  // mismatch, ...), and std::invalid_argument when the CA file cannot be read.
  ProducerLink(const std::string& address, double connect_timeout_s, const ClientAuth& auth);
  ~ProducerLink();
  ProducerLink(const ProducerLink&) = delete;
  ProducerLink& operator=(const ProducerLink&) = delete;

  // Throws std::runtime_error (with the likely reason) when the connection broke.
  void write(std::string_view data);
  // Ends the stream and waits for the server to close its side, so everything sent was
  // read; throws when the server did not take the stream (it reset the connection).
  void finish();
  // From another thread: a write or finish blocked on a receiver that stopped reading
  // fails at once (the socket is shut down; it stays open until destruction).
  void interrupt();

 private:
  void release();

  std::string address_, refused_hint_;
  int fd_ = -1;
  ssl_ctx_st* ctx_ = nullptr;
  ssl_st* ssl_ = nullptr;
};

}  // namespace snailtrail::serve
