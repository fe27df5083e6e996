// The trace of the Chrome events read (chrome_events.hpp): slices packed into lanes, the
// messages of flows, bind ids and TensorFlow inputs between them, worker names.
#include <algorithm>

#include "importers/chrome/chrome_events.hpp"

namespace snailtrail::importers::chrome_detail {
namespace {

// s -> t -> ... -> f chains with one id become messages between consecutive points.
void flow_messages(ChromeEvents& ev, Lanes& lanes, EventSink& sink) {
  std::sort(ev.flows.begin(), ev.flows.end(), [](const FlowPoint& a, const FlowPoint& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.phase != b.phase) return a.phase < b.phase;
    return a.index < b.index;
  });
  bool open = false, continued = false;
  uint32_t open_worker = 0;
  int64_t open_ts = 0;
  for (size_t i = 0; i < ev.flows.size(); ++i) {
    const FlowPoint& p = ev.flows[i];
    if (i > 0 && p.key != ev.flows[i - 1].key) {
      if (open && !continued) ++ev.counts.flow_without_end;
      open = false;
    }
    const uint32_t worker = lanes.first_lane(p.group);
    int64_t ts = p.ts;
    if (p.next_slice) {
      const std::vector<uint32_t>& on_lane = lanes.slices[worker];
      auto it = std::lower_bound(on_lane.begin(), on_lane.end(), ts,
                                 [&](uint32_t s, int64_t t) { return ev.slices[s].start < t; });
      if (it != on_lane.end()) ts = ev.slices[*it].start;
    }
    if (p.phase == 0) {
      if (open && !continued) ++ev.counts.flow_without_end;
      open = true, continued = false;
    } else {
      if (open) {
        sink.add_message(open_worker, open_ts, worker, ts);
      } else {
        ++ev.counts.flow_without_start;
      }
      open = p.phase == 1;
      continued = true;
    }
    open_worker = worker, open_ts = ts;
  }
  if (open && !continued) ++ev.counts.flow_without_end;
}

// bind_id flows: a flow_out slice sends to the next flow_in slice with the same id.
void bind_messages(ChromeEvents& ev, const Lanes& lanes, EventSink& sink) {
  struct Point {
    uint32_t key;
    int64_t ts;
    uint8_t order;  // 0 out, 1 in, 2 out of a slice that also has an in
    uint32_t slice;
  };
  std::vector<Point> points;
  for (uint32_t i = 0; i < ev.slices.size(); ++i) {
    const SliceInfo& in = ev.infos[i];
    if (in.bind == kNone32) continue;
    if (in.flow_in) points.push_back({in.bind, ev.slices[i].start, 1, i});
    if (in.flow_out)
      points.push_back({in.bind, ev.slices[i].start, uint8_t(in.flow_in ? 2 : 0), i});
  }
  std::sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.order != b.order) return a.order < b.order;
    return a.slice < b.slice;
  });
  uint32_t open = kNone32;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    if (i > 0 && p.key != points[i - 1].key) {
      if (open != kNone32) ++ev.counts.flow_without_end;
      open = kNone32;
    }
    if (p.order != 1) {
      if (open != kNone32) ++ev.counts.flow_without_end;
      open = p.slice;
      continue;
    }
    if (open == kNone32) {
      ++ev.counts.flow_without_start;
      continue;
    }
    // The source may still run when the destination starts: the message leaves then.
    const Slice& src = ev.slices[open];
    const Slice& dst = ev.slices[p.slice];
    sink.add_message(lanes.lane_of[open], std::min(src.end, dst.start), lanes.lane_of[p.slice],
                     dst.start);
    open = kNone32;
  }
  if (open != kNone32) ++ev.counts.flow_without_end;
}

// TensorFlow: an op's inputs were produced by the latest execution of the input node
// that ended before the op started; on another worker that is a message from the
// producer's end to the consumer's start (thesis §3.4).
void input_messages(ChromeEvents& ev, const Lanes& lanes, EventSink& sink) {
  std::vector<std::vector<uint32_t>> producers(ev.tf_nodes.names.size());
  bool any_inputs = false;
  for (uint32_t i = 0; i < ev.slices.size(); ++i) {
    if (ev.infos[i].tf_node != kNone32) producers[ev.infos[i].tf_node].push_back(i);
    any_inputs |= ev.infos[i].inputs_end > ev.infos[i].inputs_begin;
  }
  if (!any_inputs) return;
  for (auto& p : producers)
    std::sort(p.begin(), p.end(), [&](uint32_t a, uint32_t b) {
      return ev.slices[a].end != ev.slices[b].end ? ev.slices[a].end < ev.slices[b].end : a < b;
    });
  for (uint32_t c = 0; c < ev.slices.size(); ++c) {
    for (uint32_t k = ev.infos[c].inputs_begin; k < ev.infos[c].inputs_end; ++k) {
      const std::vector<uint32_t>& p = producers[ev.tf_inputs[k] >> 1];
      auto it = std::upper_bound(p.begin(), p.end(), ev.slices[c].start,
                                 [&](int64_t t, uint32_t s) { return t < ev.slices[s].end; });
      if (it == p.begin()) {
        ++ev.counts.inputs_without_producer;
        continue;
      }
      const uint32_t prod = *(it - 1);
      if (lanes.lane_of[prod] == lanes.lane_of[c]) continue;  // same worker: program order
      sink.add_message(
          lanes.lane_of[prod], ev.slices[prod].end, lanes.lane_of[c], ev.slices[c].start,
          (ev.tf_inputs[k] & 1) ? ActivityType::control_message : ActivityType::data_message);
    }
  }
}

}  // namespace

Trace build_chrome_trace(ChromeEvents& ev, const std::string& source) {
  Lanes lanes = assign_lanes(ev.slices, static_cast<uint32_t>(ev.groups.names.size()), false);
  EventSink sink;
  sink.add_timelines(ev.slices, lanes, nullptr, GapsBetweenSlices::idle);
  const bool has_flows =
      !ev.flows.empty() || std::any_of(ev.infos.begin(), ev.infos.end(),
                                       [](const SliceInfo& i) { return i.bind != kNone32; });
  flow_messages(ev, lanes, sink);
  bind_messages(ev, lanes, sink);
  // Explicit flows already carry the dependencies: inferring them again would double them.
  if (!has_flows) input_messages(ev, lanes, sink);

  Trace trace;
  trace.source = source;
  sink.finish(trace);
  for (uint32_t lane = 0; lane < lanes.group_of.size(); ++lane) {
    const uint32_t g = lanes.group_of[lane];
    auto p = ev.process_names.find(ev.group_pid[g]);
    auto t = ev.thread_names.find(ev.groups.names[g]);
    std::string name = (p != ev.process_names.end() ? p->second : "pid " + ev.group_pid[g]) + "/" +
                       (t != ev.thread_names.end() ? t->second : "tid " + ev.group_tid[g]);
    if (lanes.index_in_group[lane] > 0)
      name += " (lane " + std::to_string(lanes.index_in_group[lane]) + ")";
    trace.worker_names[lane] = std::move(name);
  }
  for (const Slice& s : ev.slices) trace.operator_names.emplace(s.op, ev.names.names[s.op]);
  auto diag = [&](const DiagnosticKind& kind, uint64_t n) {
    if (n) trace.import_diagnostics.emplace_back(kind.name, n);
  };
  diag(kTruncatedFile, ev.counts.truncated_file);
  diag(kOverlappingSlicesMoved, lanes.moved);
  diag(kUnmatchedEnds, ev.counts.unmatched_ends);
  diag(kUnclosedBegins, ev.counts.unclosed_begins);
  diag(kNegativeDurations, ev.counts.negative_durations);
  diag(kCompleteWithoutDur, ev.counts.complete_without_dur);
  diag(kFlowsWithoutId, ev.counts.flow_without_id);
  diag(kFlowsWithoutStart, ev.counts.flow_without_start);
  diag(kFlowsWithoutEnd, ev.counts.flow_without_end);
  diag(kInputsWithoutProducer, ev.counts.inputs_without_producer);
  diag(kIgnoredEvents, ev.counts.ignored_events);
  diag(kEnvelopeEvents, ev.counts.envelope_events);
  return trace;
}

}  // namespace snailtrail::importers::chrome_detail
