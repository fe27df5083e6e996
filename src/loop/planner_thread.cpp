#include "loop/planner_thread.hpp"

#include <chrono>
#include <utility>

namespace snailtrail::loop {

PlannerThread::PlannerThread(Sink sink, Plan plan, int64_t ask_every_ns)
    : sink_(std::move(sink)),
      plan_(std::move(plan)),
      ask_every_ns_(ask_every_ns),
      thread_([this] { loop(); }) {}

PlannerThread::~PlannerThread() {
  try {
    finish();
  } catch (...) {  // a failed run reports its own error
  }
}

void PlannerThread::hand_over(flow::TraceBuffer events, const std::vector<std::string>& ops) {
  if (!events) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (ops_.size() < ops.size()) ops_ = ops;  // names only grow (operators are added)
  ++stats_.buffers;
  stats_.events += events->size();
  if (done_) {  // after finish(): the thread is gone
    if (!error_) sink_(*events, ops_);
    return;
  }
  inbox_.push_back(std::move(events));
  wake_.notify_one();
}

std::optional<std::vector<uint32_t>> PlannerThread::ask(int64_t now_ns,
                                                        const std::vector<uint32_t>& config) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_) std::rethrow_exception(error_);
  if (answer_) {
    std::optional<std::vector<uint32_t>> a = std::move(*answer_);
    answer_.reset();
    asked_ = false;
    if (a) return a;  // the next call comes once its migration is complete
  }
  if (asked_ || now_ns < last_ask_ns_ + ask_every_ns_ || done_) return std::nullopt;
  request_ = Request{now_ns, config};
  asked_ = true;
  last_ask_ns_ = now_ns;
  wake_.notify_one();
  return std::nullopt;
}

void PlannerThread::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return done_ || (!busy_ && inbox_.empty() && !request_) || error_; });
}

void PlannerThread::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (!done_) {  // handed over after the thread's last look
    done_ = true;
    if (!error_) try {
        for (const flow::TraceBuffer& b : inbox_) sink_(*b, ops_);
      } catch (...) {
        error_ = std::current_exception();
      }
    inbox_.clear();
    idle_.notify_all();
  }
  if (error_) std::rethrow_exception(error_);
}

PlannerThread::Stats PlannerThread::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PlannerThread::loop() {
  std::vector<flow::TraceBuffer> batch;  // swapped with the inbox: its capacity is reused
  std::vector<std::string> ops;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !inbox_.empty() || request_; });
    if (inbox_.empty() && !request_) break;  // stop_, nothing left
    batch.swap(inbox_);
    std::optional<Request> req = std::move(request_);
    request_.reset();
    if (ops.size() != ops_.size()) ops = ops_;
    const bool failed = error_ != nullptr;
    busy_ = true;
    lock.unlock();
    // The buffers handed over before the request first: the planner sees what it would
    // have seen on worker 0.
    std::exception_ptr err;
    std::optional<std::vector<uint32_t>> answer;
    double ms = 0;
    try {
      if (!failed) {
        for (const flow::TraceBuffer& b : batch) sink_(*b, ops);
        if (req) {
          const auto t0 = std::chrono::steady_clock::now();
          answer = plan_(req->now_ns, req->config);
          ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                   .count();
        }
      }
    } catch (...) {
      err = std::current_exception();
    }
    batch.clear();
    lock.lock();
    busy_ = false;
    if (err && !error_) error_ = err;
    if (req) {
      answer_ = std::move(answer);
      ++stats_.requests;
      if (ms > stats_.plan_ms_max) stats_.plan_ms_max = ms;
    }
    idle_.notify_all();
  }
  idle_.notify_all();
}

}  // namespace snailtrail::loop
