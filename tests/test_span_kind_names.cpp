// Span kinds by name (spans.hpp, kSpanKindNames): Jaeger's "span.kind" tag and OTLP's
// enum, in the readers and back out through name_of.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <utility>

#include "importers/otel/otel_importer.hpp"

namespace snailtrail::test_span_kind_names {
namespace {

using importers::SpanKind;

const std::pair<SpanKind, const char*> kKinds[] = {
    {SpanKind::internal, "internal"}, {SpanKind::server, "server"},
    {SpanKind::client, "client"},     {SpanKind::producer, "producer"},
    {SpanKind::consumer, "consumer"},
};

TEST(SpanKindNames, BothSpellingsAndBack) {
  using importers::span_kind_named;
  using importers::SpanKindName;
  for (const auto& [kind, tag] : kKinds) {
    std::string otlp = std::string("SPAN_KIND_") + tag;
    for (char& c : otlp) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(span_kind_named(tag, &SpanKindName::tag), kind) << tag;
    EXPECT_EQ(span_kind_named(otlp, &SpanKindName::otlp), kind) << otlp;
    EXPECT_EQ(span_kind_named(otlp, &SpanKindName::tag), SpanKind::unspecified) << otlp;
    EXPECT_EQ(span_kind_named(tag, &SpanKindName::otlp), SpanKind::unspecified) << tag;
    EXPECT_EQ(importers::name_of(kind), tag);
  }
  EXPECT_EQ(span_kind_named("", &SpanKindName::tag), SpanKind::unspecified);
  EXPECT_EQ(span_kind_named("Server", &SpanKindName::tag), SpanKind::unspecified);
  EXPECT_EQ(span_kind_named("SPAN_KIND_UNSPECIFIED", &SpanKindName::otlp), SpanKind::unspecified);
  EXPECT_EQ(importers::name_of(SpanKind::unspecified), "");
}

TEST(SpanKindNames, ReadersTakeTheirFormatsSpelling) {
  std::string jaeger = R"({"data": [{"traceID": "1", "spans": [)";
  std::string otlp = R"({"resourceSpans": [{"scopeSpans": [{"spans": [)";
  int i = 0;
  for (const auto& [kind, tag] : kKinds) {
    const std::string id = std::to_string(i);
    jaeger += std::string(i ? ", " : "") + R"({"traceID": "1", "spanID": ")" + id +
              R"(", "startTime": 1, "duration": 1, "tags": [{"key": "span.kind", "value": ")" +
              tag + "\"}]}";
    std::string upper = tag;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // OTLP writes the enum as its name or as its number (1 internal .. 5 consumer).
    const std::string value = i % 2 ? "\"SPAN_KIND_" + upper + "\"" : std::to_string(i + 1);
    otlp += std::string(i ? ", " : "") + R"({"traceId": "1", "spanId": ")" + id + R"(", "kind": )" +
            value + R"(, "startTimeUnixNano": "1", "endTimeUnixNano": "2"})";
    ++i;
  }
  jaeger += "]}]}";
  otlp += "]}]}]}";
  const importers::SpanSet j = importers::parse_jaeger(jaeger, "kinds.json");
  const importers::SpanSet o = importers::parse_otlp(otlp, "kinds.json");
  ASSERT_EQ(j.spans.size(), std::size(kKinds));
  ASSERT_EQ(o.spans.size(), std::size(kKinds));
  for (size_t k = 0; k < std::size(kKinds); ++k) {
    EXPECT_EQ(j.spans[k].kind, kKinds[k].first) << k;
    EXPECT_EQ(o.spans[k].kind, kKinds[k].first) << k;
  }
}

}  // namespace
}  // namespace snailtrail::test_span_kind_names
