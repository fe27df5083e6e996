// The harness's sources (harness.hpp): open loop at the run's rate or profile (paused
// while RunConfig::pause_sources is set), or closed loop as fast as the dataflow keeps up.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "flow/runtime.hpp"

namespace snailtrail::flow {

// A job's source: worker w gives gen(w, i) for i = 0, 1, ... until cfg.duration or its
// share of cfg.records. With cfg.rate: open loop at cfg.rate / workers records/s
// (timestamps: the intended generation time, in epochs; an idle worker waits on its
// input). With --rate max: closed loop, as fast as the dataflow keeps up (timestamps:
// the current time), never more than kMaxLagEpochs ahead of the output probe's frontier
// (timely's "while probe.less_than(time) step()"), so queues stay bounded and a slow
// worker makes the others wait. One epoch: with two, a 2-worker wordcount had the same
// throughput (0.94-1.00x) but a 1.2-1.35x higher median latency, and the worker that did
// not count the hot word was held back so loosely that CP ranked it first in 2 of 10 runs
// at --skew 0.5 (docs/RUNTIME.md, "Closed loop").
inline constexpr Time kMaxLagEpochs = 1;

namespace detail {
// open_loop_source's operator: a source of T at the run's rate (or closed loop).
template <class T, class Gen>
struct OpenLoopSource {
  JobContext* ctx;
  Gen gen;
  uint64_t produced = 0, limit = 0;
  double per_ns = 0;                                 // records per ns for this worker (0: max)
  std::optional<RateSchedule> sched = std::nullopt;  // --rate-profile
  void operator()(Capability& cap, Output<T>& out) {
    const RunConfig& c = ctx->cfg;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - ctx->start)
                            .count();
    const bool over = now >= c.duration_ns;
    if (produced >= limit || (over && per_ns <= 0)) {
      cap.drop();
      return;
    }
    if (per_ns <= 0)
      closed_loop(cap, out, now);
    else
      open_loop(cap, out, now, over);
  }
  // --rate max: a batch at the current time, unless the dataflow lags behind.
  void closed_loop(Capability& cap, Output<T>& out, int64_t now) {
    const auto epoch = static_cast<Time>(ctx->cfg.epoch_ns);
    const uint32_t w = ctx->worker.index();
    const Time t = std::max<Time>(cap.time(), static_cast<Time>(now) / epoch * epoch);
    cap.downgrade(t);  // time moves on (releasing the frontier) even while waiting
    const Time lag = kMaxLagEpochs * epoch;
    if (t > lag && ctx->probe_frontier < t - lag) return;  // wait for the dataflow
    const uint64_t n = std::min<uint64_t>(4 * kBatch, limit - produced);
    if (ctx->record_latency)
      for (uint64_t k = 0; k < n; ++k) ctx->record_latency->given(produced + k, t, now);
    Session<T> session = out.session(cap);  // cap is at t
    for (uint64_t k = 0; k < n; ++k) session.give(gen(w, produced + k));
    account(n, t);
  }
  // At a rate: the records due by now, each at its intended time.
  void open_loop(Capability& cap, Output<T>& out, int64_t now, bool over) {
    const RunConfig& c = ctx->cfg;
    const auto epoch = static_cast<Time>(c.epoch_ns);
    const uint32_t w = ctx->worker.index();
    if (c.pause_sources && c.pause_sources->load(std::memory_order_acquire)) {
      ctx->worker.set_source_active(true);  // stopped: poll again
      return;
    }
    // Every record whose intended time is before the end is given, however late.
    const int64_t upto = over ? c.duration_ns - 1 : now;
    const double due_f = sched ? sched->count(upto) : static_cast<double>(upto) * per_ns;
    const auto due = std::min<uint64_t>(limit, static_cast<uint64_t>(due_f) + 1);
    const uint64_t n = due > produced ? std::min<uint64_t>(due - produced, 16 * kBatch) : 0;
    Time last_given = 0;
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t i = produced + k;
      const auto intended = intended_time(i);
      const Time t = std::max<Time>(cap.time(), intended / epoch * epoch);
      if (t != cap.time()) cap.downgrade(t);
      if (ctx->record_latency) ctx->record_latency->given(i, t, static_cast<int64_t>(intended));
      out.give(cap, gen(w, i));  // at t
      last_given = t;
    }
    if (over && produced + n >= due) {
      account(n, last_given);
      cap.drop();
      return;
    }
    // Nothing else is due before the next record's intended time.
    const auto next = intended_time(produced + n);
    cap.downgrade(std::max<Time>(cap.time(), next / epoch * epoch));
    ctx->worker.set_source_active(true);
    account(n, last_given);
  }
  Time intended_time(uint64_t i) const {
    if (sched) return static_cast<Time>(std::max<int64_t>(0, sched->time_of(i)));
    return static_cast<Time>(static_cast<double>(i) / per_ns);
  }
  void account(uint64_t n, Time last_given) {
    produced += n;
    if (n == 0) return;
    ctx->generated.fetch_add(n, std::memory_order_relaxed);
    Time last = ctx->last_time.load(std::memory_order_relaxed);
    while (last_given > last &&
           !ctx->last_time.compare_exchange_weak(last, last_given, std::memory_order_relaxed)) {
    }
  }
};
}  // namespace detail

template <class T, class Gen>
Stream<T> open_loop_source(JobContext& ctx, std::string name, Gen gen) {
  detail::OpenLoopSource<T, Gen> l{&ctx, std::move(gen)};
  l.limit = ctx.record_limit();
  l.per_ns = ctx.cfg.rate > 0 ? ctx.cfg.rate / ctx.worker.peers() * 1e-9 : 0;
  if (!ctx.cfg.rate_profile.empty()) {
    l.sched.emplace(ctx.cfg.rate_profile, 1.0 / ctx.worker.peers());
    l.per_ns = ctx.cfg.rate_profile.front().second / ctx.worker.peers() * 1e-9;  // > 0: open loop
  }
  return source<T>(ctx.worker, std::move(name), std::move(l));
}

}  // namespace snailtrail::flow
