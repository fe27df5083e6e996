#include "scale/serve_source.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "scale/ds2_files.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::scale {

ServeUrl serve_url(const std::string& url, bool has_ca) {
  ServeUrl u;
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  u.https = rest.rfind("https://", 0) == 0;
  if (u.https) rest = rest.substr(8);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? "" : rest.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? "" : rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = 0;
  for (char c : port_text)
    port = c >= '0' && c <= '9' && port <= 65535 ? port * 10 + (c - '0') : 100000;
  if (url.find("://") != std::string::npos && url.rfind("http://", 0) != 0 && !u.https)
    throw UsageError(
        {field("serve"), ": only http:// and https:// URLs of snailtrail serve are supported"});
  if (host.empty() || port_text.empty() || port < 1 || port > 65535 ||
      host.find('/') != std::string::npos)
    throw UsageError(
        {field("serve"), ": expected http://HOST:PORT or https://HOST:PORT, got \"" + url + "\""});
  // Over TLS the server is verified (its certificate must name the host; without --tls-ca
  // against the system's CA store) and nothing can be read on the way, so it may be on
  // another host; plain HTTP stays on this one.
  if (!u.https && has_ca)
    throw UsageError({field("tls_ca"), " needs an https:// URL for ", field("serve")});
  const bool loopback = host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
  if (!loopback && !u.https)
    throw UsageError({field("serve"),
                      ": only loopback addresses (127.0.0.1, localhost, ::1) are allowed over "
                      "http://, got \"" +
                          host + "\" (another host: https:// with --tls-ca)"});
  u.host = host;
  u.port = port;
  return u;
}

namespace {

// What a failed request means, in words.
std::string request_error(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection refused";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
    case httplib::Error::Write:
      return "connection closed";
    default:
      return httplib::to_string(e);
  }
}

bool same_dataflow(const Topology& x, const Topology& y) {
  return x.names == y.names && x.ids == y.ids && x.edges == y.edges;
}

}  // namespace

ServeSource::ServeSource(const std::string& url, ServeSourceOptions options)
    : opt_(std::move(options)) {
  const ServeUrl u = serve_url(url, !opt_.tls_ca.empty());
  const std::string base =
      fmt::format("{}://{}:{}", u.https ? "https" : "http",
                  u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host, u.port);
  where_ = "serve at " + base;
  if (!opt_.tls_ca.empty()) {
    // httplib would only say that verification failed: name an unreadable file here.
    std::FILE* f = std::fopen(opt_.tls_ca.c_str(), "rb");
    if (!f)
      throw UsageError(
          {field("tls_ca"), ": cannot read " + opt_.tls_ca + ": " + std::strerror(errno)});
    std::fclose(f);
  }
  file_topology_ = !opt_.topology_file.empty();
  if (file_topology_) {
    topology_ = read_topology_csv(opt_.topology_file);
    try {
      topology_.topological_order();
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("{}: {}", where_, e.what()));
    }
    started_ = true;
  }
  client_ = std::make_unique<httplib::Client>(base);
  if (u.https) {
    // Without --tls-ca, httplib verifies against the system's store (OpenSSL's default paths).
    if (!opt_.tls_ca.empty()) client_->set_ca_cert_path(opt_.tls_ca);
    client_->enable_server_certificate_verification(true);  // the chain and the host name
  }
  if (!opt_.token.empty()) client_->set_bearer_token_auth(opt_.token);
  client_->set_connection_timeout(2);
  client_->set_read_timeout(10);
  start_ = last_new_ = std::chrono::steady_clock::now();
}

ServeSource::~ServeSource() = default;

// GET /api/rates?since=...: the new intervals go to pending_.
bool ServeSource::fetch() {
  if (fetched_) {
    const auto now = std::chrono::steady_clock::now();
    if (opt_.wall_ns > 0 && now - start_ >= std::chrono::nanoseconds(opt_.wall_ns)) return false;
    if (opt_.idle_ns > 0 && now - last_new_ >= std::chrono::nanoseconds(opt_.idle_ns)) {
      if (!opt_.quiet)
        fmt::print(stderr, "snailtrail: no new interval from {} for {}; stopping\n", where_,
                   opt_.idle_text);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::nanoseconds(opt_.poll_ns));
  }
  fetched_ = true;
  const std::string target =
      since_ == INT64_MIN ? "/api/rates" : fmt::format("/api/rates?since={}", since_);
  httplib::Result res = client_->Get(target);
  if (!res && res.error() == httplib::Error::SSLServerVerification) {
    const long v = client_->get_openssl_verify_result();
    throw std::runtime_error(
        fmt::format("cannot reach {}: the server's certificate is not trusted: {} ({})", where_,
                    v != X509_V_OK ? X509_verify_cert_error_string(v) : "hostname mismatch",
                    opt_.tls_ca.empty()
                        ? "checked against the system's CA store; a private CA needs --tls-ca FILE"
                        : "--tls-ca " + opt_.tls_ca));
  }
  if (!res) {
    if (!reached_)
      throw std::runtime_error(
          fmt::format("cannot reach {} ({})", where_, request_error(res.error())));
    if (!opt_.quiet)
      fmt::print(stderr, "snailtrail: {} went away ({}); stopping after {} intervals\n", where_,
                 request_error(res.error()), seen_);
    return false;
  }
  if (res->status == 401)
    throw std::runtime_error(fmt::format(
        "{}: GET {} answered HTTP 401: {} (serve --token-file or --read-token-file)", where_,
        target,
        opt_.token.empty() ? "it needs a token, give --token-file" : "it refuses the token"));
  if (res->status != 200)
    throw std::runtime_error(
        fmt::format("{}: GET {} answered HTTP {} (is it snailtrail serve with --http?)", where_,
                    target, res->status));
  reached_ = true;
  try {
    page_ = parse_rates_page(res->body);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: {}", where_, e.what()));  // not a usage error
  }
  if (opt_.interval_ns > 0 && page_.interval_ns != opt_.interval_ns)
    throw UsageError({field("interval"),
                      fmt::format(" {} differs from the rate interval of {} ({} s): start serve "
                                  "with ",
                                  opt_.interval_text, where_, page_.interval_ns / 1e9),
                      field("rate_interval"), " " + opt_.interval_text + " or leave out ",
                      field("interval")});
  for (RatesPage::Interval& in : page_.intervals) pending_.push_back(std::move(in));
  page_.intervals.clear();
  return true;
}

// Operators of the stream matched to the file's by name, else by id.
IntervalRates ServeSource::file_rates(const RatesPage::Interval& in) {
  IntervalMetrics m{in.metrics.start_ns, in.metrics.end_ns, {}};
  for (size_t i = 0; i < in.metrics.instances.size(); ++i) {
    auto op = topology_.find_name(in.operator_names[i]);
    if (!op) op = topology_.find_id(std::to_string(in.metrics.instances[i].op));
    if (!op) {
      if (unmapped_++ == 0 && !opt_.quiet)
        fmt::print(stderr, "snailtrail: operator '{}' of the stream is not in {}: ignored\n",
                   in.operator_names[i], opt_.topology_file);
      continue;
    }
    m.instances.push_back(in.metrics.instances[i]);
    m.instances.back().op = *op;
  }
  return interval_rates_by_index(m, topology_);
}

// The interval for the controller, or none (seen before, or no topology yet).
std::optional<SourceInterval> ServeSource::interval(const RatesPage::Interval& in) {
  if (in.epoch <= last_epoch_) return std::nullopt;
  if (last_epoch_ >= 0 && in.epoch > last_epoch_ + 1 && !opt_.quiet)
    fmt::print(stderr, "snailtrail: missed intervals {}-{} (serve --retain is too small)\n",
               last_epoch_ + 1, in.epoch - 1);
  last_epoch_ = in.epoch;
  since_ = in.metrics.start_ns + 1;
  ++seen_;
  last_new_ = std::chrono::steady_clock::now();
  IntervalRates r;
  if (file_topology_) {
    r = file_rates(in);
  } else {
    if (!started_ || !same_dataflow(topology_, page_.topology)) {
      if (started_ && !opt_.quiet)
        fmt::print(stderr,
                   "snailtrail: the stream revealed a new operator or edge: the manager "
                   "starts over\n");
      topology_ = page_.topology;
      if (topology_.size() == 0) return std::nullopt;
      try {
        topology_.topological_order();
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", where_, e.what()));
      }
      started_ = restarted_ = true;
    }
    r = interval_rates(in.metrics, topology_);
  }
  SourceInterval out;
  out.epoch = in.epoch;
  out.observation.time_s = static_cast<double>(in.metrics.end_ns - page_.first_event_ns) * 1e-9;
  out.observation.rates = std::move(r.instances);
  out.observation.parallelism = std::move(r.parallelism);
  out.instances = in.metrics.instances.size();
  return out;
}

std::optional<SourceInterval> ServeSource::next() {
  while (true) {
    while (!pending_.empty()) {
      RatesPage::Interval in = std::move(pending_.front());
      pending_.pop_front();
      if (std::optional<SourceInterval> out = interval(in)) return out;
    }
    if (!fetch()) return std::nullopt;
  }
}

}  // namespace snailtrail::scale
