#include "serve/otlp_traces.hpp"

#include <algorithm>

namespace snailtrail::serve {

using importers::Span;
using importers::SpanSet;

void OpenTraces::add(const SpanSet& batch, int64_t now_ns, std::vector<SpanSet>& done) {
  // The batch's spans by trace (a counting sort on the batch's dense trace ids), so that
  // each trace of a request is looked up once, not once per span.
  const size_t traces = batch.ids.size();
  by_trace_.assign(traces + 1, 0);
  for (const Span& s : batch.spans) ++by_trace_[s.trace + 1];
  for (size_t t = 0; t < traces; ++t) by_trace_[t + 1] += by_trace_[t];
  order_in_batch_.resize(batch.spans.size());
  next_.assign(by_trace_.begin(), by_trace_.end() - 1);
  for (uint32_t i = 0; i < batch.spans.size(); ++i)
    order_in_batch_[next_[batch.spans[i].trace]++] = i;
  std::string trace;
  for (size_t t = 0; t < traces; ++t) {
    const uint32_t begin = by_trace_[t], end = by_trace_[t + 1];
    if (begin == end) continue;  // a span id, or a trace with no span here
    trace.clear();
    batch.ids.append(static_cast<uint32_t>(t), trace);
    for (uint32_t k = begin; k < end; ++k) {
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
      } else if (k == begin) {
        order_.splice(order_.end(), order_, it->second.order);
      }
      it->second.last_ns = now_ns;
      // The rest of this trace's spans of the batch up to the span bound, in one go.
      const size_t room = spans_ < limits_.max_open_spans ? limits_.max_open_spans - spans_ : 1;
      const auto take = static_cast<uint32_t>(std::min<size_t>(end - k, room));
      for (uint32_t j = k; j < k + take; ++j)
        importers::copy_span(batch, batch.spans[order_in_batch_[j]], it->second.set);
      spans_ += take;
      k += take - 1;
      // Over the span bound: the least recent traces go first (this one last).
      while (spans_ > limits_.max_open_spans && !order_.empty()) {
        ++evicted_;
        complete(order_.front(), done);
      }
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
