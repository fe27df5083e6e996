// The TLS and token helpers of the serve tests (issue 40): certificates made with the
// `openssl` command, GETs with a bearer token over HTTP or verified HTTPS, and a metric's
// value from /metrics. Everything stays on 127.0.0.1.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "process_util.hpp"

namespace snailtrail::testing {

// A self-signed certificate for 127.0.0.1 (its own CA) and its key, in `dir`. `days` < 0
// makes one whose notAfter is that many days in the past (expired; notBefore is now).
inline void make_certificate(const std::filesystem::path& dir, const std::string& cert = "cert.pem",
                             const std::string& key = "key.pem", int days = 1) {
  const std::string log = (dir / "openssl.log").string();
  const std::string subject = "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 ";
  std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes " + subject + "-days " +
                    std::to_string(days > 0 ? days : 1) + " -keyout " + (dir / key).string() +
                    " -out " + (dir / cert).string() + " >" + log + " 2>&1";
  // `req -x509` takes no negative -days in OpenSSL 3.0; `x509 -signkey` re-signs the same
  // certificate (extensions kept) with its end that many days before now.
  if (days < 0)
    cmd += " && openssl x509 -in " + (dir / cert).string() + " -signkey " + (dir / key).string() +
           " -days " + std::to_string(days) + " -out " + (dir / cert).string() + " >>" + log +
           " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(log);
}

// A CA `name`.pem (key `name`-key.pem) and a certificate for 127.0.0.1 it signed, in `dir`
// (P-256 keys: quick to make and to handshake with, for the reload and load tests).
inline void make_ca(const std::filesystem::path& dir, const std::string& name) {
  const std::string log = (dir / "openssl.log").string();
  const std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
      "-nodes -subj /CN=snailtrail-test-" +
      name + " -days 1 -keyout " + (dir / (name + "-key.pem")).string() + " -out " +
      (dir / (name + ".pem")).string() + " >>" + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(log);
}
inline void make_signed_certificate(const std::filesystem::path& dir, const std::string& ca,
                                    const std::string& cert, const std::string& key) {
  const std::string log = (dir / "openssl.log").string();
  const std::string ext = (dir / "san.ext").string();
  const std::string csr = (dir / (cert + ".csr")).string();
  const std::string d = dir.string() + "/";
  {
    FILE* f = std::fopen(ext.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("subjectAltName=IP:127.0.0.1\n", f);
    std::fclose(f);
  }
  const std::string cmd =
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 "
      "-keyout " +
      d + key + " -out " + csr + " >>" + log + " 2>&1 && openssl x509 -req -in " + csr + " -CA " +
      d + ca + ".pem -CAkey " + d + ca + "-key.pem -CAcreateserial -days 1 -extfile " + ext +
      " -out " + d + cert + " >>" + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(log);
}

// An answer to a GET: the status (-1: no answer), the body and WWW-Authenticate.
struct HttpAnswer {
  int status = -1;
  std::string body, authenticate;
};

// A GET with an optional bearer token (httplib::Client or SSLClient).
template <class Client>
HttpAnswer get_with_token(Client& client, const std::string& target, const std::string& token) {
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  HttpAnswer a;
  if (auto res = client.Get(target.c_str(), headers)) {
    a.status = res->status;
    a.body = res->body;
    a.authenticate = res->get_header_value("WWW-Authenticate");
  }
  return a;
}
inline HttpAnswer plain_get(int port, const std::string& target, const std::string& token = "") {
  httplib::Client client("127.0.0.1", port);
  return get_with_token(client, target, token);
}
// Over HTTPS, verifying the server's certificate against `ca`.
inline HttpAnswer https_get(int port, const std::string& target, const std::filesystem::path& ca,
                            const std::string& token = "") {
  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path(ca.c_str());
  client.enable_server_certificate_verification(true);
  return get_with_token(client, target, token);
}

// The value of a counter in a /metrics text (a failure when it is not there).
inline uint64_t metric_value(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no metric " << name;
    return 0;
  }
  return std::stoull(text.substr(at + name.size() + 2));
}

}  // namespace snailtrail::testing
