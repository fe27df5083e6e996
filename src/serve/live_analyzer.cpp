#include "serve/live_analyzer.hpp"

#include <limits>

#include "output/empty_windows.hpp"
#include "output/names.hpp"
#include "pag/snapshot.hpp"

namespace snailtrail {
namespace {

int64_t saturating_add(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b)
    return std::numeric_limits<int64_t>::max();
  return a + b;
}

// Window numbers stay below INT64_MAX, so that k + 1 never overflows (1 ns windows).
int64_t window_of(int64_t ts, int64_t w) {
  return std::min(windowing::window_of(ts, 0, w), std::numeric_limits<int64_t>::max() - 1);
}

// k * w saturated to the int64 range: window borders near the ends of the time range.
int64_t border(int64_t k, int64_t w) {
  return windowing::border(0, k, w);
}

}  // namespace

LiveAnalyzer::LiveAnalyzer(const LiveOptions& options, std::function<void(LiveWindow&)> on_window)
    : options_(options), on_window_(std::move(on_window)), pag_(options.pag) {
  if (options_.window_ns <= 0) throw std::invalid_argument("the window width must be positive");
  if (options_.lateness_ns < 0) throw std::invalid_argument("the lateness must not be negative");
  if (options_.shard_count == 0 || options_.shard_index >= options_.shard_count)
    throw std::invalid_argument("the shard must be I/N with I < N");
}

int64_t LiveAnalyzer::closed_until() const {
  return started_ ? border(next_k_, options_.window_ns) : INT64_MIN;
}

bool LiveAnalyzer::add(const Event& e) {
  if (options_.max_jump_ns > 0 && !pag_.empty() && e.ts > pag_.last_ts() &&
      static_cast<__int128>(e.ts) - pag_.last_ts() > options_.max_jump_ns) {
    ++stats_.time_jumps;
    ++jumps_since_last_window_;
    return false;
  }
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
    k0_ = next_k_ = window_of(pag_.first_ts(), w);
  }
  // ready() is monotone in the window's end: find the first window k that is not ready
  // by galloping and bisection, so a jump over many windows costs O(log) checks.
  const int64_t k_max = window_of(std::numeric_limits<int64_t>::max(), w);  // ends at INT64_MAX
  auto ok = [&](int64_t k) { return k <= k_max && ready(border(k + 1, w)); };
  int64_t lo = next_k_;  // windows before lo are ready
  if (!ok(lo)) return 0;
  int64_t hi = lo;  // ok(hi)
  for (int64_t step = 1;; step = step > k_max / 2 ? k_max : step * 2) {
    const int64_t next = hi > k_max - step ? k_max + 1 : hi + step;
    if (!ok(next)) {
      lo = hi;
      hi = next;  // ok(lo), !ok(hi)
      break;
    }
    hi = next;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  begin();
  return close(hi, false);
}

size_t LiveAnalyzer::finish() {
  stats_.unterminated_at_shutdown += pag_.finish();
  if (pag_.empty()) return 0;
  const int64_t w = options_.window_ns;
  if (!started_) k0_ = next_k_ = window_of(pag_.first_ts(), w);
  begin();
  // The same last window as plan_windows.
  const int64_t k1 = std::min(windowing::last_window(k0_, pag_.last_ts(), 0, w),
                              std::numeric_limits<int64_t>::max() - 1);
  if (k1 < next_k_) {
    emit_run();
    return 0;
  }
  return close(k1 + 1, true);
}

// The first window is fixed from now on, and with it the windows' indexes: a shard (or a
// server skipping windows written before a restart) keeps only the messages that overlap
// one of its windows.
void LiveAnalyzer::begin() {
  if (started_) return;
  started_ = true;
  if (options_.shard_count == 1 && options_.written_through < 0) return;
  pag_.keep_messages_if([this](int64_t src, int64_t dst) { return overlaps_mine(src, dst); });
  // Another shard's window is only planned (cut_events: each worker's first event in it),
  // never cut: of its events only that first time is kept.
  pag_.keep_event_times_if(options_.window_ns, [this](int64_t k) {
    k = std::min(k, std::numeric_limits<int64_t>::max() - 1);  // as window_of() above
    return k < k0_ || mine(static_cast<uint64_t>(k) - static_cast<uint64_t>(k0_));
  });
}

bool LiveAnalyzer::overlaps_mine(int64_t src, int64_t dst) const {
  const int64_t w = options_.window_ns;
  int64_t a = window_of(src, w);
  // A send on a border also touches the window ending there (the last one has a closed end).
  if (a > k0_ && border(a, w) == src) --a;
  const int64_t b = window_of(dst, w);
  const int64_t lo = std::max(a, k0_ + std::max<int64_t>(0, options_.written_through + 1));
  for (int64_t k = lo; k <= b && k - lo < static_cast<int64_t>(options_.shard_count); ++k)
    if (mine(static_cast<uint64_t>(k - k0_))) return true;
  return false;
}

void LiveAnalyzer::emit_run() {
  if (!runs_.pending()) return;
  LiveWindow run;
  run.summary = runs_.take();
  fmt::memory_buffer buf;
  write_empty_windows_json(buf, run.summary);
  run.json.assign(buf.data(), buf.size());
  stats_.empty_windows += run.summary.window.empty_run;
  ++stats_.empty_runs;
  if (mine(run.summary.index)) on_window_(run);
}

// An analyzed window: the stream's problems since the previous window go into its
// diagnostics, then its JSON line (the schema of `analyze --format jsonl`).
void LiveAnalyzer::emit_window(const WindowView& view, const Names& names) {
  LiveWindow out;
  out.summary = view.summary;
  Diagnostics& d = out.summary.diagnostics;
  d.add_input("late_events", late_since_last_window_);
  d.add_input("out_of_order_events", out_of_order_since_last_window_);
  if (options_.max_jump_ns > 0) d.add_input("time_jumps", jumps_since_last_window_);
  late_since_last_window_ = out_of_order_since_last_window_ = 0;
  jumps_since_last_window_ = 0;
  fmt::memory_buffer buf;
  write_window_json(buf, out.summary, names, options_.selection);
  out.json.assign(buf.data(), buf.size());
  ++stats_.windows;
  if (on_view_) on_view_(WindowView{view.pag, view.snapshot, view.cp, out.summary}, names);
  on_window_(out);
}

// Another shard's window: its stream problems went into its diagnostics there.
void LiveAnalyzer::skip_window() {
  late_since_last_window_ = out_of_order_since_last_window_ = 0;
  jumps_since_last_window_ = 0;
  ++stats_.skipped_windows;
}

// A window that is not analyzed here: a run of windows without events is held to be
// merged with the next ones; another shard's window splits runs and takes the stream
// problems counted since the previous window.
void LiveAnalyzer::pass(const Window& window, size_t index) {
  if (window.empty_run > 0) {
    WindowSummary run;
    run.index = index;
    run.window = window;
    run.span_start = window.start;
    run.span_end = window.end;
    runs_.absorb(run);
    return;
  }
  emit_run();
  skip_window();
}

// Emits windows [next_k_, k_end); returns how many (runs of windows without events count
// their windows). The windows are planned as a .snail file read block by block is, and
// analyzed one after the other on this thread by the shared window analyzer
// (analyze_windows). A server that analyzes every window of the range cuts one PAG for it
// (cut_windows). A shard cuts a PAG only around its own windows: the others' nodes,
// messages and events are never copied into a PAG; their windows are planned from the
// events' times alone (which windows hold events decides the runs of empty windows).
size_t LiveAnalyzer::close(int64_t k_end, bool last_closed_end) {
  const int64_t w = options_.window_ns;
  AnalysisOptions options;
  options.pag = options_.pag;
  options.summary = options_.summary;
  auto on_window = [&](const Names& names) {
    return [&](const WindowView& view) {
      // Runs are merged across calls and emitted before the next window
      // with events (or at the end), as analyze writes them.
      if (runs_.absorb(view.summary)) return;
      emit_run();
      view.skipped ? skip_window() : emit_window(view, names);
    };
  };
  auto wanted = [&](size_t index) { return mine(index); };
  const int64_t end = border(k_end, w);
  if (options_.shard_count == 1 && next_k_ > options_.written_through) {
    const WindowCut cut =
        cut_windows(pag_, 0, w, next_k_, k_end, last_closed_end, std::nullopt, empty_before_);
    stats_.cut_nodes += cut.pag.node_count();
    stats_.cut_messages += cut.pag.messages.size();
    const Names names(names_, cut.pag);
    analyze_windows(cut.pag, cut.windows, static_cast<size_t>(next_k_ - k0_), options,
                    on_window(names), wanted);
  } else {
    pag_.expire_halves(end, last_closed_end);
    const std::vector<Window> windows =
        plan_window_range(pag_.cut_events(border(next_k_, w), end, last_closed_end, w), 0, w,
                          next_k_, k_end - 1, last_closed_end, std::nullopt, empty_before_);
    const std::vector<size_t> index = window_indexes(windows, static_cast<size_t>(next_k_ - k0_));
    auto analyzed = [&](size_t i) { return windows[i].empty_run == 0 && mine(index[i]); };
    // Groups of windows analyzed here, each from the first to the last such window of a
    // stretch without another shard's window (runs between them go along).
    std::vector<std::pair<size_t, size_t>> groups;
    for (size_t i = 0; i < windows.size(); ++i) {
      if (!analyzed(i)) continue;
      size_t j = groups.empty() ? 0 : groups.back().second;
      bool joined = !groups.empty();
      for (; joined && j < i; ++j) joined = windows[j].empty_run > 0;
      if (joined)
        groups.back().second = i + 1;
      else
        groups.emplace_back(i, i + 1);
    }
    // Each cut scans the retained messages once: a range with very many groups (a long
    // backlog) is cut once, as a whole, instead.
    constexpr size_t kMaxCuts = 16;
    if (groups.size() > kMaxCuts) groups.assign(1, {0, windows.size()});
    size_t i = 0;
    for (const auto& [a, b] : groups) {
      for (; i < a; ++i) pass(windows[i], index[i]);
      const Window& last = windows[b - 1];
      const Pag cut = pag_.cut(windows[a].start, last.end, last.closed_end, /*expire=*/false);
      stats_.cut_nodes += cut.node_count();
      stats_.cut_messages += cut.messages.size();
      const Names names(names_, cut);
      analyze_windows(cut,
                      std::vector<Window>(windows.begin() + static_cast<std::ptrdiff_t>(a),
                                          windows.begin() + static_cast<std::ptrdiff_t>(b)),
                      index[a], options, on_window(names), wanted);
      i = b;
    }
    for (; i < windows.size(); ++i) pass(windows[i], index[i]);
  }
  if (last_closed_end) emit_run();
  const size_t n = static_cast<size_t>(k_end - next_k_);
  next_k_ = k_end;
  pag_.retire(end);
  return n;
}

}  // namespace snailtrail
