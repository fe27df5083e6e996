#include "summary/streamed.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "pag/snapshot.hpp"
#include "pag/streaming.hpp"
#include "pag/timeline_builder.hpp"

namespace snailtrail {

using namespace windowing;

namespace {

int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b > 0 ? INT64_MIN : INT64_MAX;
  return r;
}

// The lowest started activity has more starts than ends: after this node the builder's
// open activity is that one whatever was open before (timeline_builder.hpp, apply()).
bool decides_open_activity(const detail::NodeContent& n) {
  if (n.start_mask == 0) return false;
  const int a = __builtin_ctz(n.start_mask);
  return n.starts[a] > n.ends[a];
}

// Checks that starting fresh at S gives every worker the state of a read from the start
// by A (see streamed.hpp). Reads the blocks overlapping [S, A).
bool check_lookback(SnailFile& file, int64_t S, int64_t A, int64_t h, BigVector<Event>& buf) {
  struct State {
    detail::NodeContent cur;
    int64_t prev_ts = INT64_MIN;
    bool reset = false;
  };
  std::unordered_map<uint32_t, State> states;
  auto complete = [&](State& st) {
    if (st.cur.empty) return;
    if (st.prev_ts != INT64_MIN && st.cur.ts - st.prev_ts >= h && decides_open_activity(st.cur))
      st.reset = true;
    st.prev_ts = st.cur.ts;
  };
  for (size_t b : file.blocks_overlapping(S, A - 1)) {
    file.read_block(b, buf);
    for (const Event& e : buf) {
      if (e.ts < S || e.ts >= A) continue;
      State& st = states[e.worker];
      if (st.cur.empty || e.ts != st.cur.ts) {
        complete(st);
        st.cur.reset(e.ts);
      }
      st.cur.add(e);
    }
  }
  for (auto& [id, st] : states) complete(st);
  for (const TraceFacts::Worker& w : file.index().facts.workers) {
    if (w.first_ts >= S || w.last_ts < S || w.first_ts >= A) continue;
    auto it = states.find(w.id);
    if (it == states.end() || !it->second.reset) return false;
  }
  return true;
}

// The latest event before A (INT64_MIN if none), from the index and the blocks that
// straddle A.
int64_t latest_event_before(SnailFile& file, int64_t A, BigVector<Event>& buf) {
  int64_t latest = INT64_MIN;
  const auto& blocks = file.index().blocks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const SnailBlock& b = blocks[i];
    if (b.kind != 1 || b.count == 0 || b.min_ts >= A || b.max_ts <= latest) continue;
    if (b.max_ts < A) {
      latest = b.max_ts;
      continue;
    }
    file.read_block(i, buf);
    for (const Event& e : buf)
      if (e.ts < A) latest = std::max(latest, e.ts);
  }
  return latest;
}

}  // namespace

std::string streamed_analysis_obstacle(const TraceFacts& facts, const AnalysisOptions& options) {
  if (options.windows.width_ns <= 0) return "--window whole needs the whole trace";
  if (!facts.worker_sorted) return "some worker's events are not in time order";
  if (!facts.correlators_unique)
    return fmt::format(
        "a correlator is used twice per worker pair, or comes back more than {} correlators "
        "late ({} message halves out of correlator order)",
        TraceFacts::kReorderWindow, facts.reordered_halves);
  if (facts.events == 0) return "the trace has no events";
  return "";
}

int64_t StreamedPlan::start_of(int64_t k) const {
  return border(origin, k, width);
}

StreamedPlan plan_streamed(const TraceFacts& facts, const WindowSpec& spec) {
  StreamedPlan p;
  p.width = spec.width_ns;
  p.origin = spec.from_ns.value_or(0);
  p.to = spec.to_ns;
  if (facts.events == 0 || p.width <= 0) return p;
  int64_t lo = facts.first_ts, hi = facts.last_ts;
  if (spec.from_ns) lo = std::max(lo, *spec.from_ns);
  if (spec.to_ns) hi = std::min(hi, *spec.to_ns);
  if (hi < lo) return p;
  p.k0 = window_of(lo, p.origin, p.width);
  p.k1 = window_of(hi, p.origin, p.width);
  if (p.k1 > p.k0 && border(p.origin, p.k1, p.width) == hi) --p.k1;
  return p;
}

// Events before t (estimated): each block's count spread evenly over [min_ts, max_ts].
static double events_before(const SnailIndex& index, int64_t t) {
  double n = 0;
  for (const SnailBlock& blk : index.blocks) {
    if (blk.kind != 1 || blk.count == 0 || blk.min_ts >= t) continue;
    if (blk.max_ts < t) {
      n += blk.count;
    } else {  // min_ts < t <= max_ts
      n += static_cast<double>(blk.count) * (static_cast<double>(t) - blk.min_ts) /
           (static_cast<double>(blk.max_ts) - blk.min_ts + 1);
    }
  }
  return n;
}

bool streaming_pays(const SnailIndex& index, const StreamedPlan& plan) {
  // Past 16 windows none can hold a quarter unless the trace is very uneven; not worth
  // estimating every window of a long plan.
  if (plan.empty() || plan.count() > 16) return true;
  const double total = events_before(index, std::numeric_limits<int64_t>::max());
  for (int64_t k = plan.k0; k <= plan.k1; ++k) {
    int64_t end = plan.start_of(k + 1);
    if (plan.to) end = std::min(end, *plan.to);
    const double in_window = events_before(index, end) - events_before(index, plan.start_of(k));
    if (in_window * 4 >= total) return false;
  }
  return true;
}

std::vector<int64_t> split_windows_by_events(const SnailIndex& index, const StreamedPlan& plan,
                                             const std::vector<double>& weights) {
  const size_t parts = weights.size();
  double weight_sum = 0;
  for (double x : weights) {
    if (!(x >= 0)) throw std::invalid_argument("split_windows_by_events: negative weight");
    weight_sum += x;
  }
  if (parts < 1 || !(weight_sum > 0))
    throw std::invalid_argument("split_windows_by_events: no weight");
  std::vector<int64_t> b(parts + 1, plan.k1 + 1);
  b[0] = plan.k0;
  if (plan.empty()) return b;
  auto before = [&](int64_t t) { return events_before(index, t); };
  int64_t end = plan.start_of(plan.k1 + 1);
  if (plan.to) end = std::min(end, *plan.to);
  const double lo = before(plan.start_of(plan.k0)), total = before(end) - lo;
  double cum = 0;
  for (size_t r = 1; r < parts; ++r) {
    cum += weights[r - 1];
    const double target = lo + total * (cum / weight_sum);
    // The first window k in [b[r-1], k1 + 1] whose start has at least `target` events
    // before it.
    int64_t a = b[r - 1], z = plan.k1 + 1;
    while (a < z) {
      const int64_t mid = a + (z - a) / 2;
      if (before(plan.start_of(mid)) >= target)
        z = mid;
      else
        a = mid + 1;
    }
    b[r] = a;
  }
  return b;
}

namespace {

// The lookback: where reading starts for windows from A on (see streamed.hpp): INT64_MIN
// (the trace's start) or the first time from which the gap-filling state is provably the
// same as a read from the start, doubling from one window (at least the largest delay).
int64_t reading_start(SnailFile& file, int64_t A, int64_t w, int64_t h, BigVector<Event>& buf,
                      StreamedStats& stats) {
  const TraceFacts& facts = file.index().facts;
  const int64_t L = facts.max_delay;
  if (A <= facts.first_ts) return INT64_MIN;
  int64_t lookback = std::max<int64_t>(w, L < INT64_MAX ? L + 1 : L);
  for (;;) {
    const int64_t S = sat_sub(A, lookback);
    if (S <= facts.first_ts) {
      stats.lookback_ns = A - facts.first_ts;
      return INT64_MIN;
    }
    if (check_lookback(file, S, A, h, buf)) {
      stats.lookback_ns = lookback;
      return S;
    }
    lookback = lookback > INT64_MAX / 2 ? INT64_MAX : lookback * 2;
  }
}

// Windows without events right before k_begin, within the plan (at most 16 matter).
uint64_t empty_windows_before(const StreamedPlan& plan, int64_t k_begin, int64_t latest_before) {
  const int64_t kp =
      latest_before == INT64_MIN ? INT64_MIN : window_of(latest_before, plan.origin, plan.width);
  const int64_t first_empty = kp == INT64_MIN ? plan.k0 : std::max(plan.k0, kp + 1);
  return static_cast<uint64_t>(
      std::min<int64_t>(kEmptyWindowsAnalyzed, std::max<int64_t>(0, k_begin - first_empty)));
}

// Once every event before the frontier F has been read: windows ending at or before the
// returned time are final (no message still in flight, every running worker past it).
int64_t final_until(const StreamingPag& pag, int64_t F, int64_t L,
                    const std::vector<std::pair<int64_t, uint32_t>>& by_last, size_t finished) {
  int64_t max_end = sat_sub(F, L);
  max_end = max_end == INT64_MIN ? INT64_MIN : max_end - 1;
  for (size_t j = finished; j < by_last.size(); ++j) {
    const int64_t t = pag.last_node_ts(by_last[j].second);
    if (t != INT64_MIN) max_end = std::min(max_end, t);
  }
  return max_end;
}

// The workers by the time of their last event.
std::vector<std::pair<int64_t, uint32_t>> workers_by_last_event(const TraceFacts& facts) {
  std::vector<std::pair<int64_t, uint32_t>> by_last;
  for (const TraceFacts::Worker& wk : facts.workers) by_last.emplace_back(wk.last_ts, wk.id);
  std::sort(by_last.begin(), by_last.end());
  return by_last;
}

// For reading `blocks` in order: after block i, every event before frontier[i + 1] has
// been read.
std::vector<int64_t> frontiers_after(const SnailFile& file, const std::vector<size_t>& blocks) {
  std::vector<int64_t> frontier(blocks.size() + 1, INT64_MAX);
  for (size_t i = blocks.size(); i-- > 0;)
    frontier[i] = std::min(frontier[i + 1], file.index().blocks[blocks[i]].min_ts);
  return frontier;
}

TraceError out_of_order(const SnailFile& file, size_t block, const Event& e) {
  return TraceError(file.path(),
                    "block at byte " + std::to_string(file.index().blocks[block].offset),
                    "an event out of the order the index promises (at " + std::to_string(e.ts) +
                        " ns, worker " + std::to_string(e.worker) + ")");
}

// Which of windows ..k_end are final once windows ending at or before max_end are: those
// before k; or all of them, through the plan's last window (closed end, perhaps cut at
// --to), when that one is.
struct FinalWindows {
  int64_t k;
  bool through_last;
};
FinalWindows final_windows(const StreamedPlan& plan, int64_t k_end, int64_t max_end) {
  const int64_t ready =
      window_of(max_end, plan.origin, plan.width);  // windows before it end <= max_end
  if (k_end != plan.k1) return {std::min(ready, k_end + 1), false};
  int64_t last_end = plan.start_of(plan.k1 + 1);
  if (plan.to) last_end = std::min(last_end, *plan.to);
  if (last_end <= max_end) return {k_end + 1, true};
  return {std::min(ready, k_end), false};
}

}  // namespace

namespace {

// Batches of windows cut from the stream, analyzed on a thread of their own while the
// reading thread goes on reading, adding and cutting (with --threads 2 or more; see
// docs/PERFORMANCE.md, "issue 39, sixth round"). Each batch's cut is an independent
// copy, analyzed by analyze_windows_parallel on `threads` threads (`render` runs there);
// its windows' results wait in the batch until the reading thread delivers them:
// `consume` and `delivered` run on the reading thread, in window order, as before (the
// callers' `claim` and `consume` share state without locks: MPI ranks' polling). At most
// `max_in_flight` batches are cut and not yet delivered, which bounds memory. The first
// exception of the analysis is rethrown on the reading thread at its next submit or
// deliver; the destructor stops the analysis thread (after the batch it is analyzing).
class BatchPipeline {
 public:
  struct Batch {
    Pag cut;
    std::vector<Window> windows;
    size_t first_index = 0;
    size_t count = 0;  // windows of the plan it completes
    std::vector<RenderedWindow> results;
    bool done = false;
  };

  BatchPipeline(const AnalysisOptions& options, unsigned threads, const StreamedCallbacks& cb,
                std::function<void(size_t)> delivered, size_t max_in_flight)
      : options_(options),
        threads_(threads),
        cb_(cb),
        delivered_(std::move(delivered)),
        max_in_flight_(std::max<size_t>(1, max_in_flight)),
        thread_([this] { work(); }) {}

  ~BatchPipeline() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // Hands a batch over to the analysis, after delivering the finished ones (waiting for
  // the oldest while max_in_flight are held).
  void submit(std::unique_ptr<Batch> batch) {
    while (in_flight() >= max_in_flight_) deliver_front(true);
    deliver_ready();
    {
      std::lock_guard lock(mu_);
      if (error_) std::rethrow_exception(error_);
      queue_.push_back(std::move(batch));
    }
    cv_.notify_all();
  }

  // Delivers the batches finished at the front of the queue, without waiting.
  void deliver_ready() {
    while (deliver_front(false)) {
    }
  }

  // Delivers every batch, waiting for their analysis.
  void finish() {
    while (deliver_front(true)) {
    }
  }

 private:
  size_t in_flight() {
    std::lock_guard lock(mu_);
    return queue_.size();
  }

  // Delivers the oldest batch if it is analyzed (waits for it if `wait`); false if there
  // is none (or, without `wait`, it is not analyzed yet).
  bool deliver_front(bool wait) {
    std::unique_ptr<Batch> batch;
    {
      std::unique_lock lock(mu_);
      if (wait) cv_.wait(lock, [&] { return error_ || queue_.empty() || queue_.front()->done; });
      if (error_) std::rethrow_exception(error_);
      if (queue_.empty() || !queue_.front()->done) return false;
      batch = std::move(queue_.front());
      queue_.pop_front();
      --analyzed_;
    }
    for (RenderedWindow& r : batch->results)
      if (cb_.consume) cb_.consume(r);
    if (delivered_) delivered_(batch->count);
    return true;
  }

  // The analysis thread: batches in order, each on `threads_` threads.
  void work() {
    for (;;) {
      Batch* batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || analyzed_ < queue_.size(); });
        if (stop_) return;
        batch = queue_[analyzed_].get();  // never popped before it is done
      }
      try {
        batch->results.reserve(batch->windows.size());
        analyze_windows_parallel(batch->cut, batch->windows, batch->first_index, options_, threads_,
                                 cb_.render,
                                 [&](RenderedWindow& r) { batch->results.push_back(r); });
        batch->cut = Pag();  // only the results wait for delivery
        batch->windows = {};
      } catch (...) {
        {
          std::lock_guard lock(mu_);
          error_ = std::current_exception();
        }
        cv_.notify_all();
        return;
      }
      {
        std::lock_guard lock(mu_);
        batch->done = true;
        ++analyzed_;
      }
      cv_.notify_all();
    }
  }

  const AnalysisOptions& options_;
  const unsigned threads_;
  const StreamedCallbacks& cb_;
  const std::function<void(size_t)> delivered_;
  const size_t max_in_flight_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Batch>> queue_;  // in window order
  size_t analyzed_ = 0;                       // batches at the queue's front analyzed
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the rest is constructed
};

// One streamed analysis of windows k_begin..k_end: reads the blocks from the lookback on
// into a StreamingPag and analyzes windows in batches as they become final.
class StreamedRun {
 public:
  StreamedRun(SnailFile& file, const AnalysisOptions& options, const StreamedPlan& plan,
              int64_t k_begin, int64_t k_end, const StreamedCallbacks& cb, unsigned threads)
      : file_(file),
        facts_(file.index().facts),
        options_(options),
        plan_(plan),
        cb_(cb),
        threads_(threads),
        next_k_(k_begin),
        k_last_(k_end),
        pag_(options.pag),
        by_last_(workers_by_last_event(facts_)),
        total_(static_cast<size_t>(k_end - k_begin + 1)),
        batch_(std::max<int64_t>(kOneCutWindows, 4 * static_cast<int64_t>(threads))) {}

  StreamedStats run();

 private:
  void delivered(size_t windows) {
    done_ += windows;
    if (cb_.on_progress) cb_.on_progress(done_, total_);
  }
  void start();
  void add_block(size_t i);
  void close(int64_t kb, bool last);
  void analyze_until(int64_t kb, bool last);
  bool all_closed() const { return next_k_ > k_last_; }
  // Every window is cut at once when reading is done: batches are never smaller than
  // batch_ windows before the last one.
  bool one_cut() const { return static_cast<int64_t>(total_) <= batch_; }

  SnailFile& file_;
  const TraceFacts& facts_;
  const AnalysisOptions& options_;
  const StreamedPlan& plan_;
  const StreamedCallbacks& cb_;
  unsigned threads_;
  int64_t next_k_;  // the first window not analyzed yet
  int64_t k_last_;  // the last window to analyze (lowered by cb_.claim)
  StreamingPag pag_;
  // Workers in order of their last event, finished as reading passes it.
  const std::vector<std::pair<int64_t, uint32_t>> by_last_;
  size_t finished_ = 0;
  int64_t S_ = INT64_MIN;  // where reading starts (the lookback)
  uint64_t empty_before_ = 0;
  size_t total_, done_ = 0;
  int64_t batch_;
  BigVector<Event> buf_;
  StreamedStats stats_;
  // With 2 or more threads: batches analyzed while reading goes on.
  std::unique_ptr<BatchPipeline> pipeline_;
};

// The lookback, the windows without events before the first window, and the PAG's
// workers and operators.
void StreamedRun::start() {
  const int64_t A = plan_.start_of(next_k_);
  S_ = reading_start(file_, A, plan_.width, options_.pag.gap_threshold_ns, buf_, stats_);
  empty_before_ = empty_windows_before(plan_, next_k_, latest_event_before(file_, A, buf_));
  // streamed_analysis_obstacle() checked it: halves wait in a map by key, in any order.
  pag_.assume_unique_correlators();
  for (const TraceFacts::Worker& wk : facts_.workers) pag_.declare(wk.id);
  for (uint32_t op : facts_.operators) pag_.declare_operator(op);
  // Windows cut once, at the end (a few large ones): each worker's arrays will hold all
  // its events read; room for them up front instead of growing by copies.
  if (one_cut())
    for (const TraceFacts::Worker& wk : facts_.workers)
      pag_.reserve_worker(wk.id, static_cast<size_t>(wk.events));
}

void StreamedRun::add_block(size_t block) {
  ++stats_.blocks_read;
  stats_.events_read += buf_.size();
  for (const Event& e : buf_) {
    if (e.ts < S_) continue;
    if (pag_.add(e) != StreamingPag::Added::ok) throw out_of_order(file_, block, e);
  }
}

// Analyzes windows [next_k_, kb) (as many as the claim allows; with a claim, in batches,
// so that windows are claimed just before they are analyzed); `last`: reading is done.
void StreamedRun::close(int64_t kb, bool last) {
  while (next_k_ < kb) {
    int64_t upto = cb_.claim ? std::min(kb, next_k_ + batch_) : kb;
    if (cb_.claim) k_last_ = std::min(k_last_, cb_.claim(std::min(upto - 1, k_last_)));
    upto = std::min(upto, k_last_ + 1);
    if (upto <= next_k_) return;
    analyze_until(upto, last && upto == kb);
  }
}

// Cuts windows [next_k_, kb) out of the PAG and analyzes them; `last`: reading is done.
void StreamedRun::analyze_until(int64_t kb, bool last) {
  const bool closed = last && kb - 1 == plan_.k1;
  int64_t end = plan_.start_of(kb);
  if (kb - 1 == plan_.k1 && plan_.to) end = std::min(end, *plan_.to);
  const int64_t start = plan_.start_of(next_k_);
  auto batch = std::make_unique<BatchPipeline::Batch>();
  // The last cut takes the PAG's arrays (freed as they are copied) instead of copying them.
  const bool final_cut = kb == k_last_ + 1;  // then every window is closed
  batch->cut = final_cut ? pag_.take(start, end, closed) : pag_.cut(start, end, closed);
  batch->windows = plan_window_range(batch->cut, plan_.origin, plan_.width, next_k_, kb - 1, closed,
                                     plan_.to, empty_before_);
  batch->first_index = static_cast<size_t>(next_k_ - plan_.k0);
  batch->count = static_cast<size_t>(kb - next_k_);
  next_k_ = kb;
  if (!final_cut) pag_.retire(end);  // the cut is a copy
  if (pipeline_) {
    pipeline_->submit(std::move(batch));
    return;
  }
  analyze_windows_parallel(batch->cut, batch->windows, batch->first_index, options_, threads_,
                           cb_.render, cb_.consume);
  delivered(batch->count);
}

StreamedStats StreamedRun::run() {
  start();
  if (threads_ >= 2)
    pipeline_ = std::make_unique<BatchPipeline>(
        options_, threads_, cb_, [this](size_t windows) { delivered(windows); }, 2);
  // Event blocks to read (those with events at or after S) and the frontier after each:
  // every event before it has been read.
  const std::vector<size_t> blocks = file_.blocks_overlapping(S_, INT64_MAX);
  const std::vector<int64_t> frontier = frontiers_after(file_, blocks);
  // With 2 or more threads the next block is read and decoded on a thread of its own
  // while this one's events are added (one block ahead; `reading` is destroyed, waiting
  // for it, before `next`).
  BigVector<Event> next;
  std::future<void> reading;
  auto read_ahead = [&](size_t i) {
    if (i < blocks.size())
      reading = std::async(std::launch::async,
                           [this, &next, b = blocks[i]] { file_.read_block(b, next); });
  };
  const bool ahead = threads_ >= 2;
  if (ahead) read_ahead(0);
  for (size_t i = 0; i < blocks.size() && !all_closed(); ++i) {
    if (pipeline_) pipeline_->deliver_ready();
    if (ahead) {
      reading.get();
      buf_.swap(next);
      read_ahead(i + 1);
    } else {
      file_.read_block(blocks[i], buf_);
    }
    add_block(blocks[i]);
    const int64_t F = frontier[i + 1];
    pag_.flush_before(F);
    while (finished_ < by_last_.size() && by_last_[finished_].first < F)
      pag_.finish_worker(by_last_[finished_++].second);
    stats_.peak_retained_nodes = std::max(stats_.peak_retained_nodes, pag_.retained_nodes());
    stats_.peak_open_halves = std::max(stats_.peak_open_halves, pag_.open_halves());
    if (F == INT64_MAX) break;
    const int64_t max_end = final_until(pag_, F, facts_.max_delay, by_last_, finished_);
    if (max_end == INT64_MIN) continue;
    const FinalWindows ready = final_windows(plan_, k_last_, max_end);
    if (ready.through_last) {
      close(k_last_ + 1, true);
      break;
    }
    if (ready.k > next_k_ && (ready.k - next_k_ >= batch_ || ready.k == k_last_ + 1))
      close(ready.k, false);
  }
  if (!all_closed()) {
    // Everything needed has been read: finish the workers and close the rest.
    for (; finished_ < by_last_.size(); ++finished_) pag_.finish_worker(by_last_[finished_].second);
    close(k_last_ + 1, true);
  }
  if (pipeline_) pipeline_->finish();
  return stats_;
}

}  // namespace

StreamedStats analyze_snail_streamed(SnailFile& file, const AnalysisOptions& options,
                                     const StreamedPlan& plan, int64_t k_begin, int64_t k_end,
                                     unsigned threads, const StreamedCallbacks& callbacks) {
  if (plan.empty() || k_end < k_begin) return {};
  if (k_begin < plan.k0 || k_end > plan.k1) throw std::invalid_argument("windows outside the plan");
  return StreamedRun(file, options, plan, k_begin, k_end, callbacks, threads).run();
}

StreamedStats analyze_snail_streamed(
    SnailFile& file, const AnalysisOptions& options, const StreamedPlan& plan, int64_t k_begin,
    int64_t k_end, unsigned threads,
    const std::function<void(const WindowView&, RenderedWindow&)>& render,
    const std::function<void(RenderedWindow&)>& consume,
    const std::function<void(size_t, size_t)>& on_progress) {
  return analyze_snail_streamed(file, options, plan, k_begin, k_end, threads,
                                StreamedCallbacks{render, consume, on_progress, {}});
}

}  // namespace snailtrail
