#include "cli/listen_security.hpp"

#include <stdexcept>

namespace snailtrail::cli {

void add_security_options(CLI::App* cmd, SecurityArgs& a, const std::string& where, bool ingest) {
  cmd->add_option("--token-file", a.token_file,
                  "Require the token in FILE (its first line) from every client of " + where +
                      ": HTTP requests send \"Authorization: Bearer TOKEN\" (401 otherwise)" +
                      (ingest ? ", TCP streams start with the line \"Bearer TOKEN\"" : "") +
                      "; /healthz stays open" + (ingest ? "; re-read on SIGHUP" : ""));
  cmd->add_option("--read-token-file", a.read_token_file,
                  std::string("A second token (its first line) that may only read") +
                      (ingest ? " the HTTP API and dashboard, not ingest" : "") +
                      "; needs --token-file");
  cmd->add_option("--tls-cert", a.tls_cert,
                  "TLS with this PEM certificate (chain) on " + where +
                      " (clients: --tls-ca, curl --cacert); needs --tls-key" +
                      (ingest ? "; both re-read on SIGHUP" : ""));
  cmd->add_option("--tls-key", a.tls_key, "The PEM private key of --tls-cert");
  cmd->add_flag("--insecure", a.insecure,
                "Allow listening on a non-loopback address without TLS and a token");
}

ListenSecurity load_security(const SecurityArgs& a) {
  if (!a.read_token_file.empty() && a.token_file.empty())
    throw std::invalid_argument("--read-token-file needs --token-file (the token that ingests)");
  if (a.tls_cert.empty() != a.tls_key.empty())
    throw std::invalid_argument("--tls-cert and --tls-key go together");
  ListenSecurity s;
  s.auth = serve::load_token_files(a.token_file, a.read_token_file);
  s.tls_cert = a.tls_cert;
  s.tls_key = a.tls_key;
  s.insecure = a.insecure;
  return s;
}

}  // namespace snailtrail::cli
