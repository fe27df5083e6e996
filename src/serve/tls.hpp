// TLS for serve's listeners (docs/SERVE.md, "Running across hosts"): an OpenSSL server
// context from PEM files, with errors that name the file.
#pragma once

#include <memory>
#include <string>

struct ssl_ctx_st;

namespace snailtrail::serve {

struct TlsContextFree {
  void operator()(ssl_ctx_st* ctx) const;
};
using TlsContext = std::unique_ptr<ssl_ctx_st, TlsContextFree>;

// A server context (TLS 1.2 or later) with the certificate chain in `cert_path` and the
// private key in `key_path`. Throws std::invalid_argument naming the file and the reason
// when a file cannot be read, is not PEM, or the key does not match the certificate.
TlsContext server_tls_context(const std::string& cert_path, const std::string& key_path);

}  // namespace snailtrail::serve
