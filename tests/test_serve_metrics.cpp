// CP per worker and per operator in serve's /metrics (Prometheus text format), scraped
// over loopback: the gauges equal the latest window's CP in /api/summary/latest, and the
// label sets stay bounded (the 16 most critical, then "(other)" with the rest summed).
#include <gtest/gtest.h>
#include <httplib.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "http_test_util.hpp"
#include "process_util.hpp"
#include "serve/serve_state.hpp"

namespace snailtrail::test_serve_metrics {
namespace {

using testing::Process;

// The body of a 200 answer, else "".
std::string http_get(int port, const std::string& target) {
  int status = 0;
  std::string body = testing::http_get(port, target, &status);
  return status == 200 ? body : std::string();
}

// Values of one labeled gauge: label value -> value.
std::map<std::string, double> series(const std::string& text, const std::string& name,
                                     const std::string& label) {
  std::map<std::string, double> out;
  const std::string prefix = name + "{" + label + "=\"";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t close = line.find("\"} ", prefix.size());
    if (close == std::string::npos) continue;
    out[line.substr(prefix.size(), close - prefix.size())] = std::stod(line.substr(close + 3));
  }
  return out;
}

// 20 workers, each running its own operator, in 100 ms steps over 1 s: worker w is busy
// (w + 1) * 4 ms of each step and waits for the rest.
std::string twenty_workers() {
  std::string s;
  for (int w = 0; w < 20; ++w)
    s += "{\"meta\":\"worker\",\"id\":" + std::to_string(w) + ",\"name\":\"w" + std::to_string(w) +
         "\"}\n{\"meta\":\"operator\",\"id\":" + std::to_string(w + 1) + ",\"name\":\"op" +
         std::to_string(w + 1) + "\"}\n";
  auto ev = [&](int64_t ts, int w, const char* a, const char* e) {
    s += "{\"ts\":" + std::to_string(ts) + ",\"worker\":" + std::to_string(w) + ",\"activity\":\"" +
         a + "\",\"event\":\"" + e + "\",\"operator\":" + std::to_string(w + 1) + "}\n";
  };
  const int64_t step = 100'000'000;
  for (int k = 0; k < 10; ++k)
    for (int w = 0; w < 20; ++w) {
      const int64_t t = k * step, busy = (w + 1) * 4'000'000;
      ev(t, w, "processing", "start");
      ev(t + busy, w, "processing", "end");
      ev(t + busy, w, "waiting", "start");
      ev(t + step, w, "waiting", "end");
    }
  return s;
}

class ServeMetrics : public testing::TempDirTest {
 protected:
  ServeMetrics() : TempDirTest("serve-metrics") {}
};

TEST_F(ServeMetrics, CpPerWorkerAndOperatorBounded) {
  const std::string trace = path("trace.jsonl").string();
  std::ofstream(trace) << twenty_workers();
  Process server(
      {"serve", "--tcp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--window", "100ms", "--lateness",
       "1ms", "--idle-timeout", "200ms", "--port-file", path("ports").string(), "--quiet"},
      path("serve.out"), path("serve.err"));
  const int tcp = testing::wait_for_port(path("ports"), "tcp");
  const int http = testing::wait_for_port(path("ports"), "http");
  ASSERT_GT(http, 0) << server.err();
  Process producer({"send", trace, "--to", "127.0.0.1:" + std::to_string(tcp)}, path("send.out"),
                   path("send.err"));
  ASSERT_EQ(producer.wait(), 0) << producer.err();

  // Read /api/summary/latest, /metrics, /api/summary/latest until both reads name the
  // same window: then /metrics describes it.
  std::string metrics, latest;
  testing::wait_until([&] {
    const std::string before = http_get(http, "/api/summary/latest");
    metrics = http_get(http, "/metrics");
    latest = http_get(http, "/api/summary/latest");
    return !latest.empty() && before == latest &&
           metrics.find("snailtrail_latest_window_worker_cp{") != std::string::npos;
  });
  ASSERT_FALSE(latest.empty()) << server.err();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(latest).get(doc), simdjson::SUCCESS) << latest;

  for (const auto& [kind, label, name] :
       {std::tuple{"worker", "worker", "snailtrail_latest_window_worker_cp"},
        std::tuple{"operator", "operator", "snailtrail_latest_window_operator_cp"}}) {
    const auto got = series(metrics, name, label);
    // The oracle: the window's CP map, the 16 largest named and the rest summed.
    std::vector<std::pair<double, std::string>> truth;
    simdjson::dom::object map;
    ASSERT_EQ(doc[kind].get(map), simdjson::SUCCESS) << latest;
    for (auto [key, value] : map) truth.emplace_back(double(value), std::string(key));
    ASSERT_EQ(truth.size(), 20u) << kind;
    std::sort(truth.begin(), truth.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    EXPECT_EQ(got.size(), 17u) << kind << ": 16 named and (other)\n" << metrics;
    double rest = 0;
    for (size_t i = 0; i < truth.size(); ++i) {
      if (i < 16) {
        ASSERT_TRUE(got.count(truth[i].second)) << kind << " " << truth[i].second;
        EXPECT_NEAR(got.at(truth[i].second), truth[i].first, 1e-9) << truth[i].second;
      } else {
        rest += truth[i].first;
        EXPECT_FALSE(got.count(truth[i].second)) << truth[i].second << " is beyond the 16";
      }
    }
    ASSERT_TRUE(got.count("(other)"));
    EXPECT_NEAR(got.at("(other)"), rest, 1e-9);
    EXPECT_NE(metrics.find(std::string("# TYPE ") + name + " gauge"), std::string::npos);
  }
  server.signal(SIGTERM);
  server.wait();
}

// Label values must be UTF-8 (Prometheus text format): a name with invalid bytes from an
// untrusted trace gets U+FFFD per bad byte; valid multi-byte names and the escapes of
// backslash, quote and newline are kept. Hand-computed expectations.
TEST(PrometheusLabel, ValuesAreValidUtf8) {
  using serve::label_value;
  EXPECT_EQ(label_value("op \"a\"\\b\nc"), "op \\\"a\\\"\\\\b\\nc");
  EXPECT_EQ(label_value("\xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x90\x8c"),
            "\xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x90\x8c");
  EXPECT_EQ(label_value("a\xff"
                        "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(label_value("\xc3"), "\xef\xbf\xbd");                                  // cut sequence
  EXPECT_EQ(label_value("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  for (const std::string bad : {"\x80", "\xc0\xaf", "w\xfe\xfe", "\xf4\x90\x80\x80"}) {
    const std::string out = label_value(bad);
    EXPECT_TRUE(simdjson::validate_utf8(out.data(), out.size())) << out;
  }
}

}  // namespace
}  // namespace snailtrail::test_serve_metrics
