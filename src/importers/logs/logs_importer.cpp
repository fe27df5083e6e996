// Request flows from plain logs as activities and messages (logs_importer.hpp).
#include "importers/logs/logs_importer.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>

#include "importers/common/slices.hpp"

namespace snailtrail::importers {
namespace {

// The kinds the importer counts, and those the log reader counts (logs/log_set.cpp, by
// name; tests/test_diagnostic_kinds.cpp checks they are declared here). A line longer
// than the reader keeps is cut by the reader, not cut input.
constexpr DiagnosticKind kRecordsWithoutId = repaired("logs.records_without_id");
constexpr DiagnosticKind kZeroLengthSteps = repaired("logs.zero_length_steps");
constexpr DiagnosticKind kMultiIdRecords = repaired("logs.multi_id_records");
constexpr std::array kLogDiagnostics = {
    repaired("logs.binary_lines"),
    repaired("logs.long_lines_cut"),
    repaired("logs.invalid_utf8_lines"),
    repaired("logs.joined_lines"),
    repaired("logs.lines_before_first_header"),
    repaired("logs.other_format_lines"),
    repaired("logs.time_backwards"),
    repaired("logs.too_many_tokens"),
    repaired("logs.files_without_format"),
    repaired("logs.bad_timestamps"),
    kRecordsWithoutId,
    kZeroLengthSteps,
    kMultiIdRecords,
};

}  // namespace

Trace logs_to_trace(const logs::LogSet& set, const logs::FlowSet& fs, const std::string& source) {
  // Pass 1: one slice per same-node step; per step, the slice index (or none).
  std::vector<Slice> slices;
  std::vector<std::vector<uint32_t>> step_slice(fs.flows.size());
  uint64_t zero_length = 0;
  for (size_t fi = 0; fi < fs.flows.size(); ++fi) {
    const logs::Flow& f = fs.flows[fi];
    step_slice[fi].assign(f.records.size(), kNoSlice);  // [k]: the step ending at record k
    for (size_t k = 1; k < f.records.size(); ++k) {
      const logs::LogRecord& p = set.records[f.records[k - 1]];
      const logs::LogRecord& r = set.records[f.records[k]];
      if (p.node != r.node) continue;
      if (r.ts <= p.ts) {
        ++zero_length;
        continue;
      }
      Slice s;
      s.start = p.ts;
      s.end = r.ts;
      s.group = r.thread;
      s.type = ActivityType::processing;
      s.op = r.cluster;
      step_slice[fi][k] = static_cast<uint32_t>(slices.size());
      slices.push_back(s);
    }
  }
  Lanes lanes = assign_lanes(slices, static_cast<uint32_t>(set.threads.size()), false);
  // Pass 2: messages between nodes, from the lane where the request was to the lane
  // where it continues.
  struct Msg {
    uint32_t from;
    int64_t send;
    uint32_t to;
    int64_t recv;
  };
  std::vector<Msg> msgs;
  for (size_t fi = 0; fi < fs.flows.size(); ++fi) {
    const logs::Flow& f = fs.flows[fi];
    for (size_t k = 1; k < f.records.size(); ++k) {
      const logs::LogRecord& p = set.records[f.records[k - 1]];
      const logs::LogRecord& r = set.records[f.records[k]];
      if (p.node == r.node) continue;
      const uint32_t before = step_slice[fi][k - 1];
      const uint32_t after = k + 1 < f.records.size() ? step_slice[fi][k + 1] : kNoSlice;
      const uint32_t from = before != kNoSlice ? lanes.lane_of[before] : lanes.first_lane(p.thread);
      const uint32_t to = after != kNoSlice ? lanes.lane_of[after] : lanes.first_lane(r.thread);
      msgs.push_back({from, p.ts, to, r.ts});
    }
  }
  EventSink sink;
  sink.add_timelines(slices, lanes, nullptr, GapsBetweenSlices::unrecorded);
  for (const Msg& m : msgs) sink.add_message(m.from, m.send, m.to, m.recv);
  Trace trace;
  trace.source = source;
  sink.finish(trace);
  for (uint32_t lane = 0; lane < lanes.group_of.size(); ++lane) {
    const auto& [node, thread] = set.threads[lanes.group_of[lane]];
    std::string name = set.nodes[node];
    if (!thread.empty()) name += "/" + thread;
    if (lanes.index_in_group[lane] > 0)
      name += " (lane " + std::to_string(lanes.index_in_group[lane]) + ")";
    trace.worker_names[lane] = std::move(name);
  }
  for (uint32_t c = 0; c < set.drain.cluster_count(); ++c) {
    std::string name = "T" + std::to_string(c) + " " + set.drain.template_text(c);
    if (name.size() > 80) name = name.substr(0, 77) + "...";
    trace.operator_names[c] = std::move(name);
  }
  trace.import_diagnostics = set.diagnostics;
  if (fs.records_without_id)
    trace.import_diagnostics.emplace_back(kRecordsWithoutId.name, fs.records_without_id);
  if (zero_length) trace.import_diagnostics.emplace_back(kZeroLengthSteps.name, zero_length);
  if (fs.multi_id_records)
    trace.import_diagnostics.emplace_back(kMultiIdRecords.name, fs.multi_id_records);
  return trace;
}

int sniff_logs(std::string_view path, std::string_view head) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < head.size()) {
    const size_t nl = head.find('\n', pos);
    if (nl == std::string_view::npos) break;  // the last line may be cut
    lines.push_back(head.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (!lines.empty() && logs::detect_format(lines)) return 15;
  const bool dot_log = path.size() > 4 && path.substr(path.size() - 4) == ".log";
  return dot_log ? 5 : 0;
}

bool is_log_dir(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return false;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(path, ec))
    if (e.is_regular_file(ec)) files.push_back(e.path().string());
  if (files.empty()) return false;
  std::sort(files.begin(), files.end());
  std::ifstream in(files.front(), std::ios::binary);
  std::string head(kSniffBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return sniff_logs(files.front(), head) >= 15;
}

Trace read_logs_trace(const std::string& path, const ImportOptions& options) {
  std::vector<std::string> files;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(path, ec))
      if (e.is_regular_file()) files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw TraceError(path, "directory", "no log files in it");
  } else {
    files.push_back(path);
  }
  logs::LogOptions lo;
  lo.format = options.log_format;
  lo.keep = options.log_id.empty() ? logs::KeepText::messages : logs::KeepText::whole_lines;
  lo.line_kinds = false;
  logs::LogSet set;
  try {
    set = logs::read_logs(files, lo);
  } catch (const std::runtime_error& e) {
    throw TraceError(path, "read", e.what());
  }
  logs::FlowOptions fo;
  fo.id_regex = options.log_id;
  const logs::FlowSet flows = logs::build_flows(set, fo);
  if (flows.flows.empty())
    throw TraceError(path, "requests",
                     "no request identifiers found (pass --log-id REGEX, or a --log-format with "
                     "a <Thread> field)");
  return logs_to_trace(set, flows, path);
}

namespace {
constexpr ImportOption kLogsOptions[] = {
    {"--log-format", "header preset or pattern (docs/LOGS.md); default: detected per file",
     &ImportOptions::log_format, nullptr},
    {"--log-id", "request-id regular expression; default: inferred from the templates",
     &ImportOptions::log_id, nullptr},
};
}  // namespace

const Importer& logs_descriptor() {
  static const Importer d{
      .name = "logs",
      .description =
          "plain-text logs: a file or a directory of files, one per node "
          "(docs/LOGS.md)",
      .sniff = sniff_logs,
      .read = read_logs_trace,
      .options = kLogsOptions,
      .whole_window = true,
      .window_reason = "request logs are a set of requests",
      .diagnostics = kLogDiagnostics,
  };
  return d;
}

}  // namespace snailtrail::importers
