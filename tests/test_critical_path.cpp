// The classic critical path of request traces (requests/critical_path.hpp) against
// a brute-force oracle that walks time one tick at a time, against hand-computed
// fixtures, and the `snailtrail critical-path` command end to end (with auto-detection of
// the new importers by `analyze`).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "requests/critical_path.hpp"

namespace snailtrail::test_critical_path {
namespace {

using importers::kNoSpan;
using importers::Span;
using importers::SpanSet;

const std::string kData = std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/";

// A single-trace span set from (start, end, parent) triples; spans named s0, s1, ...
SpanSet tree(const std::vector<std::array<int64_t, 3>>& spec) {
  SpanSet set;
  set.format = "test";
  const uint32_t trace = set.ids.id("trace");
  const uint32_t service = set.strings.id("svc");
  for (size_t i = 0; i < spec.size(); ++i) {
    Span s;
    s.trace = trace;
    s.id = set.ids.id("s" + std::to_string(i));
    s.service = service;
    s.operation = s.id;
    s.start = spec[i][0];
    s.end = spec[i][1];
    s.parent = spec[i][2] < 0 ? kNoSpan : static_cast<uint32_t>(spec[i][2]);
    set.spans.push_back(s);
  }
  return set;
}

std::map<uint32_t, int64_t> fast(const SpanSet& set) {
  std::map<uint32_t, int64_t> out;
  const auto paths = requests::critical_paths(set);
  EXPECT_EQ(paths.size(), 1u);
  int64_t sum = 0;
  for (const requests::PathStep& s : paths.at(0).path) {
    if (s.critical_ns > 0) out[s.span] = s.critical_ns;
    sum += s.critical_ns;
  }
  EXPECT_EQ(sum, paths[0].duration_ns);
  return out;
}

// The definition, tick by tick: walking backward from the root's end, at every integer
// instant p the walk is inside one span X. If an unused child of X (clipped to X) ends
// exactly at p and is the last-finishing one not after p (ties: earlier start, then lower
// index), the walk enters it; at X's start it returns to X's parent; otherwise the tick
// (p-1, p] is X's critical time. Root: span 0.
std::map<uint32_t, int64_t> oracle(const SpanSet& set) {
  const size_t n = set.spans.size();
  std::vector<int64_t> cs(n), ce(n);
  std::vector<bool> alive(n, false);
  // Clip recursively from the root (parents have lower indices in the generated trees).
  alive[0] = true;
  cs[0] = set.spans[0].start;
  ce[0] = set.spans[0].end;
  for (size_t i = 1; i < n; ++i) {
    const uint32_t p = set.spans[i].parent;
    if (p == kNoSpan || !alive[p]) continue;
    if (set.spans[i].start > ce[p] || set.spans[i].end < cs[p]) continue;
    alive[i] = true;
    cs[i] = std::max(set.spans[i].start, cs[p]);
    ce[i] = std::min(set.spans[i].end, ce[p]);
  }
  std::map<uint32_t, int64_t> crit;
  std::vector<bool> used(n, false);
  std::vector<uint32_t> stack;
  uint32_t x = 0;
  int64_t p = ce[0];
  for (;;) {
    int best = -1;
    for (size_t c = 0; c < n; ++c) {
      if (!alive[c] || used[c] || set.spans[c].parent != x || ce[c] > p) continue;
      if (best < 0 || ce[c] > ce[best] || (ce[c] == ce[best] && cs[c] < cs[best])) best = int(c);
    }
    if (best >= 0 && ce[best] == p) {
      used[best] = true;
      stack.push_back(x);
      x = best;
      continue;
    }
    if (p == cs[x]) {
      if (stack.empty()) break;
      x = stack.back();
      stack.pop_back();
      continue;
    }
    ++crit[x];
    --p;
  }
  return crit;
}

// Span ids: hex ids are kept as numbers, other text as text; against a map of strings
// (the oracle), every id comes back as its text and equal texts only are the same id.
TEST(SpanIds, SameIdIffSameTextAndTextComesBack) {
  std::mt19937 rng(7);
  std::vector<std::string> pool = {"0",
                                   "00",
                                   "000000000000000a",
                                   "a",
                                   "A",
                                   "0A",
                                   "0a",
                                   "f",
                                   "ffffffffffffffffffffffffffffffff",
                                   "0ffffffffffffffffffffffffffffffff",  // 33 digits: text
                                   "00000000000000000000000000000001",
                                   "1",
                                   "01",
                                   "",
                                   "g1",
                                   "trace",
                                   "s0",
                                   "5b8efff798038103d269b633813fc60c",
                                   "5b8efff798038103d269b633813fc60C",
                                   "-1",
                                   " 1"};
  const char* digits = "0123456789abcdefABx";
  for (int i = 0; i < 3000; ++i) {
    std::string s(std::uniform_int_distribution<int>(1, 34)(rng), '0');
    for (char& c : s) c = digits[std::uniform_int_distribution<int>(0, i % 3 ? 15 : 18)(rng)];
    pool.push_back(s);
    if (i % 5 == 0) pool.push_back(s);  // repeats
  }
  importers::SpanIds ids;
  std::map<std::string, uint32_t> oracle;
  for (const std::string& s : pool) {
    EXPECT_EQ(ids.find(s), oracle.count(s) ? oracle[s] : kNoSpan) << s;
    const uint32_t id = ids.id(s);
    auto [it, fresh] = oracle.emplace(s, static_cast<uint32_t>(oracle.size()));
    EXPECT_EQ(id, it->second) << s;
    (void)fresh;
  }
  EXPECT_EQ(ids.size(), oracle.size());
  for (const auto& [text, id] : oracle) {
    EXPECT_EQ(ids.text(id), text);
    EXPECT_EQ(ids.find(text), id);
  }
}

// Binary ids (OTLP protobuf) and ids copied from another table: the same ids as their
// hex text interned by id() (the oracle: lowercase hex written digit by digit here).
TEST(SpanIds, BytesAndCopiedIdsAreTheIdsOfTheirText) {
  std::mt19937 rng(11);
  auto hex = [](const std::string& bytes) {
    std::string out;
    for (unsigned char b : bytes) {
      out.push_back("0123456789abcdef"[b >> 4]);
      out.push_back("0123456789abcdef"[b & 15]);
    }
    return out;
  };
  importers::SpanIds by_bytes, by_text, copied;
  std::vector<std::string> texts = {"x-request", "ABC"};  // non-hex ids, copied too
  for (int i = 0; i < 4000; ++i) {
    std::string bytes(std::uniform_int_distribution<int>(0, 20)(rng), '\0');
    for (char& c : bytes)
      c = static_cast<char>(std::uniform_int_distribution<int>(0, i % 4 ? 255 : 1)(rng));
    const uint32_t a = by_bytes.id_of_bytes(bytes);
    const uint32_t b = by_text.id(hex(bytes));
    ASSERT_EQ(a, b) << hex(bytes);
    EXPECT_EQ(by_bytes.text(a), hex(bytes));
    if (i % 100 == 0) {
      texts.push_back("t" + std::to_string(i));
      by_bytes.id(texts.back());
      by_text.id(texts.back());
    }
  }
  ASSERT_EQ(by_bytes.size(), by_text.size());
  // Copied in another order (backwards), each id keeps its text.
  for (uint32_t id = static_cast<uint32_t>(by_bytes.size()); id-- > 0;) {
    const uint32_t c = copied.id_from(by_bytes, id);
    EXPECT_EQ(copied.text(c), by_bytes.text(id));
    EXPECT_EQ(copied.find(by_bytes.text(id)), c);
  }
  EXPECT_EQ(copied.size(), by_bytes.size());
}

TEST(CriticalPath, MatchesTheTickOracleOnRandomTrees) {
  std::mt19937_64 rng(6);
  for (int iter = 0; iter < 3000; ++iter) {
    const int n = 1 + int(rng() % 9);
    std::vector<std::array<int64_t, 3>> spec;
    spec.push_back({int64_t(rng() % 5), int64_t(10 + rng() % 15), -1});
    for (int i = 1; i < n; ++i) {
      // Children mostly inside, sometimes starting before the parent (clock skew),
      // ending after it (async), entirely outside (dropped) or zero-length.
      const int64_t a = int64_t(rng() % 30) - 3;
      const int64_t len = (rng() % 6 == 0) ? 0 : int64_t(rng() % 12);
      spec.push_back({a, a + len, int64_t(rng() % i)});
    }
    const SpanSet set = tree(spec);
    ASSERT_EQ(fast(set), oracle(set)) << "iteration " << iter;
  }
}

TEST(CriticalPath, HandComputedCases) {
  // Back-to-back children: B then A are both critical (Jaeger UI's strict "<" would
  // give the parent A's 5 ns instead).
  EXPECT_EQ(fast(tree({{0, 10, -1}, {0, 5, 0}, {5, 10, 0}})),
            (std::map<uint32_t, int64_t>{{1, 5}, {2, 5}}));
  // Overlapping children: the last-finishing one (2: [4,9]) wins; 1 ([1,6]) ends after 2
  // starts, so it is skipped and the parent runs [0,4] and [9,10].
  EXPECT_EQ(fast(tree({{0, 10, -1}, {1, 6, 0}, {4, 9, 0}})),
            (std::map<uint32_t, int64_t>{{0, 5}, {2, 5}}));
  // A child outliving the parent is clipped to it; one starting before it too (skew).
  EXPECT_EQ(fast(tree({{10, 20, -1}, {15, 30, 0}, {5, 12, 0}})),
            (std::map<uint32_t, int64_t>{{0, 3}, {1, 5}, {2, 2}}));
  // A child entirely after the parent is dropped with its subtree.
  EXPECT_EQ(fast(tree({{0, 10, -1}, {12, 15, 0}, {13, 14, 1}})),
            (std::map<uint32_t, int64_t>{{0, 10}}));
  // Nested: grandchild 2 [3,6] inside child 1 [2,8] inside root [0,10].
  EXPECT_EQ(fast(tree({{0, 10, -1}, {2, 8, 0}, {3, 6, 1}})),
            (std::map<uint32_t, int64_t>{{0, 4}, {1, 3}, {2, 3}}));
}

TEST(CriticalPath, DeepChainNeedsNoRecursion) {
  // Span i = [i, 2N - i], child of i - 1: every span is critical for 1 ns at each end,
  // the innermost for 2 ns.
  constexpr int64_t N = 100000;
  std::vector<std::array<int64_t, 3>> spec;
  for (int64_t i = 0; i < N; ++i) spec.push_back({i, 2 * N - i, i - 1});
  const auto crit = fast(tree(spec));
  ASSERT_EQ(crit.size(), size_t(N));
  EXPECT_EQ(crit.at(0), 2);
  EXPECT_EQ(crit.at(N - 1), 2);
}

TEST(CriticalPath, OtlpFixture) {
  // otlp-request.json (ms): A [0,100] has children B [10,80] and F [85,120] (clipped to
  // [85,100]); B -> C [15,75] -> D [20,50] and E [55,70]. Walking back from 100: F 15,
  // A 5 (80..85), B 5, C 5, E 15, C 5, D 30, C 5, B 5, A 10. Trace 2: H alone, 10.
  const SpanSet set = importers::read_spans(kData + "otlp-request.json");
  const auto paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(set.ids.text(paths[0].trace), "5b8efff798038103d269b633813fc60c");
  EXPECT_EQ(paths[0].duration_ns, 100'000'000);
  EXPECT_EQ(paths[0].spans, 7u);
  EXPECT_EQ(paths[0].clipped, 1u);
  std::vector<std::pair<std::string, int64_t>> got;
  for (const auto& s : paths[0].path)
    got.emplace_back(set.str(set.spans[s.span].operation), s.critical_ns / 1'000'000);
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"GET /checkout", 15}, {"call backend", 10}, {"POST /price", 15},
      {"query", 30},         {"render", 15},       {"audit", 15}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(paths[1].duration_ns, 10'000'000);
  const auto services = requests::critical_time_by_service(set, paths);
  ASSERT_EQ(services.size(), 3u);
  EXPECT_EQ(set.str(services[0].service), "frontend");
  EXPECT_EQ(services[0].critical_ns, 50'000'000);  // 15 + 10 + 15 + H's 10
  EXPECT_EQ(set.str(services[1].service), "backend");
  EXPECT_EQ(services[1].critical_ns, 30'000'000);
  EXPECT_EQ(set.str(services[2].service), "db");
  EXPECT_EQ(services[2].critical_ns, 30'000'000);
}

TEST(CriticalPath, JaegerFixture) {
  // jaeger-request.json (us): R [1000,1100]; children Q [1060,1090], K clipped to
  // [1000,1055], S [1005,1015] (overlapped by K, never critical); W follows from Q, so it
  // is Q's child in Jaeger UI's tree, but starts after Q ends: dropped. Back from 1100:
  // R 10, Q 30, R 5, K 55.
  const SpanSet set = importers::read_spans(kData + "jaeger-request.json");
  const auto paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].roots, 1u);
  EXPECT_EQ(paths[0].dropped, 1u);
  std::vector<std::pair<std::string, int64_t>> got;
  for (const auto& s : paths[0].path)
    got.emplace_back(set.str(set.spans[s.span].operation), s.critical_ns / 1000);
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"reserve", 55}, {"GET /order", 15}, {"publish", 30}};
  EXPECT_EQ(got, want);
}

// ---------------------------------------------------------------------------------------
// Jaeger UI's rules (packages/jaeger-ui/src/components/TracePage/CriticalPath): the
// situations of its test traces rebuilt as Jaeger JSON and OTLP files, read by the real
// importers. Times in microseconds (Jaeger) or nanoseconds (OTLP).

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::FILE* f = std::fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

// A Jaeger span: id (also its operation), start (+1000 us), duration, references
// "CHILD_OF:x,FOLLOWS_FROM:y", span.kind ("" = none).
std::string jspan(const std::string& id, int64_t start, int64_t duration, const std::string& refs,
                  const std::string& kind) {
  std::string r;
  for (size_t at = 0; at < refs.size();) {
    size_t end = refs.find(',', at);
    if (end == std::string::npos) end = refs.size();
    const std::string one = refs.substr(at, end - at);
    const size_t colon = one.find(':');
    if (!r.empty()) r += ", ";
    r += "{\"refType\": \"" + one.substr(0, colon) + "\", \"traceID\": \"t1\", \"spanID\": \"" +
         one.substr(colon + 1) + "\"}";
    at = end + 1;
  }
  std::string tags;
  if (!kind.empty())
    tags = "{\"key\": \"span.kind\", \"type\": \"string\", \"value\": \"" + kind + "\"}";
  return "{\"traceID\": \"t1\", \"spanID\": \"" + id + "\", \"operationName\": \"" + id +
         "\", \"references\": [" + r + "], \"startTime\": " + std::to_string(1000 + start) +
         ", \"duration\": " + std::to_string(duration) + ", \"processID\": \"p1\", \"tags\": [" +
         tags + "]}";
}

std::string jaeger_trace(const std::vector<std::string>& spans) {
  std::string s = "{\"data\": [{\"traceID\": \"t1\", \"spans\": [";
  for (size_t i = 0; i < spans.size(); ++i) s += (i ? ",\n" : "\n") + spans[i];
  return s + "], \"processes\": {\"p1\": {\"serviceName\": \"svc\", \"tags\": []}}}]}\n";
}

// (operation, self time) along the path, in path order.
std::vector<std::pair<std::string, int64_t>> path_of(const SpanSet& set,
                                                     const requests::CriticalPath& p,
                                                     int64_t unit) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& s : p.path)
    out.emplace_back(set.str(set.spans[s.span].operation), s.critical_ns / unit);
  return out;
}

using Path = std::vector<std::pair<std::string, int64_t>>;

TEST(CriticalPathJaegerRules, ConsumerChildOfProducerIsNotBlocking) {
  // A [0,100] server; P [10,30] producer child of A; C [20,90] consumer, CHILD_OF P, with
  // its own child D [40,80]; Q [35,45] consumer child of A (A is no producer: blocking).
  // C and D are left out: back from 100, A 55 (45..100), Q 10, A 5 (30..35), P 20, A 10.
  const std::string path = write_temp(
      "cp-producer.json",
      jaeger_trace({jspan("A", 0, 100, "", "server"), jspan("P", 10, 20, "CHILD_OF:A", "producer"),
                    jspan("C", 20, 70, "CHILD_OF:P", "consumer"),
                    jspan("D", 40, 40, "CHILD_OF:C", "internal"),
                    jspan("Q", 35, 10, "CHILD_OF:A", "consumer")}));
  const SpanSet set = importers::read_spans(path);
  const auto paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].nonblocking, 1u);
  EXPECT_EQ(paths[0].duration_ns, 100'000);
  EXPECT_EQ(path_of(set, paths[0], 1000), (Path{{"A", 70}, {"P", 20}, {"Q", 10}}));

  // The same with FOLLOWS_FROM from the consumer to the producer: also not blocking.
  const std::string ff = write_temp(
      "cp-producer-ff.json",
      jaeger_trace({jspan("A", 0, 100, "", "server"), jspan("P", 10, 20, "CHILD_OF:A", "producer"),
                    jspan("C", 20, 70, "FOLLOWS_FROM:P", "consumer")}));
  const SpanSet set2 = importers::read_spans(ff);
  const auto paths2 = requests::critical_paths(set2);
  ASSERT_EQ(paths2.size(), 1u);
  EXPECT_EQ(paths2[0].nonblocking, 1u);
  EXPECT_EQ(path_of(set2, paths2[0], 1000), (Path{{"A", 80}, {"P", 20}}));

  // OTLP has no FOLLOWS_FROM: a consumer span whose parentSpanId is a producer span.
  const std::string otlp = write_temp(
      "cp-producer-otlp.json",
      R"({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
  "scopeSpans": [{"spans": [
   {"traceId": "aa", "spanId": "01", "name": "A", "kind": 2, "startTimeUnixNano": "1000", "endTimeUnixNano": "1100"},
   {"traceId": "aa", "spanId": "02", "parentSpanId": "01", "name": "P", "kind": 4, "startTimeUnixNano": "1010", "endTimeUnixNano": "1030"},
   {"traceId": "aa", "spanId": "03", "parentSpanId": "02", "name": "C", "kind": 5, "startTimeUnixNano": "1020", "endTimeUnixNano": "1090"}]}]}]}
)");
  const SpanSet set3 = importers::read_spans(otlp);
  const auto paths3 = requests::critical_paths(set3);
  ASSERT_EQ(paths3.size(), 1u);
  EXPECT_EQ(paths3[0].nonblocking, 1u);
  EXPECT_EQ(path_of(set3, paths3[0], 1), (Path{{"A", 80}, {"P", 20}}));
}

TEST(CriticalPathJaegerRules, EveryRootGetsAPathConcatenatedByStart) {
  // Two parentless spans, R2 [60,100] first in the file, R1 [0,50] with child X [10,20];
  // O [120,130] has a CHILD_OF to a span not in the file (an orphan: a root too). Paths
  // by root start: R1 (R1 40, X 10), R2 40, O 10; duration = 50 + 40 + 10.
  const std::string path = write_temp(
      "cp-roots.json", jaeger_trace({jspan("R2", 60, 40, "", ""), jspan("R1", 0, 50, "", ""),
                                     jspan("X", 10, 10, "CHILD_OF:R1", ""),
                                     jspan("O", 120, 10, "CHILD_OF:missing", "")}));
  const SpanSet set = importers::read_spans(path);
  const auto paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].roots, 3u);
  EXPECT_EQ(paths[0].duration_ns, 100'000);
  EXPECT_EQ(set.str(set.spans[paths[0].root].operation), "R1");
  EXPECT_EQ(path_of(set, paths[0], 1000), (Path{{"R1", 40}, {"X", 10}, {"R2", 40}, {"O", 10}}));
  int64_t sum = 0;
  for (const auto& s : paths[0].path) sum += s.critical_ns;
  EXPECT_EQ(sum, paths[0].duration_ns);
}

TEST(CriticalPathJaegerRules, FollowsFromSpanIsAChildInTheTree) {
  // A [0,100]; F [40,80] FOLLOWS_FROM A (no CHILD_OF): in Jaeger UI's tree F is A's child
  // and blocking (no producer/consumer pair): A 60, F 40. G [110,120] FOLLOWS_FROM A lies
  // after A: dropped, not a root of its own.
  const std::string path =
      write_temp("cp-follows.json",
                 jaeger_trace({jspan("A", 0, 100, "", ""), jspan("F", 40, 40, "FOLLOWS_FROM:A", ""),
                               jspan("G", 110, 10, "FOLLOWS_FROM:A", "")}));
  const SpanSet set = importers::read_spans(path);
  const auto paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].roots, 1u);
  EXPECT_EQ(paths[0].dropped, 1u);
  EXPECT_EQ(path_of(set, paths[0], 1000), (Path{{"A", 60}, {"F", 40}}));
}

TEST(CriticalPathJaegerRules, FollowsFromCycleIsBroken) {
  // A follows from B and B from A: no root until the cycle is broken; every span is on
  // some path, none twice.
  const std::string path =
      write_temp("cp-cycle.json", jaeger_trace({jspan("A", 0, 10, "FOLLOWS_FROM:B", ""),
                                                jspan("B", 2, 5, "FOLLOWS_FROM:A", "")}));
  const SpanSet set = importers::read_spans(path);
  const auto paths = requests::critical_paths(set);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].roots, 1u);
  int64_t sum = 0;
  for (const auto& s : paths[0].path) sum += s.critical_ns;
  EXPECT_EQ(sum, paths[0].duration_ns);
}

// ---------------------------------------------------------------------------------------
// The binary, end to end.

struct CliRun {
  int code = -1;
  std::string out;
};

CliRun run(const std::string& args) {
  const std::string cmd = std::string(SNAILTRAIL_BINARY) + " " + args + " 2>&1";
  CliRun r;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(CriticalPathCli, JsonOutput) {
  const CliRun r = run("critical-path " + kData + "otlp-request.json --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(r.out).get(doc)) << r.out;
  simdjson::dom::array traces = doc["traces"];
  ASSERT_EQ(traces.size(), 2u);
  simdjson::dom::element t0 = traces.at(0);
  EXPECT_EQ(std::string_view(t0["trace_id"]), "5b8efff798038103d269b633813fc60c");
  EXPECT_EQ(int64_t(t0["duration_ns"]), 100'000'000);
  EXPECT_EQ(int64_t(t0["clipped_children"]), 1);  // audit outlives GET /checkout
  // notify (linked to audit, no parent) is audit's child in Jaeger UI's tree and starts
  // after audit's clipped end: dropped.
  EXPECT_EQ(int64_t(t0["dropped_children"]), 1);
  EXPECT_EQ(int64_t(t0["roots"]), 1);
  EXPECT_EQ(int64_t(t0["nonblocking_children"]), 0);
  simdjson::dom::array path = t0["path"];
  ASSERT_EQ(path.size(), 6u);
  simdjson::dom::element q = path.at(3);
  EXPECT_EQ(std::string_view(q["operation"]), "query");
  EXPECT_EQ(std::string_view(q["service"]), "db");
  EXPECT_EQ(std::string_view(q["span_id"]), "d000000000000004");
  EXPECT_EQ(int64_t(q["start_ns"]), 1'700'000'000'020'000'000);
  EXPECT_EQ(int64_t(q["end_ns"]), 1'700'000'000'050'000'000);
  EXPECT_EQ(int64_t(q["self_ns"]), 30'000'000);
  simdjson::dom::array services = doc["services"];
  ASSERT_EQ(services.size(), 3u);
  EXPECT_EQ(std::string_view(services.at(0)["service"]), "frontend");
  EXPECT_NEAR(double(services.at(0)["share"]), 50.0 / 110, 1e-12);
}

TEST(CriticalPathCli, TableAndErrors) {
  const CliRun t = run("critical-path " + kData + "jaeger-request.json");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("critical time by service"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("(1 child clipped to their parent"), std::string::npos) << t.out;
  const CliRun chrome = run("critical-path " + kData + "chrome-flows.json");
  EXPECT_EQ(chrome.code, 1) << chrome.out;
  EXPECT_NE(chrome.out.find("need a request trace"), std::string::npos) << chrome.out;
  const CliRun bad = run("critical-path " + kData + "otlp-request.json --format xml");
  EXPECT_EQ(bad.code, 2) << bad.out;
  const CliRun forced = run("critical-path " + kData + "otlp-request.json --importer jaeger");
  EXPECT_EQ(forced.code, 1) << forced.out;
}

// Service names come from untrusted files: a newline or a terminal escape in one must not
// split the table's rows or reach the terminal; JSON keeps the name exactly.
TEST(CriticalPathCli, ControlCharactersInNamesAreEscapedInTheTable) {
  std::FILE* in = std::fopen((kData + "jaeger-request.json").c_str(), "rb");
  ASSERT_NE(in, nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;) text.append(buf, n);
  std::fclose(in);
  const std::string from = "\"serviceName\": \"inventory\"";
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), "\"serviceName\": \"inv\\u001b[31mentory\\nx\"");
  const std::string path = ::testing::TempDir() + "jaeger-control-names.json";
  std::FILE* out = std::fopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  std::fwrite(text.data(), 1, text.size(), out);
  std::fclose(out);

  const CliRun t = run("critical-path " + path);
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_EQ(t.out.find('\x1b'), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("inv\\x1b[31mentory\\nx"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("\nx "), std::string::npos) << t.out;  // no row split at the newline
  const CliRun j = run("critical-path " + path + " --format json");
  ASSERT_EQ(j.code, 0) << j.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(j.out).get(doc)) << j.out;
  bool found = false;
  for (simdjson::dom::element s : simdjson::dom::array(doc["services"]))
    found = found || std::string_view(s["service"]) == "inv\x1b[31mentory\nx";
  EXPECT_TRUE(found) << j.out;
  std::remove(path.c_str());
}

TEST(CriticalPathCli, AnalyzeDetectsTheNewFormats) {
  // The TensorFlow fixture: processing 19/25, data messages 6/25 (test_import_chrome.cpp).
  const CliRun r =
      run("analyze " + kData + "chrome-tf-timeline.json --window whole --format jsonl");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  // The window's line (the run's follows).
  const size_t b = r.out.find("{\"window\"");
  ASSERT_NE(b, std::string::npos) << r.out;
  ASSERT_FALSE(parser.parse(r.out.substr(b, r.out.find('\n', b) - b)).get(doc)) << r.out;
  EXPECT_NEAR(double(doc["activity"]["processing"]), 0.76, 1e-9);
  EXPECT_NEAR(double(doc["activity"]["data_message"]), 0.24, 1e-9);
  const CliRun j = run("analyze " + kData + "jaeger-request.json --window whole --format jsonl");
  ASSERT_EQ(j.code, 0) << j.out;
  ASSERT_FALSE(parser.parse(j.out.substr(0, j.out.find('\n'))).get(doc)) << j.out;
  EXPECT_NEAR(double(doc["operator"]["inventory: reserve"]), 60.0 / 155, 1e-9);
  const CliRun o = run("analyze " + kData + "otlp-request.json --window whole --format jsonl");
  ASSERT_EQ(o.code, 0) << o.out;
  ASSERT_FALSE(parser.parse(o.out.substr(0, o.out.find('\n'))).get(doc)) << o.out;
  EXPECT_NEAR(double(doc["operator"]["db: query"]), 30.0 / 210, 1e-9);
  // --map re-types the queue's span: io 30/155 (test_import_otel.cpp).
  const std::string map = ::testing::TempDir() + "cli-map.toml";
  std::FILE* f = std::fopen(map.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("[[rule]]\nservice = \"queue\"\nactivity = \"io\"\n", f);
  std::fclose(f);
  const CliRun m =
      run("analyze " + kData + "jaeger-request.json --window whole --format jsonl --map " + map);
  ASSERT_EQ(m.code, 0) << m.out;
  ASSERT_FALSE(parser.parse(m.out.substr(0, m.out.find('\n'))).get(doc)) << m.out;
  EXPECT_NEAR(double(doc["activity"]["io"]), 30.0 / 155, 1e-9);
  const CliRun forced = run("analyze " + kData + "otlp-request.json --importer chrome");
  EXPECT_EQ(forced.code, 1) << forced.out;
}

}  // namespace
}  // namespace snailtrail::test_critical_path
