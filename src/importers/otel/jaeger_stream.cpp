// Jaeger JSON read as a stream of traces (otel_importer.hpp, stream_spans): the scan of
// the file and the traces it hands to the workers (jaeger_stream.hpp), and the entry
// point of the span streams.
#include "importers/otel/jaeger_stream.hpp"

namespace snailtrail::importers::otel_detail {

void read_trace_unit(UnitWorkers::Job& job, dom::parser& parser, const std::string& source,
                     const SpanUnitFn& fn, StreamSink& sink) {
  if (job.ready) {
    fn(job.index, job.set);
    sink.add(job.set.diagnostics);
    return;
  }
  SpanSet set;
  try {
    if (job.cut) {
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
}

// --- The scan: the structure of the file outside its traces, brackets inside them.

void JaegerStream::scan() {
  for (;;) {
    if (pos_ == buf_.size()) {
      if (eof_) return;
      if (big_trace_due()) {
        start_big();
        continue;
      }
      release_read_bytes();
      read_chunk();
      continue;
    }
    if (in_string_) {
      end_string();
      continue;
    }
    if (depth_ >= 3 && !skip_inside_trace()) continue;
    const char c = buf_[pos_];
    token(c);
    if (mode_ == Mode::whole) return;
    if (depth_ == 0 && mode_ == Mode::prefix && (c == '}' || c == ']')) {
      mode_ = Mode::whole;  // a document without a "data" array
      return;
    }
    ++pos_;
  }
}

void JaegerStream::fail(size_t at, const char* what) const {
  throw TraceError(source_, "byte " + std::to_string(base_ + at),
                   std::string("invalid JSON: ") + what);
}

void JaegerStream::release_read_bytes() {
  if (big_.on) {
    release_big_trace_bytes();
  } else if (mode_ == Mode::data || mode_ == Mode::after) {
    const size_t keep = unit_start_ != npos ? unit_start_ : pos_;
    buf_.erase(0, keep);
    base_ += keep;
    pos_ -= keep;
    if (unit_start_ != npos) unit_start_ = 0;
  }
}

void JaegerStream::read_chunk() {
  // A trace larger than a few chunks: room for the rest of the file at once, so that
  // growing the buffer never holds two copies (pages not read into cost nothing).
  if (buf_.size() >= 16 * kChunk && buf_.size() + kChunk > buf_.capacity())
    buf_.reserve(buf_.size() + reader_.remaining() + kChunk + simdjson::SIMDJSON_PADDING);
  if (reader_.append(buf_, kChunk) == 0) eof_ = true;
}

void JaegerStream::end_string() {
  const char* const end = buf_.data() + buf_.size();
  const char* p = string_end(buf_.data() + pos_, end, escaped_);
  pos_ = static_cast<size_t>(p - buf_.data());
  if (p == end) return;
  in_string_ = false;
  if (mode_ == Mode::prefix && depth_ == 1)
    last_string_.assign(buf_, string_start_, pos_ - string_start_);
  if (big_.on && depth_ == 3) big_.key.assign(buf_, string_start_, pos_ - string_start_);
  ++pos_;
}

bool JaegerStream::skip_inside_trace() {
  const char* const end = buf_.data() + buf_.size();
  const char* p = buf_.data() + pos_;
  if (big_.on) {
    p = scan_big_trace(p, end);
    pos_ = static_cast<size_t>(p - buf_.data());
    if (p == end) return false;
  }
  if (depth_ >= 3) {
    p = scan_inside(p, end, depth_, 3, in_string_, escaped_);
    pos_ = static_cast<size_t>(p - buf_.data());
    if (p == end) return false;
  }
  return true;
}

void JaegerStream::token(char c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\r':
    case '\n':
      return;
    case '"':
      in_string_ = true;
      string_start_ = pos_ + 1;
      if (between_traces()) bad_element_ = true;
      return;
    case '{':
    case '[':
      open_bracket(c);
      return;
    case '}':
    case ']':
      close_bracket(c);
      return;
    case ',':
      if (mode_ == Mode::data && depth_ == 2 && bad_element_) skip_bad_element();
      return;
    default:
      if (depth_ == 0) {
        if (mode_ == Mode::prefix && (c == '\xEF' || c == '\xBB' || c == '\xBF')) return;  // BOM
        if (mode_ == Mode::prefix) mode_ = Mode::whole;
        if (mode_ == Mode::after) fail(pos_, "text after the document");
      }
      if (between_traces()) bad_element_ = true;
      return;
  }
}

void JaegerStream::open_bracket(char c) {
  if (depth_ == 0 && mode_ == Mode::prefix && c != '{') mode_ = Mode::whole;
  if (mode_ == Mode::prefix && depth_ == 1 && c == '[' && last_string_ == "data") {
    mode_ = Mode::data;
    last_string_.clear();
  } else if (between_traces()) {
    if (c == '{')
      unit_start_ = pos_;
    else
      bad_element_ = true;
  }
  if (depth_ < 3) open_[static_cast<size_t>(depth_)] = c;
  ++depth_;
}

void JaegerStream::close_bracket(char c) {
  if (depth_ == 0) fail(pos_, "unbalanced closing bracket");
  --depth_;
  if (depth_ < 3 && open_[static_cast<size_t>(depth_)] != (c == '}' ? '{' : '['))
    fail(pos_, "mismatched closing bracket");
  if (mode_ != Mode::data) return;
  if (depth_ == 2 && big_.on) {  // the end of a trace read span by span
    big_.skeleton.append(buf_, big_.copied, pos_ + 1 - big_.copied);
    big_finish(false);
    ++index_;
    unit_start_ = npos;
  } else if (depth_ == 2 && unit_start_ != npos) {
    push_trace();
  } else if (depth_ == 1) {  // the end of "data"
    if (bad_element_) skip_bad_element();
    mode_ = Mode::after;
  }
}

void JaegerStream::skip_bad_element() {
  sink_.skip(index_, data_where(index_), base_ + pos_,
             source_ + ": " + data_where(index_) + ": must be an object");
  ++index_;
  bad_element_ = false;
}

void JaegerStream::push_trace() {
  UnitWorkers::Job job;
  job.index = index_++;
  job.byte = base_ + unit_start_;
  job.where = data_where(job.index);
  job.len = pos_ + 1 - unit_start_;
  if (job.len < 4 * kChunk) {
    job.bytes.reserve(job.len + simdjson::SIMDJSON_PADDING);
    job.bytes.assign(buf_, unit_start_, job.len);
  } else {
    // A large trace is not copied: the buffer goes with it, the rest stays.
    std::string rest(buf_, pos_ + 1);
    job.bytes = std::move(buf_);
    job.bytes.resize(pos_ + 1);
    job.off = unit_start_;
    buf_ = std::move(rest);
    base_ += pos_ + 1;
    pos_ = static_cast<size_t>(-1);  // ++pos_ in scan(): 0
  }
  job.bytes.append(simdjson::SIMDJSON_PADDING, ' ');
  unit_start_ = npos;
  workers_.push(std::move(job));
}

void JaegerStream::read_whole() {
  workers_.finish();
  while (reader_.append(buf_, kChunk) > 0) {
  }
  SpanSet set = parse_jaeger(buf_, source_);
  fn_(0, set);
  out_.units = 1;
  out_.diagnostics = set.diagnostics;
}

void JaegerStream::finish() {
  if (depth_ > 0) {
    if (big_.on) {
      if (big_.in == In::spans) big_flush(big_.last_end);
      big_finish(true);
      ++index_;
    } else if (unit_start_ != npos) {
      UnitWorkers::Job job;
      job.index = index_++;
      job.byte = base_ + unit_start_;
      job.where = data_where(job.index);
      job.len = buf_.size() - unit_start_;
      job.bytes.assign(buf_, unit_start_, job.len);
      job.cut = true;
      workers_.push(std::move(job));
    } else {
      sink_.add(kJaegerDiagnostics, SpanDiagnostic::truncated_file, 1);
    }
  }
  workers_.finish();
  workers_.rethrow();
  out_.units = index_;
  sink_.finish(out_);
}

void stream_jaeger(const std::string& path, unsigned threads, const SpanUnitFn& fn,
                   SpanStream& out) {
  JaegerStream(path, threads, fn, out).run();
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
