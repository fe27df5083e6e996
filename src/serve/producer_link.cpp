#include "serve/producer_link.hpp"

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
#include <stdexcept>
#include <thread>

#include "serve/server.hpp"

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

std::string tls_error() {
  std::string reason;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    if (reason.empty()) reason = text;
  }
  return reason.empty() ? std::string("the connection was closed") : reason;
}

void write_plain(int fd, std::string_view data, const std::string& address,
                 const std::string& hint) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("connection to " + address + " broke: " + std::strerror(errno) +
                               (errno == ECONNRESET || errno == EPIPE ? hint : ""));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

bool strip_tls_scheme(std::string& address) {
  constexpr std::string_view scheme = "tls://";
  if (address.compare(0, scheme.size(), scheme) != 0) return false;
  address.erase(0, scheme.size());
  return true;
}

ProducerLink::ProducerLink(const std::string& given, double connect_timeout_s,
                           const ClientAuth& auth)
    : address_(given),
      // Why a server would cut a producer off at once (docs/SERVE.md, "Running across hosts").
      refused_hint_(" (a token the server refuses, " + auth.token_flag + ", or a TLS port, " +
                    auth.ca_flag + "?)") {
  const bool tls = strip_tls_scheme(address_) || !auth.tls_ca.empty();
  const std::string& address = address_;
  try {
    // The CA file is read before connecting: a bad file is the user's error, not the net's.
    if (tls) {
      std::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(): a closed peer is an error
      ERR_clear_error();
      ctx_ = SSL_CTX_new(TLS_client_method());
      if (!ctx_) throw std::runtime_error("cannot create a TLS context: " + tls_error());
      SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
      if (auth.tls_ca.empty()) {
        // As browsers and curl do: the CAs the system trusts (Debian: /etc/ssl/certs).
        if (SSL_CTX_set_default_verify_paths(ctx_) != 1)
          throw std::runtime_error("cannot load the system's CA certificates: " + tls_error());
      } else if (SSL_CTX_load_verify_locations(ctx_, auth.tls_ca.c_str(), nullptr) != 1) {
        throw std::invalid_argument(auth.ca_flag + ": cannot read the CA certificates in " +
                                    auth.tls_ca + ": " + tls_error());
      }
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    }
    fd_ = connect_to(address, connect_timeout_s);
    if (ctx_) {
      ssl_ = SSL_new(ctx_);
      if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1)
        throw std::runtime_error("cannot start TLS to " + address + ": " + tls_error());
      // The certificate must name the host we asked for: an IP address, or a name (also
      // sent as SNI).
      const std::string host = parse_address(address).first;
      if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str()) != 1) {
        SSL_set_hostflags(ssl_, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        SSL_set1_host(ssl_, host.c_str());
        SSL_set_tlsext_host_name(ssl_, host.c_str());
      }
      if (SSL_connect(ssl_) != 1) {
        const long verify = SSL_get_verify_result(ssl_);
        std::string why = verify != X509_V_OK
                              ? std::string("the server's certificate is not trusted: ") +
                                    X509_verify_cert_error_string(verify)
                              : tls_error();
        if (verify != X509_V_OK && auth.tls_ca.empty())
          why += " (checked against the system's CA store; a private CA needs " + auth.ca_flag +
                 " FILE)";
        throw std::runtime_error("cannot connect to " + address + " over TLS: " + why);
      }
    }
    if (!auth.token.empty()) write("Bearer " + auth.token + "\n");
  } catch (...) {
    release();  // the destructor does not run for a constructor that threw
    throw;
  }
}

ProducerLink::~ProducerLink() {
  release();
}

void ProducerLink::release() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
  ssl_ = nullptr;
  ctx_ = nullptr;
  fd_ = -1;
}

void ProducerLink::write(std::string_view data) {
  if (!ssl_) return write_plain(fd_, data, address_, refused_hint_);
  while (!data.empty()) {
    const int n =
        SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
    if (n <= 0)
      throw std::runtime_error("connection to " + address_ + " broke: " + tls_error() +
                               refused_hint_);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// serve never writes on a producer's connection: bytes back (a TLS alert) or a reset (a
// connection closed with unread input: a refused token, a failed TLS handshake) mean the
// stream was not taken.
void ProducerLink::finish() {
  if (ssl_) SSL_shutdown(ssl_);  // close_notify: the end of the stream, not a cut
  ::shutdown(fd_, SHUT_WR);
  char sink[256];
  if (ssl_) {
    errno = 0;
    int n;
    while ((n = SSL_read(ssl_, sink, sizeof sink)) > 0) {
    }
    const int err = SSL_get_error(ssl_, n);
    const bool reset = err == SSL_ERROR_SYSCALL && errno == ECONNRESET;
    ERR_clear_error();
    if (reset)
      throw std::runtime_error("the server at " + address_ +
                               " did not take the stream (connection reset)" + refused_hint_);
    return;
  }
  bool answered = false;
  ssize_t n;
  while ((n = ::recv(fd_, sink, sizeof sink, 0)) > 0 || (n < 0 && errno == EINTR))
    answered |= n > 0;
  if (n < 0 || answered)
    throw std::runtime_error(
        "the server at " + address_ + " did not take the stream (" +
        (answered ? std::string("it answered with bytes") : std::strerror(errno)) + ")" +
        refused_hint_);
}

void ProducerLink::interrupt() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace snailtrail::serve
