// A Jaeger trace too large to hold as one document, read span by span as the stream scans
// it (jaeger_stream.hpp, BigTrace): its spans in batches, the rest of it at its end.
#include "importers/otel/jaeger_stream.hpp"

namespace snailtrail::importers::otel_detail {

void JaegerStream::start_big() {
  ++out_.span_by_span;
  big_.on = true;
  big_.reader = std::make_unique<JaegerReader>(source_, "jaeger");
  big_.index = index_;
  big_.byte = base_ + unit_start_;
  big_.where = data_where(index_);
  big_.copied = unit_start_;
  pos_ = unit_start_;
  depth_ = 2;
  in_string_ = escaped_ = false;
}

void JaegerStream::release_big_trace_bytes() {
  if (big_.in == In::spans) big_flush(big_.last_end);
  size_t keep = pos_;
  if (big_.in == In::spans) keep = std::min(keep, big_.batch);
  if (big_.in == In::processes) keep = std::min(keep, big_.elem);
  if (in_string_ && depth_ == 3) keep = std::min(keep, string_start_);
  if (big_.copied != npos) {
    big_.skeleton.append(buf_, big_.copied, pos_ - big_.copied);
    big_.copied = pos_;
  }
  buf_.erase(0, keep);
  base_ += keep;
  pos_ -= keep;
  for (size_t* x : {&big_.batch, &big_.last_end, &big_.elem, &big_.copied, &string_start_})
    if (*x != npos) *x = *x >= keep ? *x - keep : 0;
  unit_start_ = 0;
}

const char* JaegerStream::scan_big_trace(const char* p, const char* const end) {
  while (p < end) {
    if (depth_ >= 5) {
      // Inside a span (or deeper in the skeleton): up to the bracket back to depth 4.
      p = scan_inside(p, end, depth_, 5, in_string_, escaped_);
      if (p == end) break;
    }
    p = skip_plain(p, end);
    if (p == end) break;
    const char x = *p;
    const size_t at = static_cast<size_t>(p - buf_.data());
    if (x == '"') {
      p = string_end(p + 1, end, escaped_);
      if (p == end) {
        in_string_ = true;
        string_start_ = at + 1;
        break;
      }
      if (depth_ == 3) big_.key.assign(buf_, at + 1, static_cast<size_t>(p - buf_.data()) - at - 1);
      ++p;
    } else if (x == '{' || x == '[') {
      if (depth_ == 3) big_member_opens(x, at);
      ++depth_;
      ++p;
    } else if (depth_ > 3) {
      --depth_;
      big_bracket_closes(at);
      ++p;
    } else {
      break;  // the end of the trace (close_bracket)
    }
  }
  return p;
}

void JaegerStream::big_member_opens(char x, size_t at) {
  big_.in = In::other;
  if (x == '[' && big_.key == "spans" && !big_.had_spans) {
    big_.in = In::spans;
    big_.had_spans = true;
    big_.skeleton.append(buf_, big_.copied, at + 1 - big_.copied);
    big_.spans_open = big_.skeleton.size();
    big_.copied = npos;
    big_.batch = at + 1;
    big_.last_end = npos;
  } else if (x == '{' && big_.key == "processes") {
    big_.in = In::processes;
    big_.elem = at;
  }
}

void JaegerStream::big_bracket_closes(size_t at) {
  if (depth_ == 4 && big_.in == In::spans) {
    big_.last_end = at + 1;
  } else if (depth_ == 3 && big_.in == In::spans) {  // the end of "spans"
    big_flush(at);
    big_.batch = big_.last_end = npos;
    big_.copied = at;
    big_.in = In::other;
  } else if (depth_ == 3 && big_.in == In::processes) {
    // A cut trace keeps what precedes its last complete span (as parse_jaeger does):
    // "processes" only when they come before "spans".
    if (!big_.had_spans) big_.processes.assign(buf_, big_.elem, at + 1 - big_.elem);
    big_.elem = npos;
    big_.in = In::other;
  }
}

void JaegerStream::big_fail(std::string error) {
  if (big_.error.empty()) big_.error = std::move(error);
}

void JaegerStream::big_flush(size_t upto) {
  if (big_.batch == npos || upto == npos || upto <= big_.batch) return;
  if (big_.error.empty()) {
    std::string_view t(buf_.data() + big_.batch, upto - big_.batch);
    size_t lead = 0;
    while (lead < t.size() &&
           (t[lead] == ' ' || t[lead] == '\t' || t[lead] == '\r' || t[lead] == '\n'))
      ++lead;
    if (lead < t.size() && t[lead] == ',') ++lead;
    batch_text_.assign("[");
    batch_text_.append(t.substr(lead));
    batch_text_.append("]");
    const size_t len = batch_text_.size();
    batch_text_.append(simdjson::SIMDJSON_PADDING, ' ');
    dom::element batch;
    if (auto err = big_parser_.parse(batch_text_.data(), len, false).get(batch)) {
      const size_t off = json::error_offset(std::string_view(batch_text_).substr(0, len));
      big_fail(source_ + ": byte " +
               std::to_string(base_ + big_.batch + lead + (off > 0 ? off - 1 : 0)) +
               ": invalid JSON: " + simdjson::error_message(err));
    } else {
      try {
        big_.reader->spans(batch, big_.where, big_.spans);
      } catch (const TraceError& e) {
        big_fail(e.what());
      }
    }
  }
  big_.batch = upto;
}

void JaegerStream::big_finish(bool cut) {
  SpanSet set;
  if (big_.error.empty()) {
    try {
      read_big_rest(cut);
      if (big_.error.empty()) {
        big_.reader->resolve_deferred();
        set = big_.reader->done();
      }
    } catch (const TraceError& e) {
      big_fail(e.what());
    }
  }
  if (!big_.error.empty()) {
    sink_.skip(big_.index, big_.where, big_.byte, big_.error);
  } else {
    UnitWorkers::Job job;
    job.index = big_.index;
    job.ready = true;
    job.set = std::move(set);
    workers_.push(std::move(job));
  }
  big_ = BigTrace{};
}

void JaegerStream::read_big_rest(bool cut) {
  JaegerReader& r = *big_.reader;
  if (cut) {
    // The scan notes members by their last string, not by JSON's syntax: damage before
    // "spans" must make the trace as invalid as it makes the whole-file import.
    if (big_.had_spans && !cut_spans_kept())
      return big_fail(source_ + ": byte " + std::to_string(big_.byte) + ": " + big_.where +
                      ": invalid JSON before its spans");
    r.cut_ = true;
    r.set_.count(SpanDiagnostic::truncated_file, 1);
    dom::element procs;
    if (big_.processes.empty()) return;
    if (auto err = big_parser_.parse(big_.processes).get(procs))
      big_fail(source_ + ": " + big_.where +
               ": invalid JSON in \"processes\": " + simdjson::error_message(err));
    else
      r.cut_processes(procs, big_.where);
  } else {
    dom::element root;
    if (auto err = big_parser_.parse(big_.skeleton).get(root))
      big_fail(source_ + ": byte " + std::to_string(big_.byte) + ": " + big_.where +
               ": invalid JSON outside its spans: " + simdjson::error_message(err));
    else
      r.trace(root, big_.where);
  }
}

bool JaegerStream::cut_spans_kept() {
  const std::string text = "{\"data\": [" + big_.skeleton.substr(0, big_.spans_open);
  const std::optional<json::CutDocument> cut = json::close_cut_document(text, kJaegerRecordArrays);
  if (!cut || cut->kept != text.size()) return false;
  const simdjson::padded_string padded(cut->closed);
  dom::element root;
  return !big_parser_.parse(padded).get(root);
}

}  // namespace snailtrail::importers::otel_detail
