// OTLP/JSON read as a stream of traces (otel_importer.hpp, stream_spans).
#include "importers/otel/span_stream.hpp"

namespace snailtrail::importers::otel_detail {

namespace {

// OTLP: top-level documents (one request per line, or one request over the whole file),
// each parsed on its own; their spans are gathered per trace id, and a trace is complete
// once `gap` documents have followed its last span (or at the end of the file).
class OtlpStream {
 public:
  OtlpStream(const std::string& path, unsigned threads, size_t gap, const SpanUnitFn& fn,
             SpanStream& out)
      : reader_(path),
        source_(reader_.source()),
        gap_(gap),
        fn_(fn),
        out_(out),
        workers_(threads, [this](UnitWorkers::Job& job, dom::parser&) {
          fn_(job.index, job.set);
          sink_.add(job.set.diagnostics);
        }) {
    out_.source = source_;
    out_.format = "otlp";
  }

  void run() {
    scan();
    if (docs_ == 0)
      read_whole();
    else
      finish();
  }

 private:
  static constexpr size_t npos = std::string::npos;
  // A trace whose spans are still gathered: its number, the document of its last span.
  struct Pending {
    SpanSet set;
    size_t index = 0, last_doc = 0;
  };

  // --- The scan: top-level documents, by their brackets (strings skipped).
  void scan();
  void read_chunk();
  // One byte at buf_[pos_] outside strings.
  void token(char c);

  // --- Gathering: a document's spans to the traces they belong to.
  void read_document(std::string_view text, uint64_t byte);
  void gather(const SpanSet& from);
  // The traces no span has joined for `gap_` documents go to the workers.
  void close_quiet();
  void close(Pending& p);

  // --- The end of the file.
  void read_whole();
  void finish();

  ChunkReader reader_;
  const std::string& source_;
  const size_t gap_;
  const SpanUnitFn& fn_;
  SpanStream& out_;
  StreamSink sink_;

  std::unordered_map<std::string, Pending> pending_;
  std::unordered_set<std::string> closed_;
  size_t next_index_ = 0, docs_ = 0;
  uint64_t negative_ = 0, cut_traces_ = 0;
  dom::parser parser_;

  // buf_ holds the file from byte base_; pos_ is the next byte to look at.
  std::string buf_;
  size_t pos_ = 0, doc_start_ = npos;
  uint64_t base_ = 0;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, eof_ = false, scalar_ = false;

  // Last: its threads stop (in its destructor) before the members they use go.
  UnitWorkers workers_;
};

void OtlpStream::scan() {
  for (;;) {
    if (pos_ == buf_.size()) {
      if (eof_) return;
      read_chunk();
      continue;
    }
    if (in_string_) {
      const char* q = string_end(buf_.data() + pos_, buf_.data() + buf_.size(), escaped_);
      pos_ = static_cast<size_t>(q - buf_.data());
      if (pos_ < buf_.size()) {
        in_string_ = false;
        ++pos_;
      }
      continue;
    }
    if (depth_ > 0 && !scalar_) {
      pos_ = static_cast<size_t>(skip_plain(buf_.data() + pos_, buf_.data() + buf_.size()) -
                                 buf_.data());
      if (pos_ == buf_.size()) continue;
    }
    const char c = buf_[pos_];
    if (doc_start_ == npos) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
          (docs_ == 0 && (c == '\xEF' || c == '\xBB' || c == '\xBF'))) {
        ++pos_;
        continue;
      }
      doc_start_ = pos_;
      scalar_ = c != '{' && c != '[';
    }
    token(c);
    ++pos_;
  }
}

void OtlpStream::read_chunk() {
  if (docs_ > 0) {  // before the first document ends, all is kept (see read_whole)
    const size_t keep = doc_start_ != npos ? doc_start_ : pos_;
    buf_.erase(0, keep);
    base_ += keep;
    pos_ -= keep;
    if (doc_start_ != npos) doc_start_ = 0;
  }
  if (reader_.append(buf_, kChunk) == 0) eof_ = true;
}

void OtlpStream::token(char c) {
  if (scalar_) {  // not a request: up to the end of its line, reported as it fails to parse
    if (c == '\n') {
      read_document(std::string_view(buf_).substr(doc_start_, pos_ - doc_start_),
                    base_ + doc_start_);
      doc_start_ = npos;
    }
    return;
  }
  if (c == '"') {
    in_string_ = true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if (c == '}' || c == ']') {
    if (--depth_ == 0) {
      read_document(std::string_view(buf_).substr(doc_start_, pos_ + 1 - doc_start_),
                    base_ + doc_start_);
      doc_start_ = npos;
    }
  }
}

void OtlpStream::read_document(std::string_view text, uint64_t byte) {
  const std::string where = docs_ == 0 ? "" : "document " + std::to_string(docs_ + 1) + ": ";
  const std::string name = "document " + std::to_string(docs_ + 1);
  simdjson::padded_string padded(text);
  dom::element root;
  if (auto err = parser_.parse(padded).get(root)) {
    sink_.skip(docs_, name, byte,
               source_ + ": byte " + std::to_string(byte + json::error_offset(text)) +
                   ": invalid JSON: " + simdjson::error_message(err));
  } else {
    try {
      OtlpReader r(source_, "otlp");
      r.document(root, where);
      negative_ += r.negative_;
      gather(r.set_);
    } catch (const TraceError& e) {
      sink_.skip(docs_, name, byte, e.what());
    }
  }
  ++docs_;
  close_quiet();
}

void OtlpStream::gather(const SpanSet& from) {
  std::string trace;
  for (const Span& s : from.spans) {
    trace.clear();
    from.ids.append(s.trace, trace);
    auto it = pending_.find(trace);
    if (it == pending_.end()) {
      if (closed_.count(trace)) ++cut_traces_;  // a later piece of a trace already computed
      it = pending_.emplace(trace, Pending{}).first;
      it->second.index = next_index_++;
      it->second.set.source = source_;
      it->second.set.format = "otlp";
    }
    Pending& p = it->second;
    p.last_doc = docs_;
    SpanSet& to = p.set;
    copy_span(from, s, to);
  }
}

void OtlpStream::close_quiet() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (docs_ - it->second.last_doc > gap_) {
      close(it->second);
      closed_.insert(it->first);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void OtlpStream::close(Pending& p) {
  resolve_spans(p.set);
  UnitWorkers::Job job;
  job.index = p.index;
  job.set = std::move(p.set);
  workers_.push(std::move(job));
}

// No complete document: the whole file as parse_otlp reads it (a single request cut
// short, or the error of a file that is not OTLP).
void OtlpStream::read_whole() {
  workers_.finish();
  SpanSet set = parse_otlp(buf_, source_);
  fn_(0, set);
  out_.units = 1;
  out_.diagnostics = set.diagnostics;
}

void OtlpStream::finish() {
  if (doc_start_ != npos) {
    // The last request cut short: dropped if it is one line (the collector appending),
    // else reported.
    const std::string_view rest = std::string_view(buf_).substr(doc_start_);
    const size_t last = rest.find_last_not_of(" \t\r\n");
    if (rest.substr(0, last).find('\n') == std::string_view::npos && json::ends_inside_value(rest))
      sink_.add(kOtlpDiagnostics, SpanDiagnostic::truncated_last_line, 1);
    else
      read_document(rest, base_ + doc_start_);
  }
  // The traces still open, in the order they began.
  std::vector<Pending*> left;
  for (auto& [trace, p] : pending_) left.push_back(&p);
  std::sort(left.begin(), left.end(),
            [](const Pending* a, const Pending* b) { return a->index < b->index; });
  for (Pending* p : left) close(*p);
  pending_.clear();
  workers_.finish();
  workers_.rethrow();
  sink_.add(kOtlpDiagnostics, SpanDiagnostic::negative_durations, negative_);
  sink_.add(kOtlpDiagnostics, SpanDiagnostic::cut_traces, cut_traces_);
  out_.units = next_index_;
  sink_.finish(out_);
}

}  // namespace

void stream_otlp(const std::string& path, unsigned threads, size_t gap, const SpanUnitFn& fn,
                 SpanStream& out) {
  OtlpStream(path, threads, gap, fn, out).run();
}

}  // namespace snailtrail::importers::otel_detail
