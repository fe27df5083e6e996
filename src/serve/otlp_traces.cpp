#include "serve/otlp_traces.hpp"

namespace snailtrail::serve {

using importers::Span;
using importers::SpanSet;

// A span of `from` into `to`, its names and ids re-interned there (each trace has its own).
void OpenTraces::copy_span(const SpanSet& from, const Span& s, SpanSet& to) {
  importers::copy_span(from, s, to, text_);
}

void OpenTraces::add(const SpanSet& batch, int64_t now_ns, std::vector<SpanSet>& done) {
  std::string trace;
  for (const Span& s : batch.spans) {
    trace.clear();
    batch.ids.append(s.trace, trace);
    auto it = open_.find(trace);
    if (it == open_.end()) {
      if (open_.size() >= limits_.max_open_traces) {
        ++evicted_;
        complete(order_.front(), done);
      }
      it = open_.emplace(trace, Open{}).first;
      it->second.set.source = batch.source;
      it->second.set.format = "otlp";
      it->second.order = order_.insert(order_.end(), trace);
    } else {
      order_.splice(order_.end(), order_, it->second.order);
    }
    it->second.last_ns = now_ns;
    copy_span(batch, s, it->second.set);
    ++spans_;
    // Over the span bound: the least recent traces go first (this one last).
    while (spans_ > limits_.max_open_spans && !order_.empty()) {
      ++evicted_;
      complete(order_.front(), done);
    }
  }
}

void OpenTraces::take_idle(int64_t now_ns, std::vector<SpanSet>& done) {
  while (!order_.empty() && now_ns - open_.at(order_.front()).last_ns >= limits_.idle_ns)
    complete(order_.front(), done);
}

void OpenTraces::take_all(std::vector<SpanSet>& done) {
  while (!order_.empty()) complete(order_.front(), done);
}

void OpenTraces::complete(const std::string& trace, std::vector<SpanSet>& done) {
  auto it = open_.find(trace);
  order_.erase(it->second.order);
  spans_ -= it->second.set.spans.size();
  importers::resolve_spans(it->second.set);
  done.push_back(std::move(it->second.set));
  open_.erase(it);
}

}  // namespace snailtrail::serve
