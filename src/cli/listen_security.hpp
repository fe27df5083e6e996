// Who may reach a listening command (docs/SERVE.md, "Running across hosts"): the flags
// --token-file, --read-token-file, --tls-cert, --tls-key and --insecure, shared by `serve`
// and `run --http`, and what they load.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "serve/auth.hpp"

namespace snailtrail::serve {
class TlsCertificates;
}

namespace snailtrail::cli {

struct SecurityArgs {
  std::string token_file, read_token_file, tls_cert, tls_key;
  bool insecure = false;
};

// Registers the five flags; `where` names the listeners they protect, for the help;
// `ingest`: serve's (TCP streams, a token that ingests, SIGHUP), not only a dashboard.
void add_security_options(CLI::App* cmd, SecurityArgs& a, const std::string& where, bool ingest);

// The tokens (re-read on SIGHUP by serve) and the TLS files, checked for what goes
// together (std::invalid_argument otherwise). The non-loopback check is the listener's
// (serve::check_exposure).
struct ListenSecurity {
  serve::AuthTokens auth;
  std::string tls_cert, tls_key;  // both or neither
  bool insecure = false;
};
ListenSecurity load_security(const SecurityArgs& a);

}  // namespace snailtrail::cli
