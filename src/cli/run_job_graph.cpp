#include "cli/run_job_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "serve/live_analyzer.hpp"

namespace snailtrail::cli {

RunJobGraph::RunJobGraph(int64_t window_ns, uint32_t first_worker, uint32_t workers, bool keep,
                         uint64_t max_queued)
    : keep_(keep), max_queued_(max_queued) {
  for (uint32_t i = first_worker; i < first_worker + workers; ++i)
    names_.worker_names[i] = fmt::format("worker-{}", i);
  LiveOptions o;  // the defaults of `report` (gap threshold) and of serve (lateness)
  o.window_ns = window_ns;
  live_ = std::make_unique<LiveAnalyzer>(o, [this](LiveWindow& w) {
    if (w.summary.window.empty_run > 0) graph_.add_run(w.summary);
  });
  live_->on_view([this](const WindowView& v, const Names& n) { graph_.add_window(v, n); });
  thread_ = std::thread([this] { loop(); });
}

RunJobGraph::~RunJobGraph() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void RunJobGraph::add(std::vector<Event>&& events, const std::vector<std::string>& ops) {
  std::lock_guard lock(mu_);
  if (!have_ops_) {
    for (uint32_t i = 0; i < ops.size(); ++i) names_.operator_names[i] = ops[i];
    have_ops_ = true;
  }
  if (keep_) kept_.insert(kept_.end(), events.begin(), events.end());
  if (queued_.size() + events.size() > max_queued_) {
    dropped_ += events.size();
    return;
  }
  queued_.insert(queued_.end(), events.begin(), events.end());
}

uint64_t RunJobGraph::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void RunJobGraph::feed(std::vector<Event>& events) {
  // A flush is one worker's events in time order; chunks of several workers interleave,
  // and the analyzer wants each worker's events in order, which a stable sort keeps.
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  const auto now = std::chrono::steady_clock::now();
  for (const Event& e : events) {
    live_->add(e);
    last_seen_[e.worker] = now;
  }
  for (const auto& [id, t] : last_seen_)
    if (now - t > std::chrono::seconds(1) && !live_->is_idle(id)) live_->set_idle(id);
  live_->advance();
}

void RunJobGraph::loop() {
  for (bool last = false; !last;) {
    std::vector<Event> events;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; });
      last = stopping_;
      events.swap(queued_);
      if (!named_ && have_ops_) {
        live_->add_names(names_);
        named_ = true;
        // A named worker that never sends (one the autoscaler leaves idle) would hold the
        // windows back: it gets the same second as the others.
        for (const auto& [id, name] : names_.worker_names)
          last_seen_.try_emplace(id, std::chrono::steady_clock::now());
      }
    }
    feed(events);
  }
}

void RunJobGraph::finish() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();  // the last events fed
  live_->finish();
}

std::vector<Event> RunJobGraph::take_kept() {
  std::lock_guard lock(mu_);
  std::vector<Event> out = std::move(kept_);
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  return out;
}

std::string RunJobGraph::json(std::string marks) {
  graph_.set_marks(std::move(marks));
  return graph_.json();
}

}  // namespace snailtrail::cli
