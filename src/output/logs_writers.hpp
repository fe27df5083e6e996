// The outputs of `snailtrail logs templates|flows` (docs/LOGS.md): the templates table and
// per-line JSONL, and the flows' table, JSON document and per-request JSONL. Durations
// are shown in human units ("1.2 s", "37 h"), or in lines for logs without time.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "logs/flows.hpp"
#include "logs/log_set.hpp"

namespace snailtrail::output {

// A duration with 3 significant digits and a unit: "850 ns", "12.3 µs", "1.2 s",
// "4.5 min", "37 h"; "N lines" for logs without time.
std::string log_duration(int64_t ns, bool has_time);

// `logs templates`: the table (templates by count) and the JSONL of every input line.
void write_templates_table(fmt::memory_buffer& out, const logs::LogSet& set);
void write_templates_line(fmt::memory_buffer& out, const logs::LogSet& set, uint32_t file,
                          size_t line, const std::vector<std::string>& templates);

// One request as a JSON object (with its steps if `steps`).
void write_flow_json(fmt::memory_buffer& out, const logs::LogSet& set, const logs::Flow& f,
                     bool steps);

// What the outputs of `logs flows` share: the log set, its flows, the flows by latency
// (slowest first: all of build_flows', or the few that stream_flows kept) and each step's
// share of all requests' latency.
struct FlowsView {
  const logs::LogSet& set;
  const logs::FlowSet& fs;
  std::vector<const logs::Flow*> slowest;
  int64_t total_latency = 0;
  bool has_time = false;
  FlowsView(const logs::LogSet& s, const logs::FlowSet& f);
  double share(int64_t ns) const {
    return total_latency > 0 ? static_cast<double>(ns) / static_cast<double>(total_latency) : 0.0;
  }
  // --format json: the summary, the flow graph and the `top` slowest requests. `flush`,
  // if set, is called after each template, flow, edge and request (as write_table's).
  void write_json(fmt::memory_buffer& buf, size_t top,
                  const std::function<void()>& flush = {}) const;
  // The table; `id_regex` is --id (empty if inferred). `flush`, if set, is called after
  // each template line, so that a caller can write the buffer out in pieces (a log of
  // mostly unique lines has a template per few lines: tens of MB of table).
  void write_table(fmt::memory_buffer& buf, size_t top, const std::string& id_regex,
                   const std::function<void()>& flush = {}) const;
  // The line that says where the request ids came from.
  std::string identifiers_line(const std::string& id_regex) const;
};

}  // namespace snailtrail::output
