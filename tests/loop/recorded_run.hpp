// A closed-loop run recorded for replay (test_loop_ranks.cpp, test_planner_thread.cpp):
// keycount-megaphone on 4 workers, every bin on worker 0, 50 us per record (one worker: at
// most 20 k records/s), 6 k then 24 k records/s for 3 s, its trace as the sinks got it (one
// buffer per worker flush, in arrival order), and the loop options that replay it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "flow/runtime.hpp"
#include "loop/autoscaler.hpp"
#include "megaphone/jobs.hpp"

namespace snailtrail::testing {

struct RecordedRun {
  std::vector<std::vector<Event>> buffers;
  std::vector<std::string> operators;
};

inline RecordedRun record_closed_loop_run() {
  megaphone::JobOptions o;
  o.base = "keycount";
  o.log_bins = 6;
  o.cost_us = 50;
  o.initial.assign(64, 0);
  auto log = std::make_shared<megaphone::MigrationLog>();
  flow::RunConfig cfg;
  cfg.job = megaphone::register_job(o, log);
  cfg.workers = 4;
  cfg.rate_profile = {{0, 6000}, {1'000'000'000, 24000}};
  cfg.duration_ns = 3'000'000'000;
  cfg.keys = 20'000;
  cfg.trace = true;
  std::mutex mu;
  RecordedRun run;
  cfg.on_trace_events = [&](flow::TraceBuffer ev, const std::vector<std::string>& names) {
    std::lock_guard<std::mutex> lock(mu);
    if (run.operators.empty()) run.operators = names;
    run.buffers.push_back(*ev);
  };
  flow::run_job(cfg);
  return run;
}

// Up to 4 workers from 1, 64 bins, 250 ms intervals, the run's rate profile; no rollback,
// every change taken.
inline loop::LoopOptions replay_options() {
  loop::LoopOptions lo;
  lo.max_workers = 4;
  lo.initial_workers = 1;
  lo.bins = 64;
  lo.policy_interval_ns = 250'000'000;
  lo.rate_profile = {{0, 6000}, {1'000'000'000, 24000}};
  lo.manager.rollback = false;
  lo.manager.threshold = 0;
  lo.startup_ns = 250'000'000;  // a 3 s run: the first interval only (the rule before loop48)
  return lo;
}

}  // namespace snailtrail::testing
