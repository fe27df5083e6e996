// TLS for serve's listeners (docs/SERVE.md, "Running across hosts"): an OpenSSL server
// context from PEM files, with errors that name the file, and the certificate reloaded on
// SIGHUP without closing established connections.
#pragma once

#include <memory>
#include <mutex>
#include <string>

struct ssl_ctx_st;
struct ssl_st;

namespace snailtrail::serve {

struct TlsContextFree {
  void operator()(ssl_ctx_st* ctx) const;
};
using TlsContext = std::unique_ptr<ssl_ctx_st, TlsContextFree>;

// A server context (TLS 1.2 or later) with the certificate chain in `cert_path` and the
// private key in `key_path`. Throws std::invalid_argument naming the file and the reason
// when a file cannot be read, is not PEM, or the key does not match the certificate.
TlsContext server_tls_context(const std::string& cert_path, const std::string& key_path);

// The certificate and key of serve's TLS listeners (--tls-cert/--tls-key), re-read on
// SIGHUP. Every context made or configured here picks the latest certificate at each
// handshake (OpenSSL's certificate callback), so new connections get a reloaded one and
// established ones keep theirs. Shared by the listeners of a process; it must outlive
// their contexts.
class TlsCertificates {
 public:
  // Loads the files; throws std::invalid_argument as server_tls_context does.
  TlsCertificates(std::string cert_path, std::string key_path);
  TlsCertificates(const TlsCertificates&) = delete;
  TlsCertificates& operator=(const TlsCertificates&) = delete;
  // Re-reads both files. A bad pair (unreadable, not PEM, a key that does not match)
  // throws std::invalid_argument naming the file, and the certificate in force stays.
  void reload();
  // A server context presenting the latest certificate.
  TlsContext server_context();
  // The same for a context made elsewhere (cpp-httplib's SSLServer).
  void configure(ssl_ctx_st* ctx);
  const std::string& cert_path() const { return cert_path_; }
  const std::string& key_path() const { return key_path_; }

 private:
  static int on_handshake(ssl_st* ssl, void* self);
  std::shared_ptr<ssl_ctx_st> latest() const;

  std::string cert_path_, key_path_;
  mutable std::mutex mu_;
  std::shared_ptr<ssl_ctx_st> loaded_;  // guarded by mu_: the latest good pair, as a context
};

}  // namespace snailtrail::serve
