// Files cut short (a trace still being written): the chrome, otlp and jaeger importers
// import every complete record before the cut and count it; damage before the end stays
// an error (docs/IMPORTERS.md, "Files cut short"). Every fixture is cut at every byte.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "importers/chrome/chrome_importer.hpp"
#include "importers/common/json_prefix.hpp"
#include "importers/otel/otel_importer.hpp"
#include "process_util.hpp"
#include "sanitized.hpp"

namespace snailtrail::test_import_cut {
namespace {

const std::string kData = std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/";

uint64_t diagnostic(const std::vector<std::pair<std::string, uint64_t>>& d, const std::string& k) {
  for (const auto& [key, n] : d)
    if (key == k) return n;
  return 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Offsets just after each '}' that closes a value at bracket depth `depth` (1 = the
// elements of a top-level array), strings skipped.
std::vector<size_t> element_ends(std::string_view text, int depth) {
  std::vector<size_t> out;
  int d = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') {
      for (++i; text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (text[i] == '{' || text[i] == '[') {
      ++d;
    } else if (text[i] == '}' || text[i] == ']') {
      if (d-- == depth + 1 && text[i] == '}') out.push_back(i + 1);
    }
  }
  return out;
}

struct Imported {
  size_t events = 0;
  bool warned = false;
};

// Cuts `text` at every offset and checks: cuts from `first_complete` on never throw
// (earlier ones may, with a TraceError), the event count never decreases with the
// offset and is the whole file's at its length, and the warning `key` is there exactly
// when `is_cut(prefix)`.
void cut_everywhere(const std::string& text, size_t first_complete,
                    const std::function<Imported(std::string_view)>& import,
                    const std::function<bool(std::string_view)>& is_cut) {
  const Imported whole = import(text);
  ASSERT_FALSE(whole.warned);
  ASSERT_GT(whole.events, 0u);
  size_t last = 0;
  bool any = false;
  for (size_t cut = 0; cut <= text.size(); cut = testing::next_cut(cut, text.size())) {
    const std::string_view prefix(text.data(), cut);
    Imported got;
    try {
      got = import(prefix);
    } catch (const TraceError& e) {
      EXPECT_LT(cut, first_complete) << "cut at " << cut << ": " << e.what();
      continue;
    }
    if (any) {
      EXPECT_GE(got.events, last) << "cut at " << cut;
    }
    last = got.events;
    any = true;
    EXPECT_EQ(got.warned, is_cut(prefix)) << "cut at " << cut;
    if (cut == text.size()) {
      EXPECT_EQ(got.events, whole.events);
    }
  }
}

Imported chrome(std::string_view text) {
  const Trace t = importers::parse_chrome(text, "cut.json");
  return {t.events.size(), diagnostic(t.import_diagnostics, "chrome.truncated_file") > 0};
}
Imported otlp(std::string_view text) {
  const Trace t = importers::spans_to_trace(importers::parse_otlp(text, "cut.json"), {});
  return {t.events.size(), diagnostic(t.import_diagnostics, "otlp.truncated_last_line") +
                                   diagnostic(t.import_diagnostics, "otlp.truncated_file") >
                               0};
}
Imported jaeger(std::string_view text) {
  const Trace t = importers::spans_to_trace(importers::parse_jaeger(text, "cut.json"), {});
  return {t.events.size(), diagnostic(t.import_diagnostics, "jaeger.truncated_file") > 0};
}

TEST(CutFiles, ChromeObjectFormAtEveryByte) {
  const std::string text = testing::slurp(kData + "chrome-flows.json");
  const std::vector<size_t> events = element_ends(text, 2);  // inside "traceEvents": [...]
  ASSERT_GT(events.size(), 5u);
  // Cut anywhere before the document's closing brace (trailing white space is no cut).
  cut_everywhere(text, events.front(), chrome,
                 [&](std::string_view p) { return trim(p) != trim(text); });
}

TEST(CutFiles, ChromeBareArrayAtEveryByte) {
  const std::string text = testing::slurp(kData + "chrome-tf-timeline.json");
  const std::vector<size_t> events = element_ends(text, 1);
  ASSERT_EQ(events.size(), 4u);
  // The array format may lack its "]": a cut between events is no cut, one inside is.
  cut_everywhere(text, events.front(), chrome, [&](std::string_view p) {
    std::string_view t = trim(p);
    while (!t.empty() && (t.back() == ',' || t.back() == ' ' || t.back() == '\n'))
      t.remove_suffix(1);
    if (t == "[" || trim(p) == trim(text)) return false;
    for (size_t end : events)
      if (end == t.size()) return false;
    return true;
  });
}

TEST(CutFiles, ChromeKeepsTheEventsBeforeTheCut) {
  // Cut inside Relu (the last op): MatMul and BiasAdd stay, with the message between them.
  const std::string text = testing::slurp(kData + "chrome-tf-timeline.json");
  const Trace t = importers::parse_chrome(text.substr(0, text.find("\"Relu\"") + 3), "cut.json");
  EXPECT_EQ(diagnostic(t.import_diagnostics, "chrome.truncated_file"), 1u);
  std::vector<std::tuple<std::string, int64_t, int64_t, std::string>> slices;  // ms
  std::vector<std::pair<int64_t, int64_t>> messages;
  std::map<uint32_t, Event> open;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::start) open[e.worker] = e;
    if (e.kind == EventKind::end && e.activity == ActivityType::processing)
      slices.emplace_back(t.worker_name(e.worker), open[e.worker].ts / 1'000'000, e.ts / 1'000'000,
                          t.operator_name(e.op));
    if (e.kind == EventKind::send) messages.emplace_back(e.ts / 1'000'000, e.worker);
  }
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(std::get<3>(slices[0]), "MatMul");
  EXPECT_EQ(std::get<1>(slices[0]), 0);
  EXPECT_EQ(std::get<2>(slices[0]), 10);
  EXPECT_EQ(std::get<3>(slices[1]), "BiasAdd");
  EXPECT_EQ(std::get<1>(slices[1]), 12);
  EXPECT_EQ(std::get<2>(slices[1]), 16);
  ASSERT_EQ(messages.size(), 1u);  // MatMul's output to BiasAdd, sent at 10 ms
  EXPECT_EQ(messages[0].first, 10);
}

// The OTLP fixture as the collector's file exporter writes it: one request per line,
// one resourceSpans entry each.
std::string otlp_lines() {
  const std::string text = testing::slurp(kData + "otlp-request.json");
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(text);
  simdjson::dom::array resource_spans = root["resourceSpans"];
  std::string out;
  for (simdjson::dom::element rs : resource_spans)
    out += "{\"resourceSpans\":[" + simdjson::minify(rs) + "]}\n";
  return out;
}

TEST(CutFiles, OtlpLinesAtEveryByte) {
  const std::string text = otlp_lines();
  const size_t first_line = text.find('\n');
  ASSERT_NE(first_line, std::string::npos);
  cut_everywhere(text, first_line, otlp, [&](std::string_view p) {
    const std::string_view t = trim(p);
    return !t.empty() && text[t.size()] != '\n';  // not at the end of a line
  });
}

TEST(CutFiles, OtlpDocumentAtEveryByte) {
  const std::string text = testing::slurp(kData + "otlp-request.json");
  // The first span's end: depth 5 = {resourceSpans:[{scopeSpans:[{spans:[ {span} ...
  const std::vector<size_t> spans = element_ends(text, 6);
  ASSERT_FALSE(spans.empty());
  cut_everywhere(text, spans.front(), otlp,
                 [&](std::string_view p) { return trim(p) != trim(text); });
}

TEST(CutFiles, OtlpLinesDropTheCutLine) {
  // Cut in the middle of line 2 (backend): what is kept is line 1 (frontend) alone.
  const std::string text = otlp_lines();
  const size_t line1 = text.find('\n') + 1, line2 = text.find('\n', line1) + 1;
  const std::string cut = text.substr(0, (line1 + line2) / 2);
  const importers::SpanSet got = importers::parse_otlp(cut, "cut.json");
  EXPECT_EQ(got.diagnostics,
            (std::vector<std::pair<std::string, uint64_t>>{{"otlp.truncated_last_line", 1}}));
  std::vector<std::string> ops;
  for (const importers::Span& s : got.spans)
    ops.push_back(got.str(s.service) + ":" + got.str(s.operation));
  EXPECT_EQ(ops, (std::vector<std::string>{"frontend:GET /checkout", "frontend:call backend",
                                           "frontend:audit", "frontend:GET /health"}));
}

TEST(CutFiles, OtlpDocumentKeepsTheSpansBeforeTheCut) {
  const std::string text = testing::slurp(kData + "otlp-request.json");
  // Cut inside backend's second span ("render"): backend keeps POST /price only.
  const importers::SpanSet got =
      importers::parse_otlp(text.substr(0, text.find("\"render\"") + 4), "cut.json");
  EXPECT_EQ(diagnostic(got.diagnostics, "otlp.truncated_file"), 1u);
  std::vector<std::string> ops;
  for (const importers::Span& s : got.spans)
    ops.push_back(got.str(s.service) + ":" + got.str(s.operation));
  EXPECT_EQ(ops, (std::vector<std::string>{"frontend:GET /checkout", "frontend:call backend",
                                           "frontend:audit", "frontend:GET /health",
                                           "backend:POST /price"}));
}

TEST(CutFiles, JaegerAtEveryByte) {
  const std::string text = testing::slurp(kData + "jaeger-request.json");
  const std::vector<size_t> spans = element_ends(text, 4);  // {data:[{spans:[ {span}
  ASSERT_FALSE(spans.empty());
  cut_everywhere(text, spans.front(), jaeger,
                 [&](std::string_view p) { return trim(p) != trim(text); });
}

TEST(CutFiles, JaegerKeepsTheCompleteSpansOfTheCutTrace) {
  const std::string text = testing::slurp(kData + "jaeger-request.json");
  // Cut inside the third span: the first two are kept; "processes" (after the spans) is
  // lost, so their process ids name the services.
  const std::vector<size_t> spans = element_ends(text, 4);
  ASSERT_GE(spans.size(), 3u);
  const importers::SpanSet got = importers::parse_jaeger(text.substr(0, spans[2] - 5), "cut.json");
  EXPECT_EQ(diagnostic(got.diagnostics, "jaeger.truncated_file"), 1u);
  EXPECT_EQ(diagnostic(got.diagnostics, "jaeger.spans_without_process"), 0u);
  std::vector<std::string> ops;
  for (const importers::Span& s : got.spans)
    ops.push_back(got.str(s.service) + ":" + got.str(s.operation));
  EXPECT_EQ(ops, (std::vector<std::string>{"p1:GET /order", "p1:auth"}));
}

// Only a cut at the end is forgiven: damage before it is an error naming its byte.
TEST(CutFiles, DamageBeforeTheEndIsStillAnError) {
  auto error_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string chrome_text = testing::slurp(kData + "chrome-flows.json");
  std::string damaged = chrome_text.substr(0, chrome_text.size() - 20);
  damaged.insert(damaged.find("\"ph\"", 200), "]");  // a stray bracket in the middle
  EXPECT_NE(error_of([&] { importers::parse_chrome(damaged, "d.json"); }).find("d.json: byte "),
            std::string::npos);
  std::string lines = otlp_lines();
  lines.insert(lines.find('\n') + 1, "{\"resourceSpans\": [}\n");  // a bad second line
  EXPECT_NE(error_of([&] { importers::parse_otlp(lines, "l.json"); }).find("l.json: byte "),
            std::string::npos);
  std::string jaeger_text = testing::slurp(kData + "jaeger-request.json");
  jaeger_text.insert(jaeger_text.find("\"spans\""), "]");  // a stray bracket, then cut
  jaeger_text.resize(jaeger_text.size() - 10);
  EXPECT_NE(error_of([&] { importers::parse_jaeger(jaeger_text, "j.json"); }).find("j.json: byte "),
            std::string::npos);
}

// Damaged and cut at once, at random: every outcome is a trace or a TraceError (under
// the sanitizers: no invalid memory access either).
TEST(CutFiles, RandomDamageAndCutsNeverCrash) {
  std::mt19937_64 rng(17);
  const std::string structural = "{}[]\",:\\ 0a";
  for (const char* name : {"chrome-flows.json", "chrome-tf-timeline.json", "otlp-request.json",
                           "jaeger-request.json"}) {
    const std::string text = testing::slurp(kData + name);
    for (int round = 0; round < testing::random_inputs(400, 100); ++round) {
      std::string t = text;
      for (uint64_t k = rng() % 4; k-- > 0;)
        t[rng() % t.size()] = structural[rng() % structural.size()];
      t.resize(rng() % (t.size() + 1));
      for (int format = 0; format < 3; ++format) {
        try {
          if (format == 0) importers::parse_chrome(t, "r.json");
          if (format == 1) importers::spans_to_trace(importers::parse_otlp(t, "r.json"), {});
          if (format == 2) importers::spans_to_trace(importers::parse_jaeger(t, "r.json"), {});
        } catch (const TraceError&) {
        }
      }
    }
  }
}

TEST(CutFiles, CloseCutDocumentFindsTheLastCompleteRecord) {
  using importers::json::close_cut_document;
  auto closed = [](std::string_view text) {
    auto c = close_cut_document(text, {"", "items"});
    return c ? c->closed + " @" + std::to_string(c->kept) : std::string("none");
  };
  EXPECT_EQ(closed(R"({"items": [{"a": [1, "]"]}, {"b": {"c)"),
            R"({"items": [{"a": [1, "]"]}]} @26)");
  EXPECT_EQ(closed(R"({"items": [{"s": "x\"}]}"}, {)"), R"({"items": [{"s": "x\"}]}"}]} @26)");
  EXPECT_EQ(closed(R"([{"a": 1}, {"a": 2)"), R"([{"a": 1}] @9)");
  EXPECT_EQ(closed(R"({"items": [)"), R"({"items": []} @11)");
  EXPECT_EQ(closed(R"({"other": [{"a": 1}, )"), "none");              // no record array open
  EXPECT_EQ(closed(R"({"items": [{"a": 1}]})"), "none");              // complete: not cut
  EXPECT_EQ(closed(R"({"items": [{"a": 1}]]})"), "none");             // mismatched bracket
  EXPECT_EQ(closed(R"({"items": [{"a": 1}]} {"items": [)"), "none");  // text after the value
}

}  // namespace
}  // namespace snailtrail::test_import_cut
