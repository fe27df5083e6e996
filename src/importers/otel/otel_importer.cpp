// OTLP/JSON and Jaeger JSON parsers (otel_importer.hpp).
#include "importers/otel/otel_importer.hpp"

#include "importers/common/activity_map.hpp"
#include "importers/otel/jaeger_reader.hpp"
#include "importers/otel/otlp_reader.hpp"

namespace snailtrail::importers {

using namespace otel_detail;

SpanSet parse_otlp(std::string_view text, const std::string& source) {
  OtlpReader reader(source, "otlp");
  simdjson::padded_string padded(text);
  dom::parser parser;
  dom::document_stream docs;
  // One batch must hold the largest document: a single request can be the whole file.
  if (auto err =
          parser.parse_many(padded, std::max<size_t>(text.size() + 1, size_t(1) << 20)).get(docs))
    json::throw_syntax_error(source, text, err);
  size_t n = 0;
  size_t tail = text.size();  // start of a document that does not parse
  simdjson::error_code tail_error = simdjson::SUCCESS;
  for (auto it = docs.begin(); it != docs.end(); ++it) {
    dom::element root;
    if (auto err = (*it).get(root)) {
      tail = n == 0 ? 0 : it.current_index();
      tail_error = err;
      break;
    }
    reader.document(root, n == 0 ? "" : "document " + std::to_string(n + 1) + ": ");
    ++n;
  }
  if (!tail_error && docs.truncated_bytes() > 0) {
    // simdjson sets aside what it cannot close as "truncated".
    tail = text.size() - docs.truncated_bytes();
    tail_error = simdjson::INCOMPLETE_ARRAY_OR_OBJECT;
  }
  if (tail_error && text.find_first_not_of(" \t\r\n", tail) == std::string_view::npos)
    tail_error = simdjson::SUCCESS;  // only white space left
  if (tail_error) {
    // Only a document cut at the end of the file is forgiven: requests one per line (the
    // collector appending to its file) lose the cut last line; a single request keeps
    // its complete spans. Anything else is located and reported.
    const std::string_view rest = text.substr(tail);
    auto fail = [&] {
      const size_t at = n == 0 ? json::error_offset(text) : tail + json::error_offset(rest);
      throw TraceError(source, "byte " + std::to_string(at),
                       std::string("invalid JSON: ") + simdjson::error_message(tail_error));
    };
    if (n > 0) {
      // One line, cut: nothing but white space after its last newline-free stretch.
      const size_t last = rest.find_last_not_of(" \t\r\n");
      if (rest.substr(0, last).find('\n') != std::string_view::npos ||
          !json::ends_inside_value(rest))
        fail();
      reader.set_.count(SpanDiagnostic::truncated_last_line, 1);
    } else {
      dom::element root;
      json::parse_cut_document(parser, text, source, kOtlpRecordArrays, tail_error, root);
      reader.document(root, "");
      reader.set_.count(SpanDiagnostic::truncated_file, 1);
      ++n;
    }
  }
  if (n == 0) throw TraceError(source, "byte 0", "no JSON document");
  return reader.finish();
}

SpanSet parse_jaeger(std::string_view text, const std::string& source) {
  JaegerReader reader(source, "jaeger");
  simdjson::padded_string padded(text);
  dom::parser parser;
  dom::element root;
  if (auto err = parser.parse(padded).get(root)) {
    // Cut short: the complete traces, and the complete spans of the cut one.
    json::parse_cut_document(parser, text, source, kJaegerRecordArrays, err, root);
    reader.set_.count(SpanDiagnostic::truncated_file, 1);
    reader.cut_ = true;
  }
  if (root.type() != dom::element_type::OBJECT)
    throw TraceError(source, "top level", "expected an object with \"data\"");
  dom::element data;
  if (member(dom::object(root), "data", data)) {
    if (data.type() != dom::element_type::ARRAY)
      throw TraceError(source, "top level", "\"data\" must be an array of traces");
    size_t i = 0;
    for (dom::element t : dom::array(data)) reader.trace(t, "data[" + std::to_string(i++) + "]");
  } else {
    reader.trace(root, "top level");  // a single trace object
  }
  return reader.done();
}

int sniff_otlp(std::string_view path, std::string_view head) {
  const std::string_view s = skip_space(head);
  if (s.starts_with("{") && s.find("\"resourceSpans\"") != std::string_view::npos) return 90;
  (void)path;
  return 0;
}

int sniff_jaeger(std::string_view path, std::string_view head) {
  const std::string_view s = skip_space(head);
  if (!s.starts_with("{")) return 0;
  if (s.find("\"traceID\"") != std::string_view::npos &&
      (s.find("\"spans\"") != std::string_view::npos ||
       s.find("\"data\"") != std::string_view::npos))
    return 85;
  (void)has_extension(path, ".json");
  return 0;
}

Trace read_otlp(const std::string& path, const ImportOptions& options) {
  const ActivityMap map = load_activity_map(options.map_file);
  return spans_to_trace(parse_otlp(read_file_bytes(path), path == "-" ? "<stdin>" : path), map);
}

Trace read_jaeger(const std::string& path, const ImportOptions& options) {
  const ActivityMap map = load_activity_map(options.map_file);
  return spans_to_trace(parse_jaeger(read_file_bytes(path), path == "-" ? "<stdin>" : path), map);
}

namespace {
constexpr ImportOption kSpanOptions[] = {kMapOption};
}  // namespace

const Importer& otlp_descriptor() {
  static const Importer d{
      .name = "otlp",
      .description = "OpenTelemetry OTLP/JSON spans (resourceSpans)",
      .sniff = sniff_otlp,
      .read = read_otlp,
      .not_streamed =
          "a span's parent, children and links may come in any later line, so no "
          "part of an OTLP file is final before its end",
      .options = kSpanOptions,
      .whole_window = true,
      .window_reason = "a span trace is a set of requests",
      .diagnostics = kOtlpDiagnostics,
  };
  return d;
}

const Importer& jaeger_descriptor() {
  static const Importer d{
      .name = "jaeger",
      .description = "Jaeger JSON spans (query API /api/traces)",
      .sniff = sniff_jaeger,
      .read = read_jaeger,
      .not_streamed =
          "a jaeger trace is one JSON document, complete only at its end, so there "
          "is nothing to analyze while it grows",
      .options = kSpanOptions,
      .whole_window = true,
      .window_reason = "a span trace is a set of requests",
      .diagnostics = kJaegerDiagnostics,
  };
  return d;
}

SpanSet read_spans(const std::string& path, std::string_view importer) {
  std::string_view name = importer;
  if (name == "auto") name = detect_importer(path).name;
  const std::string source = path == "-" ? "<stdin>" : path;
  if (name == "otlp") return parse_otlp(read_file_bytes(path), source);
  if (name == "jaeger") return parse_jaeger(read_file_bytes(path), source);
  if (!find_importer(name))
    throw std::invalid_argument("unknown importer \"" + std::string(name) + "\"");
  throw TraceError(source, "format",
                   "critical paths need a request trace (otlp or jaeger), but this is read by "
                   "the " +
                       std::string(name) + " importer");
}

}  // namespace snailtrail::importers
