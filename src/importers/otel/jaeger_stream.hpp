// The Jaeger stream (stream_jaeger): a scan of the file for the traces of its "data" array
// (jaeger_stream.cpp), the traces too large to hold read span by span
// (jaeger_big_trace.cpp). Internal to the span importers.
#pragma once

#include "importers/otel/span_stream.hpp"

namespace snailtrail::importers::otel_detail {

inline std::string data_where(size_t index) {
  return "data[" + std::to_string(index) + "]";
}

// On a worker thread: one trace of the "data" array to its SpanSet and to `fn`. A trace
// read span by span arrives ready; one the file cuts short keeps its complete spans, as
// parse_jaeger keeps them; a trace that fails to read is skipped.
void read_trace_unit(UnitWorkers::Job& job, dom::parser& parser, const std::string& source,
                     const SpanUnitFn& fn, StreamSink& sink);

// Jaeger: the elements of the top-level "data" array, found by a scan that follows
// strings and brackets only; each is parsed on its own (read_trace_unit). A file of
// another shape (one trace object, "data" not an array, not an object at the top) is
// read whole, as parse_jaeger does.
//
// The scan keeps a buffer of the file from the start of the trace it is in. A trace of
// 4 chunks or more is read span by span: its spans in batches as they arrive (the bytes
// of a batch are released once read), the rest of it (its skeleton: the trace object
// with an empty "spans" array, "processes" included) kept and read when the trace ends.
// Memory: a chunk, the skeleton and the trace's SpanSet.
class JaegerStream {
 public:
  JaegerStream(const std::string& path, unsigned threads, const SpanUnitFn& fn, SpanStream& out)
      : reader_(path),
        source_(reader_.source()),
        fn_(fn),
        out_(out),
        workers_(threads, [this](UnitWorkers::Job& job, dom::parser& parser) {
          read_trace_unit(job, parser, source_, fn_, sink_);
        }) {
    out_.source = source_;
    out_.format = "jaeger";
  }

  void run() {
    scan();
    if (mode_ == Mode::prefix || mode_ == Mode::whole)
      read_whole();
    else
      finish();
  }

 private:
  static constexpr size_t npos = std::string::npos;

  // Where the scan is: before "data", inside its array, after it, or in a file read whole.
  enum class Mode { prefix, data, after, whole };
  // The member of a trace read span by span the scan is in.
  enum class In { other, spans, processes };
  // The trace read span by span, while the scan is in one (`on`).
  struct BigTrace {
    bool on = false;
    std::unique_ptr<JaegerReader> reader;
    size_t index = 0;
    uint64_t byte = 0;
    std::string where, key;  // key: the last string at depth 3 (a member's name)
    In in = In::other;
    bool had_spans = false;
    size_t batch = npos;       // spans: start of the bytes not read yet
    size_t last_end = npos;    // spans: end of the last complete element
    size_t elem = npos;        // processes: its '{'
    size_t copied = npos;      // skeleton: buf[copied, ...) not appended yet (npos in spans)
    size_t spans_open = npos;  // skeleton: its length up to the '[' of "spans"
    std::string skeleton, processes;
    size_t spans = 0;   // spans read
    std::string error;  // the first error: the trace is skipped
  };

  // --- The scan: the structure of the file outside its traces, brackets inside them.

  // Up to the end of the file, or up to the point the file shows it is read whole.
  void scan();
  // Malformed JSON outside the traces: the file's error, at file byte base_ + at.
  [[noreturn]] void fail(size_t at, const char* what) const;
  // The buffer is read up to its end: drops what no unit needs any more, then reads on.
  void release_read_bytes();
  void read_chunk();

  // A string started in an earlier chunk: up to its closing quote (a member's name at
  // depth 1 before "data", or at depth 3 in a trace read span by span).
  void end_string();

  // Inside a trace: its brackets and strings only, up to the bracket that closes the
  // trace itself (left at pos_ for token()); false if the buffer ran out first.
  bool skip_inside_trace();

  // One byte outside the traces (depth 0 to 2).
  void token(char c);
  // In the "data" array, not inside one of its elements.
  bool between_traces() const { return mode_ == Mode::data && depth_ == 2 && unit_start_ == npos; }

  // A bracket at depth 0 to 2: "data" opens, a trace opens or ends, "data" ends.
  void open_bracket(char c);
  void close_bracket(char c);

  // An element of "data" that is not an object: skipped, counted as a trace.
  void skip_bad_element();

  // --- Emitting: a complete trace, buf_[unit_start_, pos_], to the workers.
  void push_trace();

  // Not a stream of traces: the whole file at once (an error is the file's).
  void read_whole();

  // The end of a stream of traces; a file that ends inside a trace gives its complete spans.
  void finish();

  // --- A trace read span by span (BigTrace).

  // The buffer holds 4 chunks of one trace not yet complete.
  bool big_trace_due() const {
    return mode_ == Mode::data && !big_.on && unit_start_ != npos &&
           buf_.size() - unit_start_ >= 4 * kChunk;
  }

  // Reads the trace again from its start, span by span.
  void start_big();

  // Keeps what the trace still needs: the spans not read, an open "processes" object, a
  // member's name cut by the chunk; the rest of the skeleton goes to big_.skeleton.
  void release_big_trace_bytes();

  // Inside the trace (depth 3 and more): as scan_inside, and it notes the members "spans"
  // (batches of spans) and "processes". Stops at the trace's closing bracket or at end.
  const char* scan_big_trace(const char* p, const char* const end);

  // A member of the trace opens at buf_[at] (its name in big_.key).
  void big_member_opens(char x, size_t at);

  // A bracket at buf_[at] closes: a span (back at depth 4), or a member of the trace.
  void big_bracket_closes(size_t at);

  // The first error of the trace wins; the trace is skipped at its end.
  void big_fail(std::string error);
  // Reads the spans in buf_[big_.batch, upto) (complete elements after an optional comma).
  void big_flush(size_t upto);

  // The trace ends (cut: the file ends inside it): its SpanSet to a worker, or skipped.
  void big_finish(bool cut);

  // What the trace holds besides its spans: the skeleton, or a cut trace's "processes".
  void read_big_rest(bool cut);
  // A cut trace: whether the whole-file import keeps its spans too (its text up to
  // "spans" starts a document whose cut point is in that array, json_prefix.hpp).
  bool cut_spans_kept();

  ChunkReader reader_;
  const std::string& source_;
  const SpanUnitFn& fn_;
  SpanStream& out_;
  StreamSink sink_;

  // The scan: buf_ holds the file from byte base_; pos_ is the next byte to look at.
  std::string buf_;
  size_t pos_ = 0;
  uint64_t base_ = 0;
  Mode mode_ = Mode::prefix;
  std::array<char, 3> open_{};  // bracket kinds at depths 0..2
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, eof_ = false, bad_element_ = false;
  size_t string_start_ = 0;
  std::string last_string_;  // prefix mode: the last string at depth 1 (a key)
  size_t unit_start_ = npos, index_ = 0;

  BigTrace big_;
  dom::parser big_parser_;
  std::string batch_text_;

  // Last: its threads stop (in its destructor) before the members they use go.
  UnitWorkers workers_;
};

}  // namespace snailtrail::importers::otel_detail
