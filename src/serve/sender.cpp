#include "serve/sender.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "serve/server.hpp"
#include "trace/setting_error.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail::serve {
namespace {

using Clock = std::chrono::steady_clock;

int connect_to(const std::string& address, double timeout_s) {
  auto [host, port] = parse_address(address);
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::string last_error;
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) throw std::runtime_error("cannot resolve " + address + ": " + ::gai_strerror(rc));
    int fd = -1;
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        last_error = std::strerror(errno);
        ::close(fd);
        fd = -1;
      }
    }
    ::freeaddrinfo(res);
    if (fd >= 0) return fd;
    if (Clock::now() >= deadline)
      throw std::runtime_error("cannot connect to " + address + ": " + last_error);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Why a server would cut a producer off at once (docs/SERVE.md, "Running across hosts").
constexpr const char* kRefusedHint =
    " (a token the server refuses, --token-file, or a TLS port, --tls-ca?)";

void write_all(int fd, std::string_view data, const std::string& address) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("connection to " + address + " broke: " + std::strerror(errno) +
                               (errno == ECONNRESET || errno == EPIPE ? kRefusedHint : ""));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// A producer's connection: the socket, and the TLS session on it with --tls-ca.
struct Wire {
  int fd = -1;
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  Wire() = default;
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;
  ~Wire() {
    if (ssl) SSL_free(ssl);
    if (ctx) SSL_CTX_free(ctx);
    if (fd >= 0) ::close(fd);
  }
};

std::string tls_error() {
  std::string reason;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    if (reason.empty()) reason = text;
  }
  return reason.empty() ? std::string("the connection was closed") : reason;
}

// TLS over the connected socket, verifying the server's certificate against the CA
// certificates in `ca_path` and that it names the host of `address` (an IP or a name).
void start_tls(Wire& w, const std::string& address, const std::string& ca_path) {
  std::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(): a closed peer is an error
  ERR_clear_error();
  w.ctx = SSL_CTX_new(TLS_client_method());
  if (!w.ctx) throw std::runtime_error("cannot create a TLS context: " + tls_error());
  SSL_CTX_set_min_proto_version(w.ctx, TLS1_2_VERSION);
  if (SSL_CTX_load_verify_locations(w.ctx, ca_path.c_str(), nullptr) != 1)
    throw std::invalid_argument("--tls-ca: cannot read the CA certificates in " + ca_path + ": " +
                                tls_error());
  SSL_CTX_set_verify(w.ctx, SSL_VERIFY_PEER, nullptr);
  w.ssl = SSL_new(w.ctx);
  if (!w.ssl || SSL_set_fd(w.ssl, w.fd) != 1)
    throw std::runtime_error("cannot start TLS to " + address + ": " + tls_error());
  const std::string host = parse_address(address).first;
  X509_VERIFY_PARAM* param = SSL_get0_param(w.ssl);
  if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) {
    // A name, not an address: checked against the certificate, and sent as SNI.
    SSL_set_hostflags(w.ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(w.ssl, host.c_str());
    SSL_set_tlsext_host_name(w.ssl, host.c_str());
  }
  if (SSL_connect(w.ssl) != 1) {
    const long verify = SSL_get_verify_result(w.ssl);
    const std::string why = verify != X509_V_OK
                                ? std::string("the server's certificate is not trusted: ") +
                                      X509_verify_cert_error_string(verify)
                                : tls_error();
    throw std::runtime_error("cannot connect to " + address + " over TLS: " + why);
  }
}

void write_all(Wire& w, std::string_view data, const std::string& address) {
  while (w.ssl && !data.empty()) {
    const int n =
        SSL_write(w.ssl, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
    if (n <= 0)
      throw std::runtime_error("connection to " + address + " broke: " + tls_error() +
                               kRefusedHint);
    data.remove_prefix(static_cast<size_t>(n));
  }
  write_all(w.fd, data, address);
}

// Ends the stream and waits for the server to close its side, so everything sent was read.
// serve never writes on a producer's connection: bytes back (a TLS alert) or a reset (a
// connection closed with unread input: a refused token, a failed TLS handshake) mean the
// stream was not taken.
void finish(Wire& w, const std::string& address) {
  if (w.ssl) SSL_shutdown(w.ssl);  // close_notify: the end of the stream, not a cut
  ::shutdown(w.fd, SHUT_WR);
  char sink[256];
  if (w.ssl) {
    while (SSL_read(w.ssl, sink, sizeof sink) > 0) {
    }
    ERR_clear_error();
    return;
  }
  bool answered = false;
  ssize_t n;
  while ((n = ::recv(w.fd, sink, sizeof sink, 0)) > 0 || (n < 0 && errno == EINTR))
    answered |= n > 0;
  if (n < 0 || answered)
    throw std::runtime_error(
        "the server at " + address + " did not take the stream (" +
        (answered ? std::string("it answered with bytes") : std::strerror(errno)) + ")" +
        kRefusedHint);
}

bool selected(const SendOptions& o, uint32_t worker) {
  return o.workers.empty() ||
         std::find(o.workers.begin(), o.workers.end(), worker) != o.workers.end();
}

// The events to send, in event-time order across workers (each worker's own order kept),
// `repeat` times: copy r has timestamps + r * span and correlators + r * their range.
class Replay {
 public:
  Replay(const Trace& trace, const SendOptions& o) : trace_(trace) {
    order_.reserve(trace.events.size());
    for (uint32_t i = 0; i < trace.events.size(); ++i)
      if (selected(o, trace.events[i].worker)) order_.push_back(i);
    std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      return trace.events[a].ts < trace.events[b].ts;
    });
    if (o.repeat == 0) throw UsageError({field("repeat"), " must be at least 1"});
    if (!order_.empty()) {
      span_ = trace.events[order_.back()].ts - trace.events[order_.front()].ts + 1;
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (uint32_t i : order_)
        if (trace.events[i].has(kHasCorrelator)) {
          lo = std::min(lo, trace.events[i].correlator);
          hi = std::max(hi, trace.events[i].correlator);
        }
      if (hi >= lo) corr_range_ = hi - lo + 1;
    }
    total_ = order_.size() * o.repeat;
  }

  size_t total() const { return total_; }
  int64_t first_ts() const { return order_.empty() ? 0 : trace_.events[order_.front()].ts; }
  Event at(size_t g) const {
    const size_t per_copy = order_.size();
    Event e = trace_.events[order_[g % per_copy]];
    const auto r = static_cast<int64_t>(g / per_copy);
    e.ts += r * span_;
    if (e.has(kHasCorrelator)) e.correlator += r * corr_range_;
    return e;
  }

 private:
  const Trace& trace_;
  std::vector<uint32_t> order_;
  int64_t span_ = 1, corr_range_ = 1;
  size_t total_ = 0;
};

// One chunk as it goes on the wire: JSONL, or .snail blocks (one header per stream).
std::string encode_chunk(const Trace& chunk, const SendOptions& o, bool first) {
  if (o.jsonl) return to_jsonl(chunk);
  SnailWriteOptions w;
  w.events_per_block = static_cast<uint32_t>(std::max<size_t>(o.batch_events, 1));
  w.version = 1;  // a stream has no index: chunks are concatenated
  std::string bytes = to_snail(chunk, w);
  if (!first) bytes.erase(0, detail::snail::kHeaderSize);  // one header per stream
  return bytes;
}

// Sends the replay in chunks as their events become due.
void send_paced(Wire& fd, const Trace& trace, const Replay& replay, const SendOptions& o,
                Clock::time_point start, SendStats& stats) {
  const size_t total = replay.total();
  const int64_t t0 = replay.first_ts();
  auto due = [&](size_t i) { return send_due(o, start, replay.at(i).ts - t0, i); };
  Trace chunk;
  chunk.source = trace.source;
  // Names go with the first chunk: this producer's workers and every operator.
  for (const auto& [id, name] : trace.worker_names)
    if (selected(o, id)) chunk.worker_names.emplace(id, name);
  chunk.operator_names = trace.operator_names;
  bool first = true;
  size_t i = 0;
  while (i < total || first) {
    size_t j = i;
    const auto now = Clock::now();
    while (j < total && j - i < o.batch_events && due(j) <= now) ++j;
    if (j == i && i < total) {
      std::this_thread::sleep_until(std::min(due(i), now + std::chrono::milliseconds(50)));
      continue;
    }
    chunk.events.resize(j - i);
    for (size_t k = i; k < j; ++k) chunk.events[k - i] = replay.at(k);
    const std::string bytes = encode_chunk(chunk, o, first);
    write_all(fd, bytes, o.to);
    stats.bytes += bytes.size();
    stats.events += j - i;
    chunk.worker_names.clear();
    chunk.operator_names.clear();
    first = false;
    i = j;
  }
}

}  // namespace

std::chrono::steady_clock::time_point send_due(const SendOptions& o,
                                               std::chrono::steady_clock::time_point start,
                                               int64_t offset_ns, size_t i) {
  double s = 0;
  if (o.speed > 0) s = static_cast<double>(offset_ns) / 1e9 / o.speed;
  if (o.rate > 0) s = std::max(s, static_cast<double>(i) / o.rate);
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

SendStats send_trace(const Trace& trace, const SendOptions& o) {
  if (o.speed < 0 || o.rate < 0) throw std::invalid_argument("speed and rate must be positive");
  if (o.resume) throw std::invalid_argument("--resume applies to nats:// destinations only");
  const Replay replay(trace, o);
  Wire wire;
  wire.fd = connect_to(o.to, o.connect_timeout_s);
  if (!o.tls_ca.empty()) start_tls(wire, o.to, o.tls_ca);
  SendStats stats;
  const auto start = Clock::now();
  if (!o.token.empty()) write_all(wire, "Bearer " + o.token + "\n", o.to);
  send_paced(wire, trace, replay, o, start, stats);
  finish(wire, o.to);
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

TraceStream::TraceStream(std::string address, double connect_timeout_s)
    : address_(std::move(address)), fd_(connect_to(address_, connect_timeout_s)) {}

TraceStream::~TraceStream() {
  if (fd_ >= 0) ::close(fd_);
}

void TraceStream::send(const Trace& chunk) {
  if (fd_ < 0 || closed_) throw std::runtime_error("stream to " + address_ + " is closed");
  if (chunk.events.empty() && chunk.worker_names.empty() && chunk.operator_names.empty() && !first_)
    return;
  SnailWriteOptions w;
  w.version = 1;  // a stream has no index: chunks are concatenated
  std::string bytes = to_snail(chunk, w);
  if (!first_) bytes.erase(0, detail::snail::kHeaderSize);  // one header per stream
  write_all(fd_, bytes, address_);
  first_ = false;
  stats_.bytes += bytes.size();
  stats_.events += chunk.events.size();
}

void TraceStream::close() {
  if (fd_ < 0 || closed_) return;
  if (first_) send(Trace{});  // a stream with no events still has its header
  ::shutdown(fd_, SHUT_WR);
  char sink[256];
  while (::recv(fd_, sink, sizeof sink, 0) > 0) {
  }
  closed_ = true;
}

void TraceStream::interrupt() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace snailtrail::serve
