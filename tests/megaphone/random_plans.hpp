// Megaphone's random migration plans at random times and their oracle, the plain loop
// (tests/megaphone/test_megaphone.cpp in one process, tests/across under mpirun): random
// inputs on every worker, a random plan of (time, bin, worker) updates given at random
// speeds, and records that schedule echoes (pending records that must travel with their
// bin). A run counts every application, order violations per bin, applications on a
// worker other than the plan's, bins sent and the runtime's own counters.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include "flow/runtime.hpp"
#include "megaphone/megaphone.hpp"

namespace snailtrail::random_plans {

namespace mp = snailtrail::megaphone;
namespace flow = snailtrail::flow;
using flow::Time;

constexpr uint64_t kEcho = uint64_t{1} << 62;  // marks a scheduled (pending) record
constexpr uint64_t kLastTime = ~uint64_t{0};   // state slot: the last time folded in the bin

struct Scenario {
  uint32_t workers = 2;
  uint32_t log_bins = 3;
  std::vector<std::vector<std::pair<Time, uint64_t>>> input;  // per worker, time-sorted
  std::vector<mp::ControlUpdate> plan;                        // time-sorted
  Time echo_delay = 0;                                        // 0: no scheduled records
  std::vector<size_t> per_round;  // records a worker's source gives per round (its speed)
  uint32_t control_every = 1;     // the control source gives one update every this many rounds
};

// A random scenario on 1-4 workers, or on `workers` (> 0; the worker count is still
// drawn, so that the one-process tests' sequence of scenarios stays the same).
inline Scenario random_scenario(std::mt19937_64& rng, bool with_plan, uint32_t workers = 0) {
  Scenario s;
  s.workers = 1 + static_cast<uint32_t>(rng() % 4);
  if (workers) s.workers = workers;
  s.log_bins = static_cast<uint32_t>(rng() % 7);
  const uint64_t keys = 1 + rng() % 200;
  const Time horizon = 50 + rng() % 200;
  s.input.resize(s.workers);
  for (auto& in : s.input) {
    const size_t n = rng() % 400;
    Time t = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 4 == 0) t += rng() % 5;
      in.emplace_back(std::min(t, horizon), rng() % keys);
    }
  }
  if (with_plan) {
    const size_t updates = rng() % 40;
    for (size_t i = 0; i < updates; ++i)
      s.plan.push_back({rng() % (horizon + 10), static_cast<uint32_t>(rng() % (1u << s.log_bins)),
                        static_cast<uint32_t>(rng() % s.workers)});
    std::sort(
        s.plan.begin(), s.plan.end(),
        [](const mp::ControlUpdate& a, const mp::ControlUpdate& b) { return a.time < b.time; });
  }
  s.echo_delay = rng() % 3 == 0 ? 0 : 1 + rng() % 20;
  for (uint32_t w = 0; w < s.workers; ++w) s.per_round.push_back(1 + rng() % 64);
  s.control_every = 1 + static_cast<uint32_t>(rng() % 16);
  return s;
}

struct Outcome {
  std::map<uint64_t, uint64_t> counts;
  uint64_t applied = 0;
  uint64_t bins_sent = 0;
  uint64_t order_violations = 0;
  uint64_t misplaced = 0;  // folded on another worker than the plan's for (time, bin)
  uint64_t early_records = 0, frontier_regressions = 0;
};

// The plain loop: every record counted once, and once more as its echo.
inline std::map<uint64_t, uint64_t> oracle(const Scenario& s) {
  std::map<uint64_t, uint64_t> out;
  for (const auto& in : s.input)
    for (const auto& [t, k] : in) {
      ++out[k];
      if (s.echo_delay) ++out[k | kEcho];
    }
  return out;
}

// The plan's configuration: the worker of `bin` at time t (the last update at or before t;
// of several at one time the last one).
inline uint32_t config_at(const Scenario& s, Time t, uint32_t bin) {
  uint32_t w = mp::initial_owner(bin, s.workers);
  for (const auto& u : s.plan)
    if (u.time <= t && u.bin == bin) w = u.worker;
  return w;
}

// Runs the scenario on s.workers workers; with a transport of P processes (every one
// calling it with the same scenario), on s.workers / P threads here, and the outcome is
// this process's part (counts of its workers' bins, its workers' counters).
inline Outcome run(const Scenario& s, flow::Transport* transport = nullptr) {
  Outcome o;
  const uint32_t local = transport ? s.workers / transport->procs() : s.workers;
  std::mutex mu;
  std::atomic<uint64_t> applied{0}, sent{0}, violations{0}, misplaced{0};
  std::vector<flow::WorkerCounters> counters;
  flow::run_dataflow(
      local,
      [&](flow::Worker& w) {
        const auto* in = &s.input[w.index()];
        const size_t speed = s.per_round.empty() ? 64 : s.per_round[w.index()];
        auto data = flow::source<uint64_t>(
            w, "source",
            [in, speed, i = size_t{0}](flow::Capability& cap, flow::Output<uint64_t>& out) mutable {
              for (size_t n = 0; n < speed && i < in->size(); ++n, ++i) {
                const auto [t, k] = (*in)[i];
                if (t != cap.time()) cap.downgrade(t);
                out.give(cap, k);
              }
              if (i == in->size()) cap.drop();
            });
        const auto* plan = &s.plan;
        auto control = flow::source<mp::ControlUpdate>(
            w, "control",
            [plan, every = s.control_every, me = w.index(), i = size_t{0}, round = uint32_t{0}](
                flow::Capability& cap, flow::Output<mp::ControlUpdate>& out) mutable {
              if (me != 0) {
                cap.drop();
                return;
              }
              if (++round % every != 0) return;
              for (size_t n = 0; n < 1 && i < plan->size(); ++n, ++i) {
                const auto& u = (*plan)[i];
                if (u.time != cap.time()) cap.downgrade(u.time);
                out.give(cap, u);
              }
              if (i == plan->size()) cap.drop();
            });
        mp::Options opts;
        opts.log_bins = s.log_bins;
        opts.on_bin_sent = [&](uint32_t, uint64_t bytes) {
          EXPECT_GT(bytes, 0u);
          sent.fetch_add(1);
        };
        const Time delay = s.echo_delay;
        mp::stateful_unary<std::unordered_map<uint64_t, uint64_t>, char>(
            data, control, "count", opts, [](uint64_t k) { return flow::mix64(k & ~kEcho); },
            [&, delay, me = w.index()](Time t, uint64_t k,
                                       std::unordered_map<uint64_t, uint64_t>& st,
                                       mp::Later<uint64_t>& later, flow::Session<char>&) {
              applied.fetch_add(1);
              if (config_at(s, t, later.bin()) != me) misplaced.fetch_add(1);
              auto [it, fresh] = st.try_emplace(kLastTime, t);
              if (!fresh && it->second > t) violations.fetch_add(1);
              it->second = t;
              ++st[k];
              if (delay && !(k & kEcho)) later.schedule(t + delay, k | kEcho);
            },
            [&](uint32_t, std::unordered_map<uint64_t, uint64_t>& st) {
              std::lock_guard<std::mutex> lock(mu);
              for (const auto& [k, v] : st)
                if (k != kLastTime) o.counts[k] += v;
            });
      },
      &counters, flow::kRingCapacity, transport);
  o.applied = applied;
  o.bins_sent = sent;
  o.order_violations = violations;
  o.misplaced = misplaced;
  for (const auto& c : counters) {
    o.early_records += c.early_records;
    o.frontier_regressions += c.frontier_regressions;
  }
  return o;
}

// How many bins change worker under the plan (an upper bound of what must be sent).
inline bool plan_moves_something(const Scenario& s) {
  std::vector<uint32_t> owner(1u << s.log_bins);
  for (uint32_t b = 0; b < owner.size(); ++b) owner[b] = mp::initial_owner(b, s.workers);
  for (const auto& u : s.plan)
    if (owner[u.bin] != u.worker) return true;
  return false;
}

}  // namespace snailtrail::random_plans
