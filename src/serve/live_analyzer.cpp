#include "serve/live_analyzer.hpp"

#include <limits>

#include "output/names.hpp"

namespace snailtrail {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

int64_t saturating_add(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b)
    return std::numeric_limits<int64_t>::max();
  return a + b;
}

}  // namespace

LiveAnalyzer::LiveAnalyzer(const LiveOptions& options, std::function<void(LiveWindow&)> on_window)
    : options_(options), on_window_(std::move(on_window)), pag_(options.pag) {
  if (options_.window_ns <= 0) throw std::invalid_argument("the window width must be positive");
  if (options_.lateness_ns < 0) throw std::invalid_argument("the lateness must not be negative");
}

bool LiveAnalyzer::add(const Event& e) {
  if (!idle_.empty()) idle_.erase(e.worker);
  switch (pag_.add(e)) {
    case StreamingPag::Added::ok:
      ++stats_.events;
      return true;
    case StreamingPag::Added::before_horizon:
      ++stats_.late_events;
      ++late_since_last_window_;
      break;
    case StreamingPag::Added::out_of_order:
      ++stats_.out_of_order;
      ++out_of_order_since_last_window_;
      break;
  }
  return false;
}

void LiveAnalyzer::add_names(const Trace& names) {
  for (const auto& [id, name] : names.worker_names) {
    names_.worker_names[id] = name;
    // A producer names the workers it carries before their events: they hold windows back
    // from now on, even before they have sent anything.
    if (pag_.watermark(id) == INT64_MIN) pag_.declare(id);
  }
  for (const auto& [id, name] : names.operator_names) names_.operator_names[id] = name;
}

void LiveAnalyzer::set_idle(uint32_t worker_id) {
  if (idle_.insert(worker_id).second) pag_.flush(worker_id);
}

bool LiveAnalyzer::ready(int64_t end) const {
  bool any_active = false;
  for (uint32_t id : pag_.worker_ids()) {
    if (idle_.count(id)) continue;
    any_active = true;
    if (pag_.watermark(id) < saturating_add(end, options_.lateness_ns)) return false;
    if (!pag_.complete_before(id, end)) return false;
  }
  // Everyone is quiet: windows that end before the latest event are complete; the one
  // holding it stays open (more events may come, and the last window includes its end).
  return any_active || end < pag_.last_ts();
}

size_t LiveAnalyzer::advance() {
  if (held_ || pag_.empty()) return 0;
  const int64_t w = options_.window_ns;
  if (!started_) {
    k0_ = next_k_ = floor_div(pag_.first_ts(), w);
  }
  int64_t k = next_k_;
  while (ready((k + 1) * w)) ++k;
  if (k == next_k_) return 0;
  started_ = true;
  return close(k, false);
}

size_t LiveAnalyzer::finish() {
  pag_.finish();
  if (pag_.empty()) return 0;
  const int64_t w = options_.window_ns;
  if (!started_) k0_ = next_k_ = floor_div(pag_.first_ts(), w);
  started_ = true;
  // The same last window as plan_windows: a range ending exactly on a border does not
  // open a window of zero length.
  int64_t k1 = floor_div(pag_.last_ts(), w);
  if (k1 > k0_ && k1 * w == pag_.last_ts()) --k1;
  if (k1 < next_k_) return 0;
  return close(k1 + 1, true);
}

// Emits windows [next_k_, k_end).
size_t LiveAnalyzer::close(int64_t k_end, bool last_closed_end) {
  const int64_t w = options_.window_ns;
  std::vector<Window> windows;
  for (int64_t k = next_k_; k < k_end; ++k)
    windows.push_back({k * w, (k + 1) * w, last_closed_end && k + 1 == k_end});
  const Pag cut = pag_.cut(windows.front().start, windows.back().end, last_closed_end);
  const Names names(names_, cut);
  AnalysisOptions options;
  options.pag = options_.pag;
  options.summary = options_.summary;
  LiveWindow out;
  analyze_windows(cut, windows, static_cast<size_t>(next_k_ - k0_), options,
                  [&](const WindowView& view) {
                    out.summary = view.summary;
                    Diagnostics& d = out.summary.diagnostics;
                    d.add_input("late_events", late_since_last_window_);
                    d.add_input("out_of_order_events", out_of_order_since_last_window_);
                    late_since_last_window_ = out_of_order_since_last_window_ = 0;
                    fmt::memory_buffer buf;
                    write_window_json(buf, out.summary, names, options_.selection);
                    out.json.assign(buf.data(), buf.size());
                    ++stats_.windows;
                    if (on_view_)
                      on_view_(WindowView{view.pag, view.snapshot, view.cp, out.summary}, names);
                    on_window_(out);
                  });
  next_k_ = k_end;
  pag_.retire(k_end * w);
  return windows.size();
}

}  // namespace snailtrail
