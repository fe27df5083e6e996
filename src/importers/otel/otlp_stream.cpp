// OTLP/JSON read as a stream of traces (otel_importer.hpp, stream_spans).
#include "importers/otel/span_stream.hpp"

namespace snailtrail::importers::otel_detail {

// OTLP: top-level documents (one request per line, or one request over the whole file),
// each parsed on its own; their spans are gathered per trace id, and a trace is complete
// once `gap` documents have followed its last span (or at the end of the file).
void stream_otlp(const std::string& path, unsigned threads, size_t gap, const SpanUnitFn& fn,
                 SpanStream& out) {
  ChunkReader reader(path);
  const std::string& source = reader.source();
  out.source = source;
  out.format = "otlp";
  StreamSink sink;
  UnitWorkers workers(threads, [&](UnitWorkers::Job& job, dom::parser&) {
    fn(job.index, job.set);
    sink.add(job.set.diagnostics);
  });
  struct Pending {
    SpanSet set;
    size_t index = 0, last_doc = 0;
  };
  std::unordered_map<std::string, Pending> pending;
  std::unordered_set<std::string> closed;
  size_t next_index = 0, docs = 0;
  uint64_t negative = 0, cut_traces = 0;
  auto close = [&](Pending& p) {
    resolve_spans(p.set);
    UnitWorkers::Job job;
    job.index = p.index;
    job.set = std::move(p.set);
    workers.push(std::move(job));
  };
  auto take = [&](const SpanSet& from) {
    std::string trace, text;
    for (const Span& s : from.spans) {
      trace.clear();
      from.ids.append(s.trace, trace);
      auto it = pending.find(trace);
      if (it == pending.end()) {
        if (closed.count(trace)) ++cut_traces;  // a later piece of a trace already computed
        it = pending.emplace(trace, Pending{}).first;
        it->second.index = next_index++;
        it->second.set.source = source;
        it->second.set.format = "otlp";
      }
      Pending& p = it->second;
      p.last_doc = docs;
      SpanSet& to = p.set;
      auto name = [&](uint32_t x) { return to.strings.id(from.str(x)); };
      auto id = [&](uint32_t x) {
        text.clear();
        from.ids.append(x, text);
        return to.ids.id(text);
      };
      Span t = s;
      t.trace = id(s.trace);
      t.id = id(s.id);
      t.service = name(s.service);
      t.operation = name(s.operation);
      if (s.thread != kNoSpan) t.thread = name(s.thread);
      t.refs_begin = static_cast<uint32_t>(to.refs.size());
      for (uint32_t r = s.refs_begin; r < s.refs_end; ++r)
        to.refs.push_back(
            {id(from.refs[r].trace), id(from.refs[r].span_id), from.refs[r].child_of});
      t.refs_end = static_cast<uint32_t>(to.refs.size());
      to.spans.push_back(t);
    }
  };
  auto close_quiet = [&] {
    for (auto it = pending.begin(); it != pending.end();) {
      if (docs - it->second.last_doc > gap) {
        close(it->second);
        closed.insert(it->first);
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  };
  dom::parser parser;
  auto document = [&](std::string_view text, uint64_t byte) {
    const std::string where = docs == 0 ? "" : "document " + std::to_string(docs + 1) + ": ";
    const std::string name = "document " + std::to_string(docs + 1);
    simdjson::padded_string padded(text);
    dom::element root;
    if (auto err = parser.parse(padded).get(root)) {
      sink.skip(docs, name, byte,
                source + ": byte " + std::to_string(byte + json::error_offset(text)) +
                    ": invalid JSON: " + simdjson::error_message(err));
    } else {
      try {
        OtlpReader r(source, "otlp");
        r.document(root, where);
        negative += r.negative_;
        take(r.set_);
      } catch (const TraceError& e) {
        sink.skip(docs, name, byte, e.what());
      }
    }
    ++docs;
    close_quiet();
  };

  std::string buf;
  size_t pos = 0, doc_start = std::string::npos;
  uint64_t base = 0;
  int depth = 0;
  bool in_string = false, escaped = false, eof = false, scalar = false;
  for (;;) {
    if (pos == buf.size()) {
      if (eof) break;
      if (docs > 0) {  // before the first document ends, all is kept (see the end)
        const size_t keep = doc_start != std::string::npos ? doc_start : pos;
        buf.erase(0, keep);
        base += keep;
        pos -= keep;
        if (doc_start != std::string::npos) doc_start = 0;
      }
      if (reader.append(buf, kChunk) == 0) eof = true;
      continue;
    }
    if (in_string) {
      const char* q = string_end(buf.data() + pos, buf.data() + buf.size(), escaped);
      pos = static_cast<size_t>(q - buf.data());
      if (pos < buf.size()) {
        in_string = false;
        ++pos;
      }
      continue;
    }
    if (depth > 0 && !scalar) {
      pos = static_cast<size_t>(skip_plain(buf.data() + pos, buf.data() + buf.size()) - buf.data());
      if (pos == buf.size()) continue;
    }
    const char c = buf[pos];
    if (doc_start == std::string::npos) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
          (docs == 0 && (c == '\xEF' || c == '\xBB' || c == '\xBF'))) {
        ++pos;
        continue;
      }
      doc_start = pos;
      scalar = c != '{' && c != '[';
    }
    if (scalar) {  // not a request: up to the end of its line, reported as it fails to parse
      if (c == '\n') {
        document(std::string_view(buf).substr(doc_start, pos - doc_start), base + doc_start);
        doc_start = std::string::npos;
      }
      ++pos;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        document(std::string_view(buf).substr(doc_start, pos + 1 - doc_start), base + doc_start);
        doc_start = std::string::npos;
      }
    }
    ++pos;
  }
  if (docs == 0) {
    // No complete document: the whole file as parse_otlp reads it (a single request cut
    // short, or the error of a file that is not OTLP).
    workers.finish();
    SpanSet set = parse_otlp(buf, source);
    fn(0, set);
    out.units = 1;
    out.diagnostics = set.diagnostics;
    return;
  }
  if (doc_start != std::string::npos) {
    // The last request cut short: dropped if it is one line (the collector appending),
    // else reported.
    const std::string_view rest = std::string_view(buf).substr(doc_start);
    const size_t last = rest.find_last_not_of(" \t\r\n");
    if (rest.substr(0, last).find('\n') == std::string_view::npos && json::ends_inside_value(rest))
      sink.add({{"otlp.truncated_last_line", 1}});
    else
      document(rest, base + doc_start);
  }
  std::vector<Pending*> left;
  for (auto& [trace, p] : pending) left.push_back(&p);
  std::sort(left.begin(), left.end(),
            [](const Pending* a, const Pending* b) { return a->index < b->index; });
  for (Pending* p : left) close(*p);
  pending.clear();
  workers.finish();
  workers.rethrow();
  if (negative) sink.add({{"otlp.negative_durations", negative}});
  if (cut_traces) sink.add({{"otlp.cut_traces", cut_traces}});
  out.units = next_index;
  sink.finish(out);
}

}  // namespace snailtrail::importers::otel_detail
