// The slow traces of `serve --otlp` (otlp_slow.hpp) and their HTTP routes.
#include "serve/otlp_slow.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <iterator>

#include "output/names.hpp"
#include "serve/otlp_live.hpp"
#include "trace/json_text.hpp"

namespace snailtrail::serve {

bool SlowTraces::faster(const Kept& a, const Kept& b) {
  // std::*_heap keep the largest on top: "larger" here is faster (or as fast and newer).
  return a.duration_ns != b.duration_ns ? a.duration_ns > b.duration_ns : a.seq < b.seq;
}

void SlowTraces::pop_fastest() {
  std::pop_heap(heap_.begin(), heap_.end(), faster);
  spans_ -= heap_.back().spans;
  heap_.pop_back();
}

void SlowTraces::expire(int64_t now_ns) {
  const int64_t since = now_ns - limits_.window_ns;
  const auto old = std::remove_if(heap_.begin(), heap_.end(), [&](const Kept& k) {
    if (k.at_ns >= since) return false;
    spans_ -= k.spans;
    return true;
  });
  if (old == heap_.end()) return;
  heap_.erase(old, heap_.end());
  std::make_heap(heap_.begin(), heap_.end(), faster);
}

bool SlowTraces::wants(int64_t duration_ns, size_t spans, int64_t now_ns) {
  if (limits_.max_traces == 0 || spans > limits_.max_spans) return false;
  std::lock_guard lock(mu_);
  expire(now_ns);
  if (heap_.size() < limits_.max_traces && spans_ + spans <= limits_.max_spans) return true;
  return !heap_.empty() && duration_ns > heap_.front().duration_ns;
}

void SlowTraces::add(Unit unit, int64_t now_ns, int64_t wall_ms) {
  if (unit.traces.size() != 1 || limits_.max_traces == 0) return;
  const report::WaterfallBuilder::Trace& t = unit.traces.front();
  const size_t spans = t.rows_end - t.rows_begin;
  if (spans > limits_.max_spans) return;
  Kept k{t.duration_ns, now_ns, wall_ms, 0, spans, nullptr};
  k.unit = std::make_shared<const Unit>(std::move(unit));
  std::lock_guard lock(mu_);
  expire(now_ns);
  k.seq = seq_++;
  heap_.push_back(std::move(k));
  std::push_heap(heap_.begin(), heap_.end(), faster);
  spans_ += spans;
  while (heap_.size() > limits_.max_traces || spans_ > limits_.max_spans) pop_fastest();
}

size_t SlowTraces::size() const {
  std::lock_guard lock(mu_);
  return heap_.size();
}

size_t SlowTraces::spans() const {
  std::lock_guard lock(mu_);
  return spans_;
}

std::string SlowTraces::list_json(int64_t now_ns) const {
  std::vector<Kept> kept;
  {
    std::lock_guard lock(mu_);
    for (const Kept& k : heap_)
      if (k.at_ns >= now_ns - limits_.window_ns) kept.push_back(k);
  }
  // Slowest first; of equal latencies, the older first (as the static picker's file order).
  std::sort(kept.begin(), kept.end(), [](const Kept& a, const Kept& b) {
    return a.duration_ns != b.duration_ns ? a.duration_ns > b.duration_ns : a.seq < b.seq;
  });
  size_t spans = 0;
  for (const Kept& k : kept) spans += k.spans;
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "{{\"window_s\":{},\"max_traces\":{},\"max_spans\":{},\"kept\":{},"
                 "\"spans_kept\":{},\"traces\":[",
                 static_cast<double>(limits_.window_ns) / 1e9, limits_.max_traces,
                 limits_.max_spans, kept.size(), spans);
  for (size_t i = 0; i < kept.size(); ++i) {
    const Unit& u = *kept[i].unit;
    const report::WaterfallBuilder::Trace& t = u.traces.front();
    const report::WaterfallBuilder::Row& root = u.rows[t.rows_begin];
    fmt::format_to(it, "{}{{\"id\":", i ? "," : "");
    append_json_string(out, std::string_view(u.ids).substr(t.id_begin, t.id_len), kJsonNames);
    fmt::format_to(it, ",\"service\":");
    append_json_string(out, u.names[root.service], kJsonNames);
    fmt::format_to(it, ",\"root\":");
    append_json_string(out, u.names[root.operation], kJsonNames);
    fmt::format_to(it, ",\"duration_ns\":{},\"spans\":{},\"completed_unix_ms\":{},\"age_ms\":{}}}",
                   kept[i].duration_ns, kept[i].spans, kept[i].wall_ms,
                   (now_ns - kept[i].at_ns) / 1'000'000);
  }
  fmt::format_to(it, "]}}\n");
  return fmt::to_string(out);
}

std::string SlowTraces::trace_json(const std::string& id) const {
  std::shared_ptr<const Unit> unit;
  {
    std::lock_guard lock(mu_);
    for (const Kept& k : heap_) {
      const report::WaterfallBuilder::Trace& t = k.unit->traces.front();
      if (std::string_view(k.unit->ids).substr(t.id_begin, t.id_len) == id) {
        unit = k.unit;
        break;
      }
    }
  }
  if (!unit) return {};
  // One trace, no percentile picks: what `report --traces 1 -f json` writes for it.
  report::WaterfallBuilder one({"serve --otlp", 1});
  one.add_unit(0, *unit);
  return one.json();
}

void add_slow_trace_routes(httplib::Server& http, const SlowTraces& slow) {
  http.Get("/traces", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(report::render_live_waterfall_html(), "text/html; charset=utf-8");
  });
  http.Get("/api/slow-traces", [&slow](const httplib::Request&, httplib::Response& res) {
    res.set_content(slow.list_json(steady_now_ns()), "application/json");
  });
  http.Get("/api/trace", [&slow](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.get_param_value("id");
    std::string body = id.empty() ? std::string() : slow.trace_json(id);
    if (body.empty()) {
      res.status = id.empty() ? 400 : 404;
      std::string msg = "{\"error\":\"";
      msg += id.empty() ? "id: a trace id is required"
                        : "not among the slow traces kept (it was faster, or left the window)";
      msg += "\",\"id\":";
      append_json_string(msg, id, kJsonNames);
      msg += "}\n";
      res.set_content(msg, "application/json");
      return;
    }
    res.set_content(std::move(body), "application/json");
  });
}

}  // namespace snailtrail::serve
