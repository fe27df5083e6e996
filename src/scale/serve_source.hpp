// The DS2 rates of a running `snailtrail serve` as an observation source
// (scale/control_loop.hpp; docs/AUTOSCALING.md "Following snailtrail serve"): polls its
// GET /api/rates?since=... (on a loopback address, or over verified TLS) and delivers every new
// interval in order. The topology is the one serve learned from the stream (a change restarts the
// controller) or a DS2 topology file's, to which the stream's operators are matched by
// name, else by id.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "scale/control_loop.hpp"
#include "scale/rates_json.hpp"

namespace httplib {
class Client;
}

namespace snailtrail::scale {

// "http://HOST:PORT" (or "HOST:PORT", optionally ending in "/") of a loopback address, or
// "https://HOST:PORT" of any host (verified with the CA file, or without one
// against the system's CA store; docs/SERVE.md "Running across hosts"); throws UsageError
// (naming --serve or --tls-ca) otherwise, and when a CA file (`has_ca`) comes with http://.
struct ServeUrl {
  bool https = false;
  std::string host;
  int port = 0;
};
ServeUrl serve_url(const std::string& url, bool has_ca);

struct ServeSourceOptions {
  int64_t poll_ns = 1'000'000'000;  // between two requests
  int64_t idle_ns = 0;              // end after this long without a new interval (0: never)
  std::string idle_text;            // ... as given (--idle-exit), for the message
  int64_t wall_ns = 0;              // end after this much wall time (0: never)
  int64_t interval_ns = 0;          // if > 0, serve's rate interval must be this
  std::string interval_text;        // ... as given (--interval), for the error
  std::string topology_file;        // a DS2 topology CSV instead of serve's topology
  bool quiet = false;               // no lines on stderr
  std::string token;                // sent as Authorization: Bearer (serve --token-file)
  std::string tls_ca;               // https://: the CA certificate(s) to verify serve with
};

class ServeSource : public ObservationSource {
 public:
  ServeSource(const std::string& url, ServeSourceOptions options);
  ~ServeSource() override;
  const Topology& topology() const override { return topology_; }
  std::optional<SourceInterval> next() override;
  bool restarted() override { return std::exchange(restarted_, false); }
  bool live() const override { return true; }

 private:
  bool fetch();  // one request; false: the source ended
  std::optional<SourceInterval> interval(const RatesPage::Interval& in);
  IntervalRates file_rates(const RatesPage::Interval& in);

  ServeSourceOptions opt_;
  std::string where_;
  std::unique_ptr<httplib::Client> client_;
  Topology topology_;
  bool file_topology_ = false, started_ = false, restarted_ = false;
  bool reached_ = false, fetched_ = false;
  RatesPage page_;  // the latest page (its topology and first event)
  std::deque<RatesPage::Interval> pending_;
  int64_t since_ = INT64_MIN, last_epoch_ = -1;
  uint64_t seen_ = 0, unmapped_ = 0;
  std::chrono::steady_clock::time_point start_, last_new_;
};

}  // namespace snailtrail::scale
