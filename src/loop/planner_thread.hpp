// The closed loop's planning off the workers' threads (docs/CLOSED-LOOP.md, issue 35). The
// planners (Autoscaler, Rebalancer) keep their state under a mutex that their trace sinks
// take too; called from the workers, DS2's planning and the rebalancer's copy of an
// interval ran on worker 0's thread (the Megaphone controller) while the other workers'
// trace flushes waited for that mutex, and worker 0 routed nothing meanwhile. Here one
// thread of its own does all of it:
// - the workers hand over their trace buffers (shared, never copied) into an inbox (a
//   vector of buffers under a short lock: no per-event copy, no planner lock);
// - worker 0's controller asks without waiting: ask() posts a request (the time and the
//   configuration) and returns the answer to an earlier one once it is there;
// - the planner thread gives the planners every buffer handed over before a request, in
//   order, then the request: the planners see the same sequence of events and plan calls
//   as on worker 0, so the same input gives the same decisions.
//
//   loop::PlannerThread pt(sink, plan);   // sink: the planners' on_events; plan: their plan
//   cfg.on_trace_events = [&](flow::TraceBuffer ev, const auto& ops) { pt.hand_over(ev, ops); };
//   job.planner = [&](int64_t now, const auto& c) { return pt.ask(now, c); };
//   flow::run_job(cfg);
//   pt.finish();                          // every buffer given to the planners
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "flow/harness.hpp"
#include "trace/event.hpp"

namespace snailtrail::loop {

class PlannerThread {
 public:
  using Sink = std::function<void(const std::vector<Event>&, const std::vector<std::string>&)>;
  using Plan = std::function<std::optional<std::vector<uint32_t>>(int64_t now_ns,
                                                                  const std::vector<uint32_t>&)>;
  // A request at most every this much of the run's time: the controller asks at every
  // activation while idle (thousands per second); the autoscaler and the rebalancer act
  // as soon as an interval's evidence is complete.
  static constexpr int64_t kAskEveryNs = 1'000'000;

  // Starts the thread. `ask_every_ns`: kAskEveryNs (tests replaying a feed: 0).
  PlannerThread(Sink sink, Plan plan, int64_t ask_every_ns = kAskEveryNs);
  ~PlannerThread();  // finish(), errors dropped
  PlannerThread(const PlannerThread&) = delete;
  PlannerThread& operator=(const PlannerThread&) = delete;

  // Worker threads: puts the buffer into the inbox; never waits on planning.
  void hand_over(flow::TraceBuffer events, const std::vector<std::string>& operator_names);
  // Worker 0 (the Megaphone controller's planner hook), whenever no migration is in flight:
  // the answer to the previous request if it has one (no new request then: the next call
  // comes once that migration is complete), else a new request (at most one in flight)
  // and nothing. Never waits on planning; rethrows what the planners threw.
  std::optional<std::vector<uint32_t>> ask(int64_t now_ns, const std::vector<uint32_t>& config);
  // Blocks until the request in flight (if any) is answered and the buffers handed over
  // so far are given to the planners (tests, finish).
  void wait_idle();
  // After the run: gives the planners every buffer left and stops the thread; rethrows
  // what the planners threw. Idempotent.
  void finish();

  struct Stats {
    uint64_t buffers = 0, events = 0;  // handed over
    uint64_t requests = 0;             // plan calls
    double plan_ms_max = 0;            // the longest plan call (wall time)
  };
  Stats stats() const;

 private:
  void loop();

  Sink sink_;
  Plan plan_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::vector<flow::TraceBuffer> inbox_;
  std::vector<std::string> ops_;
  struct Request {
    int64_t now_ns = 0;
    std::vector<uint32_t> config;
  };
  std::optional<Request> request_;  // posted, not taken yet
  bool busy_ = false;               // the thread is giving buffers or planning
  bool asked_ = false;              // a request is in flight (posted or being planned)
  std::optional<std::optional<std::vector<uint32_t>>> answer_;
  int64_t ask_every_ns_;
  int64_t last_ask_ns_ = INT64_MIN;
  bool stop_ = false;
  bool done_ = false;  // finish() joined the thread
  std::exception_ptr error_;
  Stats stats_;
  std::thread thread_;
};

}  // namespace snailtrail::loop
