// Who may send and who may read (docs/SERVE.md, "Running across hosts"): bearer tokens
// read from files, compared in constant time, and the check that refuses to listen on a
// non-loopback address without TLS and a token unless --insecure says so.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace snailtrail::serve {

// The token files of a server, re-read on SIGHUP (rotation without a restart): the
// tokens now in force, shared by every listener's copy of AuthTokens.
struct TokenFiles {
  std::string write_path, read_path;  // read_path empty: no read token
  std::mutex mu;
  std::string write, read;  // guarded by mu
};

// Tokens of a server; empty: none configured (everything open, as before).
struct AuthTokens {
  std::string write;  // ingest (TCP, OTLP) and the API
  std::string read;   // the API only; empty: only `write` reads
  // From files (load_token_files): the tokens in force are the files' latest, not the
  // two above (which stay those read at start, for enabled()).
  std::shared_ptr<TokenFiles> files = nullptr;
  bool enabled() const { return !write.empty() || !read.empty(); }
  // A token presented for reading (the write token reads too) / for ingest.
  bool may_read(std::string_view presented) const;
  bool may_write(std::string_view presented) const;
  // Re-reads the token files (no-op without files). A file that is no longer valid
  // throws std::invalid_argument naming it, and the tokens in force stay.
  void reload() const;
};

// The tokens in `write_path` (--token-file) and `read_path` (--read-token-file, may be
// empty), kept with their files for reload().
AuthTokens load_token_files(const std::string& write_path, const std::string& read_path);

class TlsCertificates;

// SIGHUP asks serve to re-read its token files and its TLS certificate: install the
// handler (the previous one is restored on destruction), and, from the server's loops,
// reload when it was asked (logging the outcome, never a token). `certs` may be null (no
// TLS). A file that fails keeps what was in force and is always logged.
struct ReloadSignal {
  explicit ReloadSignal(std::string who = "snailtrail serve");  // who_: the log lines' prefix
  ~ReloadSignal();
  ReloadSignal(const ReloadSignal&) = delete;
  ReloadSignal& operator=(const ReloadSignal&) = delete;
  void poll(const AuthTokens& tokens, TlsCertificates* certs, bool log);

 private:
  std::string who_;
};

// Equal strings, in a time that depends on their lengths only, never on where they
// differ (a timing side channel would reveal a token byte by byte).
bool constant_time_equals(std::string_view a, std::string_view b);

// The token in FILE: its first line, without the line end and surrounding blanks.
// Throws std::invalid_argument naming `option` and the file when it cannot be read, is
// empty, holds bytes outside printable ASCII, or is longer than kMaxTokenBytes.
constexpr size_t kMaxTokenBytes = 4096;
std::string read_token_file(const std::string& path, const char* option);

// The token of an `Authorization: Bearer TOKEN` header value; empty when it is not one.
std::string_view bearer_token(std::string_view header_value);

// An HTTP request's right: true when `tokens` allow it (to ingest when `write`, else to
// read); otherwise answers 401 with `WWW-Authenticate: Bearer` and returns false.
bool authorize_http(const AuthTokens& tokens, const httplib::Request& req, httplib::Response& res,
                    bool write);

// 127.0.0.0/8, ::1, localhost (names are not resolved: anything else counts as exposed).
bool is_loopback_host(const std::string& host);

// What the listeners need for a non-loopback bind. Throws std::invalid_argument (exit 2)
// naming the address, what is missing and the flags, unless every exposed listener has
// what it needs or `insecure`. `listeners`: (flag, "host:port", has TLS).
struct ListenerSpec {
  std::string flag;     // "--tcp", "--http", "--otlp"
  std::string address;  // host:port
  bool tls = false;
};
void check_exposure(const std::vector<ListenerSpec>& listeners, bool has_token, bool insecure);

}  // namespace snailtrail::serve
