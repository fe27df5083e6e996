// Request flows from plain logs, in the manner of lprof (Zhao et al., OSDI 2014) but
// without the code: the request identifiers are inferred from the logs themselves.
//
// Identifiers (id_source "auto"): a template parameter slot (template, position) holds
// identifiers if most of its values (>= 30 %) also occur in a slot of another template,
// and its values are not hubs: a value on more than max(64, records / 100) records (a
// node's address, a job id shared by everything, a small counter) never groups lines.
// The census deciding this holds at most FlowOptions::census_cap distinct values, a
// sample by hash beyond (identifiers.cpp); the grouping then holds the identifier values.
// Slots that share values hold one kind of identifier (block ids, request ids, order
// ids); a kind with more distinct values is finer. Records are grouped by union-find over
// the identifier values they hold, as lprof's request accumulators: two groups join only
// if they do not conflict (hold different values of one kind), so a line naming a
// request and a node address links that address to one request at most, and a batch
// line ("delete blk_1 blk_2") links nothing: it goes to the group of its finest value
// and is counted (multi_id_records). --id REGEX instead
// takes the first match (its first group if any) of every message; without identifiers
// (or with id_source "thread") a flow is a (node, thread) header pair.
//
// A flow's records are ordered by time; ties (coarse clocks) by the precedence of their
// templates learnt from the flows' untied pairs, then by (file, line). Its signature is the
// sequence of its templates (lprof's log-sequence id); its latency last - first time; its steps the
// intervals between consecutive records, each attributed to the edge (template of the
// earlier, template of the later record) of the flow graph.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "logs/log_set.hpp"

namespace snailtrail::logs {

// a + b, saturated at the int64 limits (sums of many latencies).
inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

struct FlowOptions {
  std::string id_regex;    // empty = infer
  bool by_thread = false;  // group by (node, thread) instead
  // Distinct id-like values the identifier census holds: exact up to this many, then a
  // sample by hash of at most this many (docs/LOGS.md "Speed", seventh round: a sample
  // can miss the slots of few values, so the cap is high: about 60 bytes a value).
  size_t census_cap = size_t{1} << 22;
};

struct IdSlot {
  uint32_t cluster = 0, position = 0;  // position among the template's parameters
  uint64_t records = 0, distinct = 0, recurring = 0;
};

// Flows hold views, not copies (a log of unique request ids has a flow per line): the id
// into the LogSet's texts (or FlowSet::id_texts), the records into FlowSet::record_ids.
struct Flow {
  std::string_view id;          // the identifier value of its first record
  std::span<uint32_t> records;  // by (time, file, line)
  // Where `records` point: null for LogSet::records (build_flows); stream_flows keeps no
  // LogSet::records on files, so its flows' records index copies (FlowSet::held).
  const LogRecord* held = nullptr;
  int64_t start = 0, end = 0;
  uint32_t node_count = 0;
  uint32_t signature = 0;  // index into FlowSet::signatures
  int64_t latency() const { return end - start; }
  const LogRecord& record(const LogSet& logs, size_t k) const {
    return held ? held[records[k]] : logs.records[records[k]];
  }
};

struct FlowEdge {
  uint32_t from = 0, to = 0;  // templates
  uint64_t count = 0, cross_node = 0;
  int64_t total_ns = 0, max_ns = 0;
};

struct FlowSignature {
  std::vector<uint32_t> templates;
  uint64_t count = 0;
  int64_t total_ns = 0;
  uint32_t example = 0;         // its first flow (in order of first record)
  std::string_view example_id;  // that flow's id
};

struct FlowSet {
  FlowSet() = default;
  FlowSet(FlowSet&&) = default;
  FlowSet& operator=(FlowSet&&) = default;
  FlowSet(const FlowSet&) = delete;  // flows view into record_ids
  FlowSet& operator=(const FlowSet&) = delete;

  // "auto", "shape" (sampled log: slots by the shape of their values), "regex", "thread"
  // or "none"
  std::string id_source;
  std::vector<IdSlot> id_slots;
  // build_flows: every flow, by first record. stream_flows: only the `top` slowest,
  // slowest first (only_slowest), their records in record_ids.
  std::vector<Flow> flows;
  bool only_slowest = false;
  uint64_t flow_count = 0;      // all flows (requests)
  int64_t total_latency = 0;    // of all flows (saturated)
  uint64_t most_open = 0;       // stream_flows: most requests open at once (their records held)
  uint64_t most_held = 0;       // stream_flows: most records held at once (those of open requests)
  uint64_t census_held = 0;     // most id-like values the census held at once (<= census_cap)
  uint64_t id_values_held = 0;  // identifier values held for the grouping (all of them)
  std::vector<uint32_t> record_ids;       // the flows' records, flow after flow
  std::vector<LogRecord> held;            // stream_flows: the kept flows' records (Flow::held)
  std::deque<std::string> id_texts;       // ids made here (node/thread), not in the logs
  OffsetArena id_arena;                   // inferred ids copied from messages read again
  std::vector<FlowEdge> edges;            // by count, descending
  std::vector<FlowSignature> signatures;  // by count, descending
  uint64_t records_in_flows = 0, records_without_id = 0, multi_id_records = 0;
  // Inference: id-like values, and those on more than one record (estimated from the
  // census's sample beyond census_cap, exact below). When almost none
  // repeat the log is sampled (loghub's 2k lines of HDFS): requests are single lines.
  uint64_t id_values = 0, id_values_repeating = 0;
  bool sampled = false;
  std::string id_shape;  // "shape": the values' common prefix (blk_)
};

// Whether a parameter value can name a request: a letter or at least 6 digits, and not a
// number with separators (IP, date, time, version, decimal) nor a host:port address.
bool id_like(std::string_view v);

// The flows' ids view into `logs`, which must outlive them. One pass: the records keep
// their texts (LogOptions::keep: whole lines for --id, else messages).
FlowSet build_flows(const LogSet& logs, const FlowOptions& options);

// The same flows (byte-identical outputs) from logs read by read_logs(paths, read_options)
// with read_options.keep == KeepText::none: the identifier census reads the files again
// (regular files only, not pipes), so no record keeps its text. Without --id only (--id
// needs the whole lines: use build_flows).
FlowSet build_flows_rereading(const LogSet& logs, const LogOptions& read_options,
                              const FlowOptions& options);

// The same outputs with memory bounded by the requests open at a time, not by the flows
// (docs/LOGS.md "Speed"): the records are grouped, then passes over them in record order
// close each request after its last record and keep only sums (signatures, edges, the
// count and total latency of the flows) and the `top` slowest flows (out.flows, slowest
// first, out.only_slowest). If each_flow is set, a third pass gives it every flow in order
// of first record, with its signature's rank (the JSONL; a flow that closes before an
// earlier one waits for it). The messages for inferred ids: the kept ones if
// read_options.keep is messages (or whole lines, needed by --id), else the files are
// read again (regular files only). The records of the passes: the kept ones, else the
// packed ones (LogOptions::pack_records), else the files read again.
using FlowVisitor = std::function<void(const Flow&)>;
FlowSet stream_flows(const LogSet& logs, const LogOptions& read_options, const FlowOptions& options,
                     size_t top, const FlowVisitor& each_flow = {});

}  // namespace snailtrail::logs
