// Helpers for the simulator tests: run an example scenario, analyze its trace window by
// window and sum the summaries.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/simulator.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::testing {

inline std::string example_path(const std::string& name) {
  return std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/" + name + ".toml";
}

// Simulates examples/NAME.toml for `duration_ns` (and `seed`, if given).
inline sim::SimResult simulate_example(const std::string& name, int64_t duration_ns,
                                       std::optional<uint64_t> seed = {}) {
  sim::Scenario s = sim::load_scenario(example_path(name));
  sim::Overrides o;
  o.duration_ns = duration_ns;
  o.seed = seed;
  sim::apply_overrides(s, o);
  return sim::simulate(s);
}

// Summaries summed over the windows that have transient paths.
struct Sums {
  size_t windows = 0;
  std::map<std::string, double> worker_cp, worker_conv;  // by worker name
  std::map<std::string, double> op_cp, op_conv;          // by operator name
  std::array<double, kActivityTypeCount> act_cp{}, act_conv{};
};

inline Sums analyze_sums(const Trace& trace, int64_t window_ns) {
  Pag pag = build_pag(trace);
  AnalysisOptions opt;
  opt.windows.width_ns = window_ns;
  opt.sample_single_path = false;
  Sums s;
  analyze_pag(pag, opt, [&](const WindowView& v) {
    const WindowSummary& w = v.summary;
    if (!w.has_paths) return;
    ++s.windows;
    for (size_t i = 0; i < w.cp.worker.size(); ++i) {
      const std::string name = trace.worker_name(pag.worker_ids[i]);
      s.worker_cp[name] += w.cp.worker[i];
      s.worker_conv[name] += w.conventional.worker[i];
    }
    for (const auto& [op, value] : w.cp.op) s.op_cp[trace.operator_name(op)] += value;
    for (const auto& [op, value] : w.conventional.op) s.op_conv[trace.operator_name(op)] += value;
    for (int a = 0; a < kActivityTypeCount; ++a) {
      s.act_cp[a] += w.cp.activity[a];
      s.act_conv[a] += w.conventional.activity[a];
    }
  });
  return s;
}

// Entries sorted by value, largest first.
inline std::vector<std::pair<std::string, double>> ranked(const std::map<std::string, double>& m) {
  std::vector<std::pair<std::string, double>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

inline std::string describe(const std::vector<std::pair<std::string, double>>& v, size_t n = 5) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i)
    out += (i ? ", " : "") + v[i].first + "=" + std::to_string(v[i].second);
  return out;
}

}  // namespace snailtrail::testing
