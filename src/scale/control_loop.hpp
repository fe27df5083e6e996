// The control loop of `scale manage` and the one-step loop of `scale policy`
// (docs/AUTOSCALING.md §2-4): a controller fed by one observation source, interval by
// interval; a decision goes back to the source (deploy) and to the caller (print it, run
// --apply). The sources (scale/sources.hpp, scale/serve_source.hpp, the simulator in
// scale/simulation.hpp) differ only in where the metrics come from and whether a
// decision changes what they observe next.
//
//   TraceSource src(trace, interval_ns);
//   LoopHooks h;
//   h.controller = [&](const Topology& t) -> Controller& { return *(c = make(t)); };
//   h.on_decision = [&](const Action& a, const SourceInterval& in) { print(a); return true; };
//   run_control_loop(src, h);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scale/manager.hpp"
#include "scale/topology.hpp"

namespace snailtrail::scale {

// One policy interval as a source delivers it.
struct SourceInterval {
  int64_t epoch = 0;
  // For `scale policy`'s table: DS2's epoch_timestamp, "now", or the interval's start.
  std::string timestamp;
  // time_s: the interval's end. An empty source_target is filled by the loop from the
  // per-instance targets (LoopHooks::source_rates) and the interval's parallelism.
  Observation observation;
  size_t instances = 0;  // instances reported (the progress line)
  bool decide = true;    // false: observed, but no decision (a partial last interval)
  // Names an operator's instance (scale policy's saturated instances); empty: none.
  std::function<std::string(uint32_t op, uint32_t instance)> label;
};

// Sources stay where they are built (some refer to their own members).
class ObservationSource {
 public:
  ObservationSource() = default;
  ObservationSource(const ObservationSource&) = delete;
  ObservationSource& operator=(const ObservationSource&) = delete;
  virtual ~ObservationSource() = default;
  // The dataflow of the intervals; empty while unknown (serve before any event).
  virtual const Topology& topology() const = 0;
  // The next interval, waiting for it when the source is live; nullopt: the source ended.
  virtual std::optional<SourceInterval> next() = 0;
  // True (once) when the interval next() returned belongs to a new dataflow: the
  // controller starts over.
  virtual bool restarted() { return false; }
  // Deploys a decision made on `in`; false when nothing changes (then it is not one).
  virtual bool deploy(const Action& /*decision*/, const SourceInterval& /*in*/) { return true; }
  // Intervals arrive over time (a progress line per interval makes sense).
  virtual bool live() const { return false; }
};

struct LoopHooks {
  // The controller for a topology: at the start (when the topology is known) and after
  // every restart. The caller owns it.
  std::function<Controller&(const Topology&)> controller;
  // Per operator: a source's target output rate per instance (NaN: none), for a topology.
  std::function<std::vector<double>(const Topology&)> source_rates;
  std::function<void(const SourceInterval&)> on_interval;  // before the controller sees it
  // A deployed decision; returning false ends the loop.
  std::function<bool(const Action&, const SourceInterval&)> on_decision;
};

// Runs until the source ends or on_decision returns false; the number of decisions.
uint32_t run_control_loop(ObservationSource& source, const LoopHooks& hooks);

}  // namespace snailtrail::scale
