// Jaeger JSON read as a stream of traces (otel_importer.hpp, stream_spans), and the entry
// point of the span streams.
#include "importers/otel/span_stream.hpp"

namespace snailtrail::importers::otel_detail {

// Jaeger: the elements of the top-level "data" array, found by a scan that follows
// strings and brackets only; each is parsed on its own. A file of another shape (one
// trace object, "data" not an array, not an object at the top) is read whole, as
// parse_jaeger does.
void stream_jaeger(const std::string& path, unsigned threads, const SpanUnitFn& fn,
                   SpanStream& out) {
  ChunkReader reader(path);
  const std::string& source = reader.source();
  out.source = source;
  out.format = "jaeger";
  StreamSink sink;
  UnitWorkers workers(threads, [&](UnitWorkers::Job& job, dom::parser& parser) {
    if (job.ready) {
      fn(job.index, job.set);
      sink.add(job.set.diagnostics);
      return;
    }
    SpanSet set;
    try {
      if (job.cut) {
        // The file ends inside this trace: its complete spans, as parse_jaeger keeps them.
        std::string text = "{\"data\": [";
        text.append(job.text());
        set = parse_jaeger(text, source);
      } else {
        dom::element root;
        if (auto err = parser.parse(job.bytes.data() + job.off, job.len, false).get(root)) {
          const std::string_view text = job.text();
          sink.skip(job.index, job.where, job.byte,
                    source + ": byte " + std::to_string(job.byte + json::error_offset(text)) +
                        ": invalid JSON: " + simdjson::error_message(err));
          return;
        }
        JaegerReader r(source, "jaeger");
        r.trace(root, job.where);
        set = r.done();
      }
    } catch (const TraceError& e) {
      sink.skip(job.index, job.where, job.byte, e.what());
      return;
    }
    fn(job.index, set);
    sink.add(set.diagnostics);
  });

  std::string buf;
  size_t pos = 0;     // scan position in buf
  uint64_t base = 0;  // file offset of buf[0]
  enum class Mode { prefix, data, after, whole } mode = Mode::prefix;
  std::array<char, 3> open{};  // bracket kinds at depths 0..2
  int depth = 0;
  bool in_string = false, escaped = false, eof = false, bad_element = false;
  size_t string_start = 0;
  std::string last_string;  // prefix mode: the last string at depth 1 (a key)
  size_t unit_start = std::string::npos, index = 0;
  auto fail = [&](size_t at, const char* what) {
    throw TraceError(source, "byte " + std::to_string(base + at),
                     std::string("invalid JSON: ") + what);
  };
  // A trace of 4 chunks or more is read span by span: its spans in batches as they
  // arrive (the bytes of a batch are released once read), the rest of it (its skeleton:
  // the trace object with an empty "spans" array, "processes" included) kept and read
  // when the trace ends. Memory: a chunk, the skeleton and the trace's SpanSet.
  constexpr size_t npos = std::string::npos;
  enum class In { other, spans, processes };
  struct BigTrace {
    bool on = false;
    std::unique_ptr<JaegerReader> reader;
    size_t index = 0;
    uint64_t byte = 0;
    std::string where, key;  // key: the last string at depth 3 (a member's name)
    In in = In::other;
    bool had_spans = false;
    size_t batch = npos;     // spans: start of the bytes not read yet
    size_t last_end = npos;  // spans: end of the last complete element
    size_t elem = npos;      // processes: its '{'
    size_t copied = npos;    // skeleton: buf[copied, ...) not appended yet (npos in spans)
    std::string skeleton, processes;
    size_t spans = 0;   // spans read
    std::string error;  // the first error: the trace is skipped
  } big;
  dom::parser big_parser;
  std::string batch_text;
  auto big_fail = [&](std::string error) {
    if (big.error.empty()) big.error = std::move(error);
  };
  // Reads the spans in buf[big.batch, upto) (complete elements after an optional comma).
  auto big_flush = [&](size_t upto) {
    if (big.batch == npos || upto == npos || upto <= big.batch) return;
    if (big.error.empty()) {
      std::string_view t(buf.data() + big.batch, upto - big.batch);
      size_t lead = 0;
      while (lead < t.size() &&
             (t[lead] == ' ' || t[lead] == '\t' || t[lead] == '\r' || t[lead] == '\n'))
        ++lead;
      if (lead < t.size() && t[lead] == ',') ++lead;
      batch_text.assign("[");
      batch_text.append(t.substr(lead));
      batch_text.append("]");
      const size_t len = batch_text.size();
      batch_text.append(simdjson::SIMDJSON_PADDING, ' ');
      dom::element batch;
      if (auto err = big_parser.parse(batch_text.data(), len, false).get(batch)) {
        const size_t off = json::error_offset(std::string_view(batch_text).substr(0, len));
        big_fail(source + ": byte " +
                 std::to_string(base + big.batch + lead + (off > 0 ? off - 1 : 0)) +
                 ": invalid JSON: " + simdjson::error_message(err));
      } else {
        try {
          big.reader->spans(batch, big.where, big.spans);
        } catch (const TraceError& e) {
          big_fail(e.what());
        }
      }
    }
    big.batch = upto;
  };
  // The trace ends (cut: the file ends inside it): its SpanSet to a worker, or skipped.
  auto big_finish = [&](bool cut) {
    SpanSet set;
    if (big.error.empty()) {
      try {
        JaegerReader& r = *big.reader;
        if (cut) {
          r.cut_ = true;
          r.set_.count("truncated_file", 1);
          dom::element procs;
          if (!big.processes.empty()) {
            if (auto err = big_parser.parse(big.processes).get(procs))
              big_fail(source + ": " + big.where +
                       ": invalid JSON in \"processes\": " + simdjson::error_message(err));
            else
              r.cut_processes(procs, big.where);
          }
        } else {
          dom::element root;
          if (auto err = big_parser.parse(big.skeleton).get(root))
            big_fail(source + ": byte " + std::to_string(big.byte) + ": " + big.where +
                     ": invalid JSON outside its spans: " + simdjson::error_message(err));
          else
            r.trace(root, big.where);
        }
        if (big.error.empty()) {
          r.resolve_deferred();
          set = r.done();
        }
      } catch (const TraceError& e) {
        big_fail(e.what());
      }
    }
    if (!big.error.empty()) {
      sink.skip(big.index, big.where, big.byte, big.error);
    } else {
      UnitWorkers::Job job;
      job.index = big.index;
      job.ready = true;
      job.set = std::move(set);
      workers.push(std::move(job));
    }
    big = BigTrace{};
  };
  for (;;) {
    if (pos == buf.size()) {
      if (eof) break;
      if (mode == Mode::data && !big.on && unit_start != npos &&
          buf.size() - unit_start >= 4 * kChunk) {
        // A large trace: read again from its start, span by span.
        ++out.span_by_span;
        big.on = true;
        big.reader = std::make_unique<JaegerReader>(source, "jaeger");
        big.index = index;
        big.byte = base + unit_start;
        big.where = "data[" + std::to_string(index) + "]";
        big.copied = unit_start;
        pos = unit_start;
        depth = 2;
        in_string = escaped = false;
        continue;
      }
      if (big.on) {
        if (big.in == In::spans) big_flush(big.last_end);
        size_t keep = pos;
        if (big.in == In::spans) keep = std::min(keep, big.batch);
        if (big.in == In::processes) keep = std::min(keep, big.elem);
        if (in_string && depth == 3) keep = std::min(keep, string_start);
        if (big.copied != npos) {
          big.skeleton.append(buf, big.copied, pos - big.copied);
          big.copied = pos;
        }
        buf.erase(0, keep);
        base += keep;
        pos -= keep;
        for (size_t* x : {&big.batch, &big.last_end, &big.elem, &big.copied, &string_start})
          if (*x != npos) *x = *x >= keep ? *x - keep : 0;
        unit_start = 0;
      } else if (mode == Mode::data || mode == Mode::after) {
        const size_t keep = unit_start != std::string::npos ? unit_start : pos;
        buf.erase(0, keep);
        base += keep;
        pos -= keep;
        if (unit_start != std::string::npos) unit_start = 0;
      }
      // A trace larger than a few chunks: room for the rest of the file at once, so that
      // growing the buffer never holds two copies (pages not read into cost nothing).
      if (buf.size() >= 16 * kChunk && buf.size() + kChunk > buf.capacity())
        buf.reserve(buf.size() + reader.remaining() + kChunk + simdjson::SIMDJSON_PADDING);
      if (reader.append(buf, kChunk) == 0) eof = true;
      continue;
    }
    const char* p = buf.data() + pos;
    const char* const end = buf.data() + buf.size();
    if (in_string) {
      p = string_end(p, end, escaped);
      pos = static_cast<size_t>(p - buf.data());
      if (p == end) continue;
      in_string = false;
      if (mode == Mode::prefix && depth == 1)
        last_string.assign(buf, string_start, pos - string_start);
      if (big.on && depth == 3) big.key.assign(buf, string_start, pos - string_start);
      ++pos;
      continue;
    }
    if (big.on && depth >= 3) {
      // Inside a trace read span by span: as the loop below, and it notes the members
      // "spans" (batches of spans) and "processes", and keeps the rest as the skeleton.
      while (p < end) {
        if (depth >= 5) {
          // Inside a span (or deeper in the skeleton): up to the bracket back to depth 4.
          p = scan_inside(p, end, depth, 5, in_string, escaped);
          if (p == end) break;
        }
        p = skip_plain(p, end);
        if (p == end) break;
        const char x = *p;
        const size_t at = static_cast<size_t>(p - buf.data());
        if (x == '"') {
          p = string_end(p + 1, end, escaped);
          if (p == end) {
            in_string = true;
            string_start = at + 1;
            break;
          }
          if (depth == 3) big.key.assign(buf, at + 1, static_cast<size_t>(p - buf.data()) - at - 1);
          ++p;
        } else if (x == '{' || x == '[') {
          if (depth == 3) {
            big.in = In::other;
            if (x == '[' && big.key == "spans" && !big.had_spans) {
              big.in = In::spans;
              big.had_spans = true;
              big.skeleton.append(buf, big.copied, at + 1 - big.copied);
              big.copied = npos;
              big.batch = at + 1;
              big.last_end = npos;
            } else if (x == '{' && big.key == "processes") {
              big.in = In::processes;
              big.elem = at;
            }
          }
          ++depth;
          ++p;
        } else if (depth > 3) {
          --depth;
          if (depth == 4 && big.in == In::spans) {
            big.last_end = at + 1;
          } else if (depth == 3 && big.in == In::spans) {  // the end of "spans"
            big_flush(at);
            big.batch = big.last_end = npos;
            big.copied = at;
            big.in = In::other;
          } else if (depth == 3 && big.in == In::processes) {
            // A cut trace keeps what precedes its last complete span (as parse_jaeger
            // does): "processes" only when they come before "spans".
            if (!big.had_spans) big.processes.assign(buf, big.elem, at + 1 - big.elem);
            big.elem = npos;
            big.in = In::other;
          }
          ++p;
        } else {
          break;  // the end of the trace (handled below)
        }
      }
      pos = static_cast<size_t>(p - buf.data());
      if (p == end) continue;
    }
    if (depth >= 3) {
      // Inside a trace, its brackets and strings only, up to the bracket that closes the
      // trace itself (handled below).
      p = scan_inside(p, end, depth, 3, in_string, escaped);
      pos = static_cast<size_t>(p - buf.data());
      if (p == end) continue;
    }
    const char c = *p;
    switch (c) {
      case ' ':
      case '\t':
      case '\r':
      case '\n':
        break;
      case '"':
        in_string = true;
        string_start = pos + 1;
        if (mode == Mode::data && depth == 2 && unit_start == std::string::npos) bad_element = true;
        break;
      case '{':
      case '[':
        if (depth == 0 && mode == Mode::prefix && c != '{') mode = Mode::whole;
        if (mode == Mode::prefix && depth == 1 && c == '[' && last_string == "data") {
          mode = Mode::data;
          last_string.clear();
        } else if (mode == Mode::data && depth == 2 && unit_start == std::string::npos) {
          if (c == '{')
            unit_start = pos;
          else
            bad_element = true;
        }
        if (depth < 3) open[static_cast<size_t>(depth)] = c;
        ++depth;
        break;
      case '}':
      case ']':
        if (depth == 0) fail(pos, "unbalanced closing bracket");
        --depth;
        if (depth < 3 && open[static_cast<size_t>(depth)] != (c == '}' ? '{' : '['))
          fail(pos, "mismatched closing bracket");
        if (mode == Mode::data && depth == 2 && big.on) {
          big.skeleton.append(buf, big.copied, pos + 1 - big.copied);
          big_finish(false);
          ++index;
          unit_start = npos;
        } else if (mode == Mode::data && depth == 2 && unit_start != std::string::npos) {
          UnitWorkers::Job job;
          job.index = index++;
          job.byte = base + unit_start;
          job.where = "data[" + std::to_string(job.index) + "]";
          job.len = pos + 1 - unit_start;
          if (job.len < 4 * kChunk) {
            job.bytes.reserve(job.len + simdjson::SIMDJSON_PADDING);
            job.bytes.assign(buf, unit_start, job.len);
          } else {
            // A large trace is not copied: the buffer goes with it, the rest stays.
            std::string rest(buf, pos + 1);
            job.bytes = std::move(buf);
            job.bytes.resize(pos + 1);
            job.off = unit_start;
            buf = std::move(rest);
            base += pos + 1;
            pos = static_cast<size_t>(-1);  // ++pos below: 0
          }
          job.bytes.append(simdjson::SIMDJSON_PADDING, ' ');
          unit_start = std::string::npos;
          workers.push(std::move(job));
        } else if (mode == Mode::data && depth == 1) {
          if (bad_element) {
            sink.skip(index, "data[" + std::to_string(index) + "]", base + pos,
                      source + ": data[" + std::to_string(index) + "]: must be an object");
            ++index;
            bad_element = false;
          }
          mode = Mode::after;
        }
        break;
      case ',':
        if (mode == Mode::data && depth == 2 && bad_element) {
          sink.skip(index, "data[" + std::to_string(index) + "]", base + pos,
                    source + ": data[" + std::to_string(index) + "]: must be an object");
          ++index;
          bad_element = false;
        }
        break;
      default:
        if (depth == 0) {
          if (mode == Mode::prefix && (c == '\xEF' || c == '\xBB' || c == '\xBF')) break;  // BOM
          if (mode == Mode::prefix) mode = Mode::whole;
          if (mode == Mode::after) fail(pos, "text after the document");
        }
        if (mode == Mode::data && depth == 2 && unit_start == std::string::npos) bad_element = true;
        break;
    }
    if (mode == Mode::whole) break;
    if (depth == 0 && mode == Mode::prefix && (c == '}' || c == ']')) {
      mode = Mode::whole;  // a document without a "data" array
      break;
    }
    ++pos;
  }
  if (mode == Mode::prefix || mode == Mode::whole) {
    // Not a stream of traces: the whole file at once (an error is the file's).
    workers.finish();
    while (reader.append(buf, kChunk) > 0) {
    }
    SpanSet set = parse_jaeger(buf, source);
    fn(0, set);
    out.units = 1;
    out.diagnostics = set.diagnostics;
    return;
  }
  if (depth > 0) {
    if (big.on) {
      if (big.in == In::spans) big_flush(big.last_end);
      big_finish(true);
      ++index;
    } else if (unit_start != std::string::npos) {
      UnitWorkers::Job job;
      job.index = index++;
      job.byte = base + unit_start;
      job.where = "data[" + std::to_string(job.index) + "]";
      job.len = buf.size() - unit_start;
      job.bytes.assign(buf, unit_start, job.len);
      job.cut = true;
      workers.push(std::move(job));
    } else {
      sink.add({{"jaeger.truncated_file", 1}});
    }
  }
  workers.finish();
  workers.rethrow();
  out.units = index;
  sink.finish(out);
}

}  // namespace snailtrail::importers::otel_detail

namespace snailtrail::importers {

using namespace otel_detail;

void set_stream_chunk_bytes(size_t bytes) {
  kChunk = std::max<size_t>(bytes, 1);
}

SpanStream stream_spans(const std::string& path, std::string_view importer, unsigned threads,
                        const SpanUnitFn& fn, size_t trace_gap) {
  std::string_view name = importer;
  if (name == "auto") name = detect_importer(path).name;
  SpanStream out;
  if (name == "jaeger") {
    stream_jaeger(path, threads, fn, out);
    return out;
  }
  if (name == "otlp") {
    stream_otlp(path, threads, std::max<size_t>(trace_gap, 1), fn, out);
    return out;
  }
  // The errors of other formats, as read_spans gives them.
  SpanSet set = read_spans(path, name);
  out.source = set.source;
  out.format = set.format;
  fn(0, set);
  out.units = 1;
  out.diagnostics = set.diagnostics;
  return out;
}

}  // namespace snailtrail::importers
