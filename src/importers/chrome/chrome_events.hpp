// The Chrome importer in two steps: reading the events into slices, flows and names
// (chrome_importer.cpp), then building the trace from them: lanes, messages, worker
// names and diagnostics (chrome_trace.cpp). Internal to the Chrome importer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "importers/common/json_util.hpp"
#include "importers/common/slices.hpp"
#include "trace/diagnostic_kind.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers::chrome_detail {

constexpr uint32_t kNone32 = UINT32_MAX;

// What a slice carries besides its interval: flow bindings and TensorFlow dependencies.
struct SliceInfo {
  uint32_t bind = kNone32;  // bind_id flow key
  bool flow_in = false, flow_out = false;
  uint32_t tf_node = kNone32;                 // args.name: the TensorFlow node this op executed
  uint32_t inputs_begin = 0, inputs_end = 0;  // range of tf_inputs_
};

struct FlowPoint {
  uint32_t key;
  int64_t ts;
  uint32_t group;
  uint8_t phase;    // 0 s, 1 t, 2 f
  bool next_slice;  // "bp": "e": binds to the next slice starting at or after ts
  uint32_t index;
};

// The importer's diagnostic kinds, in the order a trace lists them (chrome_trace.cpp).
inline constexpr DiagnosticKind kTruncatedFile = cut_input("chrome.truncated_file");
inline constexpr DiagnosticKind kOverlappingSlicesMoved =
    repaired("chrome.overlapping_slices_moved");
inline constexpr DiagnosticKind kUnmatchedEnds = repaired("chrome.unmatched_ends");
inline constexpr DiagnosticKind kUnclosedBegins = repaired("chrome.unclosed_begins");
inline constexpr DiagnosticKind kNegativeDurations = repaired("chrome.negative_durations");
inline constexpr DiagnosticKind kCompleteWithoutDur = repaired("chrome.complete_without_dur");
inline constexpr DiagnosticKind kFlowsWithoutId = repaired("chrome.flows_without_id");
inline constexpr DiagnosticKind kFlowsWithoutStart = repaired("chrome.flows_without_start");
inline constexpr DiagnosticKind kFlowsWithoutEnd = repaired("chrome.flows_without_end");
inline constexpr DiagnosticKind kInputsWithoutProducer = repaired("chrome.inputs_without_producer");
inline constexpr DiagnosticKind kIgnoredEvents = repaired("chrome.ignored_events");
inline constexpr DiagnosticKind kEnvelopeEvents = repaired("chrome.envelope_events");
inline constexpr std::array kDiagnostics = {
    kTruncatedFile,     kOverlappingSlicesMoved, kUnmatchedEnds,  kUnclosedBegins,
    kNegativeDurations, kCompleteWithoutDur,     kFlowsWithoutId, kFlowsWithoutStart,
    kFlowsWithoutEnd,   kInputsWithoutProducer,  kIgnoredEvents,  kEnvelopeEvents,
};

struct Counts {
  uint64_t unmatched_ends = 0, unclosed_begins = 0, negative_durations = 0,
           complete_without_dur = 0, flow_without_id = 0, flow_without_start = 0,
           flow_without_end = 0, inputs_without_producer = 0, ignored_events = 0,
           truncated_file = 0, envelope_events = 0;
};

// What reading leaves for building: the slices with what they carry, the flow points,
// the groups (one per pid and tid) with their names, and the counts of what was skipped.
struct ChromeEvents {
  json::Interner groups, names, tf_nodes;
  std::vector<std::string> group_pid, group_tid;
  std::unordered_map<std::string, std::string> process_names, thread_names;
  std::vector<Slice> slices;
  std::vector<SliceInfo> infos;
  std::vector<FlowPoint> flows;
  std::vector<uint32_t> tf_inputs;  // node id << 1 | control
  Counts counts;
};

// The trace of the events read (their B/E pairs already matched into slices).
Trace build_chrome_trace(ChromeEvents& ev, const std::string& source);

}  // namespace snailtrail::importers::chrome_detail
