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

void RunEventQueue::add(flow::TraceBuffer events, const std::vector<std::string>& ops) {
  std::lock_guard lock(mu_);
  if (!have_ops_) {
    for (uint32_t i = 0; i < ops.size(); ++i) names_.operator_names[i] = ops[i];
    have_ops_ = true;
  }
  if (!events || events->empty()) return;
  if (keep_) kept_.push_back(events);
  const uint64_t n = events->size();
  if (queued_events_ + n > max_queued_) {
    dropped_ += n;
    return;
  }
  queued_events_ += n;
  queued_.push_back(std::move(events));
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

namespace {
// The buffers' events in one vector, in buffer order.
std::vector<Event> joined(const std::vector<flow::TraceBuffer>& buffers) {
  size_t n = 0;
  for (const auto& b : buffers) n += b->size();
  std::vector<Event> out;
  out.reserve(n);
  for (const auto& b : buffers) out.insert(out.end(), b->begin(), b->end());
  return out;
}
}  // namespace

std::vector<Event> RunEventQueue::take_kept() {
  std::vector<flow::TraceBuffer> kept;
  {
    std::lock_guard lock(mu_);
    kept.swap(kept_);
  }
  std::vector<Event> out = joined(kept);
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  return out;
}

void RunEventQueue::loop() {
  bool named = false;
  std::vector<flow::TraceBuffer> taken;  // swapped with the queue: its capacity is reused
  for (bool last = false; !last;) {
    const Trace* names = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; });
      last = stopping_;
      taken.swap(queued_);
      queued_events_ = 0;
      if (!named && have_ops_) {
        names = &names_;
        named = true;
      }
    }
    std::vector<Event> events = joined(taken);  // on this thread, not the workers'
    taken.clear();
    consume_(events, names, last);
  }
  std::lock_guard lock(mu_);
  loop_done_ = true;
  cv_.notify_all();
}

}  // namespace snailtrail::cli
