#include "serve/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace snailtrail::serve {
namespace {

// OpenSSL's reason for the last failure (and clears its error queue).
std::string openssl_reason() {
  std::string reason;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    if (reason.empty()) reason = text;
  }
  return reason.empty() ? "unknown OpenSSL error" : reason;
}

void check_readable(const std::string& path, const char* option) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw std::invalid_argument(std::string(option) + ": cannot read " + path + ": " +
                                std::strerror(errno));
  std::fclose(f);
}

}  // namespace

void TlsContextFree::operator()(ssl_ctx_st* ctx) const {
  SSL_CTX_free(ctx);
}

TlsContext server_tls_context(const std::string& cert_path, const std::string& key_path) {
  check_readable(cert_path, "--tls-cert");
  check_readable(key_path, "--tls-key");
  ERR_clear_error();
  TlsContext ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) throw std::runtime_error("cannot create a TLS context: " + openssl_reason());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // Writes from the event loop's buffers may be partial and resumed from a moved buffer.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_path.c_str()) != 1)
    throw std::invalid_argument("--tls-cert: " + cert_path +
                                " is not a PEM certificate: " + openssl_reason());
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
      throw std::invalid_argument("--tls-key: the key in " + key_path +
                                  " does not match the certificate in " + cert_path);
    throw std::invalid_argument(
        "--tls-key: " + key_path +
        " is not a PEM private key (without a passphrase): " + openssl_reason());
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    throw std::invalid_argument("--tls-key: the key in " + key_path +
                                " does not match the certificate in " + cert_path + ": " +
                                openssl_reason());
  return ctx;
}

TlsCertificates::TlsCertificates(std::string cert_path, std::string key_path)
    : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {
  reload();
}

void TlsCertificates::reload() {
  // Loaded and checked whole before it replaces anything: a bad pair changes nothing.
  std::shared_ptr<ssl_ctx_st> fresh(server_tls_context(cert_path_, key_path_).release(),
                                    TlsContextFree{});
  std::lock_guard lock(mu_);
  loaded_ = std::move(fresh);
}

std::shared_ptr<ssl_ctx_st> TlsCertificates::latest() const {
  std::lock_guard lock(mu_);
  return loaded_;
}

namespace {

// Puts the certificate, chain and key of `from` on a context or a connection.
template <class Target, class Use>
bool use_pair(ssl_ctx_st* from, Target* to, Use use) {
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(from, &chain);
  return use(to, SSL_CTX_get0_certificate(from), SSL_CTX_get0_privatekey(from), chain, 1) == 1;
}

}  // namespace

int TlsCertificates::on_handshake(ssl_st* ssl, void* self) {
  // Each connection holds its own references: a reload never touches it once chosen.
  const std::shared_ptr<ssl_ctx_st> pair = static_cast<TlsCertificates*>(self)->latest();
  return use_pair(pair.get(), ssl, SSL_use_cert_and_key) ? 1 : 0;
}

void TlsCertificates::configure(ssl_ctx_st* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (!use_pair(latest().get(), ctx, SSL_CTX_use_cert_and_key))
    throw std::runtime_error("cannot set up TLS with " + cert_path_ + ": " + openssl_reason());
  SSL_CTX_set_cert_cb(ctx, &TlsCertificates::on_handshake, this);
}

TlsContext TlsCertificates::server_context() {
  ERR_clear_error();
  TlsContext ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) throw std::runtime_error("cannot create a TLS context: " + openssl_reason());
  // Writes from the event loop's buffers may be partial and resumed from a moved buffer.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  configure(ctx.get());
  return ctx;
}

}  // namespace snailtrail::serve
