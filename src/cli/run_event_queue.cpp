#include "cli/run_event_queue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace snailtrail::cli {

RunEventQueue::RunEventQueue(uint32_t first_worker, uint32_t workers, bool keep,
                             uint64_t max_queued)
    : keep_(keep), max_queued_(max_queued) {
  for (uint32_t i = first_worker; i < first_worker + workers; ++i)
    names_.worker_names[i] = fmt::format("worker-{}", i);
}

RunEventQueue::~RunEventQueue() {
  if (thread_.joinable()) {
    stop(std::chrono::milliseconds::max());
    join();
  }
}

void RunEventQueue::start(Consume consume) {
  consume_ = std::move(consume);
  thread_ = std::thread([this] { loop(); });
}

void RunEventQueue::add(std::vector<Event>&& events, const std::vector<std::string>& ops) {
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
  if (queued_.empty())
    queued_ = std::move(events);
  else
    queued_.insert(queued_.end(), events.begin(), events.end());
}

bool RunEventQueue::stop(std::chrono::milliseconds bound) {
  std::unique_lock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  if (bound == std::chrono::milliseconds::max()) {
    cv_.wait(lock, [this] { return loop_done_; });
    return true;
  }
  return cv_.wait_for(lock, bound, [this] { return loop_done_; });
}

void RunEventQueue::join() {
  if (thread_.joinable()) thread_.join();
}

uint64_t RunEventQueue::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::vector<Event> RunEventQueue::take_kept() {
  std::lock_guard lock(mu_);
  std::vector<Event> out = std::move(kept_);
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  return out;
}

void RunEventQueue::loop() {
  bool named = false;
  for (bool last = false; !last;) {
    std::vector<Event> events;
    const Trace* names = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; });
      last = stopping_;
      events.swap(queued_);
      if (!named && have_ops_) {
        names = &names_;
        named = true;
      }
    }
    consume_(events, names, last);
  }
  std::lock_guard lock(mu_);
  loop_done_ = true;
  cv_.notify_all();
}

}  // namespace snailtrail::cli
