// A load generator for `serve --otlp` (scripts/otlp-bench.sh): THREADS keep-alive clients
// POST protobuf export requests of SPANS spans (traces of 10 spans over 3 services) to
// 127.0.0.1:PORT for SECONDS, at most RATE spans/s over all (0: as fast as answered). The
// bodies are encoded once, before the clock starts (256 per thread), and only their trace
// ids are rewritten before each request (every trace id is new), so the client spends
// its CPU on HTTP, not on encoding. Prints one JSON line: requests
// by status and spans sent in 200s.
//   snailtrail_otlp_load PORT SECONDS [THREADS=2] [SPANS=1000] [RATE=0]
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "otlp_builder.hpp"  // tests/: the tests' own protobuf encoder

namespace {

using snailtrail::testing::TestResource;
using snailtrail::testing::TestSpan;

constexpr int kSpansPerTrace = 10;
constexpr int kBodiesPerThread = 256;
// The high half of every trace id: a tag no span id contains, then the thread, then the
// round (bytes 2-5, patched before each request so that every trace id is new, as real
// traffic's are; a repeated id would join an open trace).
constexpr uint64_t kTraceTag = 0x5a5a000000000000ull;

std::string hex(uint64_t hi, uint64_t lo, int digits) {
  char buf[33];
  if (digits == 32)
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                  static_cast<unsigned long long>(lo));
  else
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(lo));
  return buf;
}

// One request of `spans` spans: traces of a chain root -> ... of 10 spans, 3 services.
std::string body(uint64_t thread, uint64_t index, int spans) {
  std::vector<TestResource> rs = {{"front", {}}, {"back", {}}, {"db", {}}};
  const int64_t t0 = 1'700'000'000'000'000'000;
  for (int k = 0; k < spans; ++k) {
    const uint64_t trace = index * 1'000'000 + static_cast<uint64_t>(k / kSpansPerTrace);
    const int level = k % kSpansPerTrace;
    TestSpan s;
    s.trace = hex(kTraceTag | (thread + 1), trace + 1, 32);
    s.id = hex(0, static_cast<uint64_t>(level) + 1, 16);
    if (level > 0) s.parent = hex(0, static_cast<uint64_t>(level), 16);
    s.name = "op" + std::to_string(level);
    s.start = t0 + level * 1'000;
    s.end = t0 + 100'000 - level * 1'000;
    rs[static_cast<size_t>(level % 3)].spans.push_back(s);
  }
  return snailtrail::testing::otlp_protobuf(rs);
}

// Where the trace ids' high halves (kTraceTag | thread + 1, big-endian) sit in `body`.
std::vector<size_t> trace_id_offsets(const std::string& body, uint64_t thread) {
  std::string hi(8, '\0');
  for (int b = 0; b < 8; ++b)
    hi[static_cast<size_t>(b)] = static_cast<char>((kTraceTag | (thread + 1)) >> (56 - 8 * b));
  std::vector<size_t> at;
  for (size_t p = body.find(hi); p != std::string::npos; p = body.find(hi, p + 1)) at.push_back(p);
  return at;
}

// Writes `round` into bytes 2-5 of each trace id's high half.
void set_round(std::string& body, const std::vector<size_t>& offsets, uint32_t round) {
  for (size_t p : offsets)
    for (int b = 0; b < 4; ++b)
      body[p + 2 + static_cast<size_t>(b)] = static_cast<char>(round >> (24 - 8 * b));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PORT SECONDS [THREADS=2] [SPANS=1000] [RATE=0]\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const double seconds = std::atof(argv[2]);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int spans = argc > 4 ? std::atoi(argv[4]) : 1000;
  const double rate = argc > 5 ? std::atof(argv[5]) : 0;
  if (port <= 0 || seconds <= 0 || threads <= 0 || spans <= 0 || rate < 0) {
    std::fprintf(stderr, "otlp_load: bad arguments\n");
    return 2;
  }
  std::vector<std::vector<std::string>> bodies(static_cast<size_t>(threads));
  std::vector<std::vector<std::vector<size_t>>> offsets(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < kBodiesPerThread; ++i) {
      auto& b = bodies[static_cast<size_t>(t)];
      b.push_back(body(static_cast<uint64_t>(t), static_cast<uint64_t>(i), spans));
      offsets[static_cast<size_t>(t)].push_back(
          trace_id_offsets(b.back(), static_cast<uint64_t>(t)));
    }
  std::atomic<uint64_t> ok{0}, throttled{0}, other{0}, failed{0};
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  // Each thread's share of the rate: request i is due at start + i * interval.
  const double interval_s = rate > 0 ? spans * threads / rate : 0;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      // As the SDKs' HTTP clients do (Go's net, Node's http): with Nagle on, the body
      // written after the headers waits for the server's delayed ACK, ~40 ms a request.
      client.set_tcp_nodelay(true);
      auto& mine = bodies[static_cast<size_t>(t)];
      const auto& where = offsets[static_cast<size_t>(t)];
      for (uint64_t i = 0;; ++i) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= end) break;
        if (interval_s > 0) {
          const auto due =
              start + std::chrono::duration<double>(static_cast<double>(i) * interval_s);
          if (due > now) std::this_thread::sleep_until(due);
        }
        std::string& next = mine[i % mine.size()];
        set_round(next, where[i % mine.size()], static_cast<uint32_t>(i / mine.size()));
        auto res = client.Post("/v1/traces", next, "application/x-protobuf");
        if (!res)
          ++failed;
        else if (res->status == 200)
          ++ok;
        else if (res->status == 429 || res->status == 503) {
          ++throttled;
          // Back off a little, as SDKs do (they wait Retry-After or longer).
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        } else
          ++other;
      }
    });
  for (auto& th : pool) th.join();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"seconds\": %.3f, \"threads\": %d, \"spans_per_request\": %d, \"requests_ok\": %llu, "
      "\"requests_throttled\": %llu, \"requests_other\": %llu, \"requests_failed\": %llu, "
      "\"spans_ok_per_second\": %.0f}\n",
      took, threads, spans, static_cast<unsigned long long>(ok.load()),
      static_cast<unsigned long long>(throttled.load()),
      static_cast<unsigned long long>(other.load()), static_cast<unsigned long long>(failed.load()),
      static_cast<double>(ok.load()) * spans / took);
  return failed.load() > 0 ? 1 : 0;
}
