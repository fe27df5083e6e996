// The queue between `snailtrail run`'s workers and a consumer of its own trace
// (--trace-to's stream, LiveTrace; run --http's Job graph, RunJobGraph): the workers'
// flushed buffers are queued under a short lock, shared, not copied (never blocking them: a
// flush that does not fit the bound is dropped and counted); a thread of the queue's own
// takes what arrived every 50 ms, joins it into one vector and hands it to the consumer,
// with the workers' and operators' names the first time they are known. With `keep`, every
// buffer is also kept for --trace.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flow/harness.hpp"
#include "trace/trace.hpp"

namespace snailtrail::cli {

class RunEventQueue {
 public:
  // `events`: what arrived since the last call, in arrival order (the consumer may reorder
  // or empty it); `names`: the names, once, on the first call after the operators are
  // known, else nullptr; `last`: the queue is stopping and this is the final call.
  using Consume = std::function<void(std::vector<Event>& events, const Trace* names, bool last)>;

  // Workers [first_worker, first_worker + workers) are named as the runtime names them in
  // --trace ("worker-N").
  RunEventQueue(uint32_t first_worker, uint32_t workers, bool keep, uint64_t max_queued);
  ~RunEventQueue();
  RunEventQueue(const RunEventQueue&) = delete;
  RunEventQueue& operator=(const RunEventQueue&) = delete;

  // Starts the thread that calls `consume` (once, before the first add).
  void start(Consume consume);
  // The runtime's trace sink (any worker thread).
  void add(flow::TraceBuffer events, const std::vector<std::string>& ops);
  // Asks the thread for its final call and waits for it at most `bound`: false if the
  // consumer was still busy then (call join() after unblocking it).
  bool stop(std::chrono::milliseconds bound);
  void join();
  // Events dropped because the queue was full (the consumer did not keep up).
  uint64_t dropped() const;
  bool keeps() const { return keep_; }
  // With `keep`, after join(): every event, in time order.
  std::vector<Event> take_kept();

 private:
  void loop();

  Consume consume_;
  bool keep_;
  uint64_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<flow::TraceBuffer> queued_;
  uint64_t queued_events_ = 0;
  std::vector<flow::TraceBuffer> kept_;
  Trace names_;  // written under mu_ until have_ops_, read-only after
  bool have_ops_ = false, stopping_ = false, loop_done_ = false;
  uint64_t dropped_ = 0;
  std::thread thread_;
};

}  // namespace snailtrail::cli
