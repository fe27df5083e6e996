// When records become available at a source instance: the cumulative arrivals of a
// piecewise-constant rate (records/s over all instances, split evenly).
//
//   SourceCurve c(op_spec, /*instances=*/4);
//   double n = c.arrived(t);                 // records arrived by t
//   int64_t at = c.time_when(n + 100);       // when 100 more will have arrived
//   uint64_t b = c.in_interval(3, 1'000'000); // whole records of [3 ms, 4 ms)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/scenario.hpp"

namespace snailtrail::sim {

class SourceCurve {
 public:
  SourceCurve(const OperatorSpec& op, uint32_t instances) {
    unlimited_ = op.rate <= 0 && op.rate_changes.empty();
    double cum = 0;
    int64_t t = 0;
    double r = op.rate / instances * 1e-9;  // records per ns
    for (const RateChange& c : op.rate_changes) {
      segs_.push_back({t, r, cum});
      cum += r * static_cast<double>(c.at_ns - t);
      t = c.at_ns;
      r = c.rate / instances * 1e-9;
    }
    segs_.push_back({t, r, cum});
  }

  // True when the source reads as fast as it can (no rate given).
  bool unlimited() const { return unlimited_; }

  double arrived(int64_t t) const {
    if (unlimited_) return INFINITY;
    const Seg* s = &segs_[0];
    for (const Seg& x : segs_)
      if (x.start <= t) s = &x;
    return s->cum + s->rate * static_cast<double>(t - s->start);
  }

  // Whole records that arrive in the i-th interval of `interval` ns, [i, i + 1) *
  // interval: a micro-batch's or an epoch's input.
  uint64_t in_interval(uint32_t i, int64_t interval) const {
    const double a = std::floor(arrived(static_cast<int64_t>(i) * interval) + 1e-9);
    const double z = std::floor(arrived(static_cast<int64_t>(i + 1) * interval) + 1e-9);
    return static_cast<uint64_t>(std::max(0.0, z - a));
  }

  // Earliest time at which `target` records have arrived; INT64_MAX if never.
  int64_t time_when(double target) const {
    if (unlimited_) return 0;
    for (size_t i = 0; i < segs_.size(); ++i) {
      const Seg& s = segs_[i];
      const double end_cum = i + 1 < segs_.size() ? segs_[i + 1].cum : INFINITY;
      if (target <= end_cum || i + 1 == segs_.size()) {
        if (target <= s.cum) return s.start;
        if (s.rate <= 0) continue;
        const double dt = std::ceil((target - s.cum) / s.rate);
        if (!(dt < 9e18)) return INT64_MAX;
        return s.start + static_cast<int64_t>(dt);
      }
    }
    return INT64_MAX;
  }

 private:
  struct Seg {
    int64_t start;
    double rate;
    double cum;
  };
  std::vector<Seg> segs_;
  bool unlimited_ = false;
};

}  // namespace snailtrail::sim
