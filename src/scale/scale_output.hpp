// What `scale policy` and `scale manage` print (docs/AUTOSCALING.md §3-4): the policy's
// decisions per epoch, a simulated controlled run with its diagnosis, and the decisions
// of the live loop as they are made; each as a table or JSON.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scale/diagnosis.hpp"
#include "scale/manager.hpp"
#include "scale/policy.hpp"
#include "scale/simulation.hpp"
#include "scale/topology.hpp"

namespace snailtrail::scale {

// Shortest round-trip form; null for NaN/inf (JSON has neither).
std::string json_number(double v);
std::string json_string(const std::string& s);  // quoted, '"', '\\' and controls escaped
// {"name": value, ...} in operator order.
std::string json_map(const Topology& t, const std::vector<uint32_t>& v);
std::string json_map(const Topology& t, const std::vector<double>& v);
// "name=N name=N ...".
std::string par_text(const Topology& t, const std::vector<uint32_t>& p);

// One epoch of `scale policy`.
struct PolicyEpoch {
  int64_t epoch = 0;
  std::string timestamp;
  std::vector<uint32_t> current;
  std::vector<OperatorRates> rates;
  Decision decision;
};

struct PolicyHeader {
  bool json = false;
  std::string system;  // as given
  std::string extra;   // after the epoch count in the table's first line
  SourceTarget source_target = SourceTarget::true_output;
};

void write_policy(fmt::memory_buffer& b, const PolicyHeader& h, const Topology& t,
                  const std::vector<PolicyEpoch>& epochs);

// A simulated controlled run (`scale manage --simulate`).
struct RunHeader {
  bool json = false;
  std::string scenario;    // as given
  std::string controller;  // ds2 or dhalion
};

void write_run(fmt::memory_buffer& b, const RunHeader& h, const ControlledRun& r,
               const std::optional<Diagnosis>& diag = std::nullopt, const std::string& skew = "");

// Decisions of the live loop as they come: a table, {"decisions": [...]} (one decision
// per line), or JSON lines (one object per decision, nothing else).
class DecisionLog {
 public:
  enum class Format : uint8_t { table, json, jsonl };
  DecisionLog(fmt::memory_buffer& b, Format format);
  void add(const Topology& t, const Action& a, double time_s, int64_t epoch);
  void finish();  // the closing bracket, or "no scaling decision"

 private:
  fmt::memory_buffer& b_;
  Format format_;
  bool first_ = true;
};

}  // namespace snailtrail::scale
