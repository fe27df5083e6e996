#include "serve/auth.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <httplib.h>

#include "serve/server.hpp"
#include "serve/tls.hpp"

namespace snailtrail::serve {

bool constant_time_equals(std::string_view a, std::string_view b) {
  // Every byte of the longer one is looked at; the difference is accumulated, never
  // branched on.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  // Read through a volatile so that the compiler cannot turn the loop into an early exit.
  volatile unsigned result = diff;
  return result == 0;
}

namespace {

// The tokens in force: the files' latest, else those given.
std::pair<std::string, std::string> current(const AuthTokens& t) {
  if (!t.files) return {t.write, t.read};
  std::lock_guard lock(t.files->mu);
  return {t.files->write, t.files->read};
}

std::atomic<bool> g_hangup{false};
extern "C" void on_hangup(int) {
  g_hangup = true;
}
struct sigaction g_old_hup {};

}  // namespace

bool AuthTokens::may_write(std::string_view presented) const {
  if (!enabled()) return true;
  const auto [w, r] = current(*this);
  return !w.empty() && !presented.empty() && constant_time_equals(presented, w);
}

bool AuthTokens::may_read(std::string_view presented) const {
  if (!enabled()) return true;
  if (presented.empty()) return false;
  const auto [write_token, read_token] = current(*this);
  // Both comparisons always run: which token matched is not observable by timing.
  const bool w = !write_token.empty() && constant_time_equals(presented, write_token);
  const bool r = !read_token.empty() && constant_time_equals(presented, read_token);
  return w || r;
}

void AuthTokens::reload() const {
  if (!files) return;
  // Both files are read before either token changes: a bad file changes nothing.
  std::string w = read_token_file(files->write_path, "--token-file");
  std::string r =
      files->read_path.empty() ? "" : read_token_file(files->read_path, "--read-token-file");
  std::lock_guard lock(files->mu);
  files->write = std::move(w);
  files->read = std::move(r);
}

AuthTokens load_token_files(const std::string& write_path, const std::string& read_path) {
  AuthTokens t;
  if (write_path.empty() && read_path.empty()) return t;
  t.files = std::make_shared<TokenFiles>();
  t.files->write_path = write_path;
  t.files->read_path = read_path;
  t.reload();
  t.write = t.files->write;
  t.read = t.files->read;
  return t;
}

ReloadSignal::ReloadSignal(std::string who) : who_(std::move(who)) {
  g_hangup = false;
  struct sigaction sa {};
  sa.sa_handler = on_hangup;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGHUP, &sa, &g_old_hup);
}

ReloadSignal::~ReloadSignal() {
  ::sigaction(SIGHUP, &g_old_hup, nullptr);
}

void ReloadSignal::poll(const AuthTokens& tokens, TlsCertificates* certs, bool log) {
  if (!g_hangup.exchange(false)) return;
  if (!tokens.files && !certs) {
    if (log) fmt::print(stderr, "{}: SIGHUP: no token files to re-read\n", who_);
    return;
  }
  // Always said when it fails: a rotation that did not happen must not pass unnoticed.
  if (tokens.files) {
    try {
      tokens.reload();
      if (log) fmt::print(stderr, "{}: SIGHUP: re-read the token files\n", who_);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "{}: SIGHUP: kept the previous tokens: {}\n", who_, e.what());
    }
  }
  if (certs) {
    try {
      certs->reload();
      if (log)
        fmt::print(stderr,
                   "{}: SIGHUP: re-read the certificate {} and the key {}: new connections "
                   "get them\n",
                   who_, certs->cert_path(), certs->key_path());
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}: SIGHUP: kept the previous certificate: {}\n", who_, e.what());
    }
  }
}

std::string read_token_file(const std::string& path, const char* option) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(std::string(option) + ": cannot read " + path + ": " +
                                std::strerror(errno));
  std::string text(kMaxTokenBytes + 2, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  const size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && blank(text.back())) text.pop_back();
  size_t start = 0;
  while (start < text.size() && blank(text[start])) ++start;
  text.erase(0, start);
  if (text.empty())
    throw std::invalid_argument(std::string(option) + ": " + path +
                                " holds no token on its first line");
  if (text.size() > kMaxTokenBytes)
    throw std::invalid_argument(std::string(option) + ": the token in " + path +
                                " is longer than 4096 bytes");
  for (char c : text)
    if (c < 0x21 || c > 0x7e)
      throw std::invalid_argument(std::string(option) + ": the token in " + path +
                                  " holds a byte that is not printable ASCII (no spaces)");
  return text;
}

std::string_view bearer_token(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r'))
    v.remove_suffix(1);
  // The scheme is case-insensitive (RFC 7235).
  constexpr std::string_view scheme = "bearer ";
  if (v.size() <= scheme.size()) return {};
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(v[i])) != scheme[i]) return {};
  v.remove_prefix(scheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v;
}

bool authorize_http(const AuthTokens& tokens, const httplib::Request& req, httplib::Response& res,
                    bool write) {
  if (!tokens.enabled()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string_view token = bearer_token(header);
  if (write ? tokens.may_write(token) : tokens.may_read(token)) return true;
  res.status = 401;
  res.set_header("Connection", "close");  // an unread body must not be taken for a request
  res.set_header("WWW-Authenticate",
                 write ? "Bearer realm=\"snailtrail ingest\"" : "Bearer realm=\"snailtrail\"");
  res.set_content(token.empty() ? "{\"error\":\"a bearer token is required\"}\n"
                                : "{\"error\":\"the bearer token is not accepted here\"}\n",
                  "application/json");
  return false;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

void check_exposure(const std::vector<ListenerSpec>& listeners, bool has_token, bool insecure) {
  if (insecure) return;
  for (const ListenerSpec& l : listeners) {
    const std::string host = parse_address(l.address).first;
    if (is_loopback_host(host)) continue;
    if (l.tls && has_token) continue;
    std::string missing;
    if (!l.tls) missing = "TLS";
    if (!has_token) missing += missing.empty() ? "a token" : " and a token";
    const std::string how = "give --tls-cert FILE --tls-key FILE and --token-file FILE";
    throw std::invalid_argument(l.flag + " " + l.address +
                                " listens beyond this host (not loopback) without " + missing +
                                ": anyone who reaches it could send or read traces; " + how +
                                ", or --insecure if you mean it (docs/SERVE.md, \"Running "
                                "across hosts\")");
  }
}

}  // namespace snailtrail::serve
