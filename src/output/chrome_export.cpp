#include "output/chrome_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <tuple>
#include <vector>

#include "output/format.hpp"
#include "output/names.hpp"
#include "pag/timeline.hpp"

namespace snailtrail {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

using output_detail::put;

// ns from the origin as microseconds with three decimals: exact, whatever the magnitude
// (a double in the JSON would lose ns past 2^53 ns; a reader parsing it as a double
// still gets ns exactly for 104 days from the origin).
void put_us(fmt::memory_buffer& out, int64_t ns) {
  auto it = std::back_inserter(out);
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;  // > INT64_MIN: differences of two trace times that fit in int64
  }
  fmt::format_to(it, "{}.{:03}", ns / 1000, ns % 1000);
}

// A merged message edge (Snapshot::msg_mult) on a critical path: every message of its
// (sender, receiver, type) in flight across all of [p, q] is one of its pieces.
struct CriticalSpan {
  uint32_t src, dst;
  uint8_t type;
  int64_t p, q;
  auto key() const { return std::tie(src, dst, type); }
};

// Marks the messages that are pieces of a critical merged edge: for each message, of the
// spans of its key starting after its send, the one ending first must end before its
// receive. O((spans + messages) log spans).
void mark_merged(const Pag& pag, std::vector<CriticalSpan>& spans, std::vector<uint8_t>& crit) {
  if (spans.empty()) return;
  auto by_key_and_start = [](const CriticalSpan& a, const CriticalSpan& b) {
    return std::tie(a.src, a.dst, a.type, a.p) < std::tie(b.src, b.dst, b.type, b.p);
  };
  std::sort(spans.begin(), spans.end(), by_key_and_start);
  std::vector<int64_t> min_q(spans.size());  // over the spans from i to the key's last
  for (size_t i = spans.size(); i-- > 0;)
    min_q[i] = i + 1 < spans.size() && spans[i + 1].key() == spans[i].key()
                   ? std::min(spans[i].q, min_q[i + 1])
                   : spans[i].q;
  for (size_t mi = 0; mi < pag.messages.size(); ++mi) {
    const Message& m = pag.messages[mi];
    const CriticalSpan probe{m.src_worker, m.dst_worker, static_cast<uint8_t>(m.type), m.src_ts, 0};
    const auto it = std::upper_bound(spans.begin(), spans.end(), probe, by_key_and_start);
    if (it != spans.end() && it->key() == probe.key() &&
        min_q[static_cast<size_t>(it - spans.begin())] < m.dst_ts)
      crit[mi] = 1;
  }
}

}  // namespace

ChromeExportStats write_chrome_trace(const Trace& trace, const AnalysisOptions& options,
                                     const std::function<void(std::string_view)>& sink) {
  ChromeExportStats st;
  const Pag pag = build_pag(trace, options.pag);
  // Per global node: critical ns carried by its timeline edge over all windows; per
  // message: on a critical path of some window.
  std::vector<double> crit_ns(pag.node_count(), 0.0);
  std::vector<uint8_t> msg_crit(pag.messages.size(), 0);
  std::vector<CriticalSpan> merged;
  analyze_pag(pag, options, [&](const WindowView& view) {
    if (view.skipped || view.snapshot.window.empty_run > 0) return;
    const Snapshot& snap = view.snapshot;
    const CpResult& cp = view.cp;
    ++st.windows;
    if (!cp.has_paths()) return;
    const double cp_ns = static_cast<double>(cp.cp_ns);
    for (uint32_t v = 0; v < snap.node_count(); ++v)
      if (snap.has_timeline_edge(v) && cp.timeline_cp[v] > 0)
        crit_ns[snap.edge[v]] += cp.timeline_cp[v] * cp_ns;
    // A message of zero duration has CP 0 even on a path: its centrality f(src) b(dst)
    // says whether a path takes it.
    const bool counts =
        cp.forward.size() == snap.node_count() && cp.backward.size() == snap.node_count();
    for (size_t m = 0; m < snap.msg_src.size(); ++m) {
      const bool on = (m < cp.message_cp.size() && cp.message_cp[m] > 0) ||
                      (counts && snap.ts[snap.msg_src[m]] == snap.ts[snap.msg_dst[m]] &&
                       !(cp.forward[snap.msg_src[m]] * cp.backward[snap.msg_dst[m]]).is_zero());
      if (!on) continue;
      msg_crit[snap.msg_index[m]] = 1;
      if (snap.mult(m) > 1)
        merged.push_back({snap.worker[snap.msg_src[m]], snap.worker[snap.msg_dst[m]],
                          static_cast<uint8_t>(pag.messages[snap.msg_index[m]].type),
                          snap.ts[snap.msg_src[m]], snap.ts[snap.msg_dst[m]]});
    }
  });
  mark_merged(pag, merged, msg_crit);

  const int64_t origin = pag.first_ts;
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  auto flush = [&](bool force) {
    if (out.size() >= kFlushBytes || (force && out.size() > 0)) {
      sink(std::string_view(out.data(), out.size()));
      out.clear();
    }
  };
  fmt::format_to(it,
                 "{{\"displayTimeUnit\": \"ns\", \"otherData\": {{\"exporter\": \"snailtrail "
                 "convert --to chrome\", \"source\": ");
  append_json_string(out, trace.source, kJsonNames);
  fmt::format_to(it, ", \"time_origin_ns\": {}, \"windows\": {}}}, \"traceEvents\": [\n", origin,
                 st.windows);
  bool first = true;
  auto begin_event = [&]() {
    if (!first) put(out, ",\n");
    first = false;
  };

  for (size_t w = 0; w < pag.worker_count(); ++w) {
    const uint32_t id = pag.worker_ids[w];
    const std::string name = trace.worker_name(id);
    for (const char* meta : {"process_name", "thread_name"}) {
      begin_event();
      fmt::format_to(it, "{{\"ph\": \"M\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, ", meta, id,
                     id);
      fmt::format_to(it, "\"args\": {{\"name\": ");
      append_json_string(out, name, kJsonNames);
      put(out, "}}");
    }
    begin_event();
    fmt::format_to(it,
                   "{{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": {}, \"tid\": {}, "
                   "\"args\": {{\"sort_index\": {}}}}}",
                   id, id, w);
    // The worker's timeline: runs of edges of one activity instance are one slice.
    const uint32_t b = pag.worker_begin[w], e = pag.worker_begin[w + 1];
    for (uint32_t v = b; v < e;) {
      if (pag.edge_type[v] == kNoEdge) {
        ++v;
        continue;
      }
      uint32_t last = v;
      double crit = crit_ns[v];
      while (last + 1 < e && pag.edge_type[last + 1] == pag.edge_type[v] &&
             pag.edge_op[last + 1] == pag.edge_op[v] &&
             pag.edge_instance[last + 1] == pag.edge_instance[v])
        crit += crit_ns[++last];
      const auto type = static_cast<ActivityType>(pag.edge_type[v]);
      const uint32_t op = pag.edge_op[v];
      const bool critical = crit > 0;
      begin_event();
      put(out, "{\"ph\": \"X\", \"name\": ");
      append_json_string(out, op != kNone ? trace.operator_name(op) : std::string(name_of(type)),
                         kJsonNames);
      fmt::format_to(it, ", \"cat\": \"{}{}\", \"pid\": {}, \"tid\": {}, \"ts\": ", name_of(type),
                     critical ? ",critical" : "", id, id);
      put_us(out, pag.node_ts[v] - origin);
      put(out, ", \"dur\": ");
      put_us(out, pag.node_ts[last + 1] - pag.node_ts[v]);
      fmt::format_to(it, ", \"args\": {{\"type\": \"{}\"", name_of(type));
      if (op != kNone) {
        put(out, ", \"operator\": ");
        append_json_string(out, trace.operator_name(op), kJsonNames);
        fmt::format_to(it, ", \"operator_id\": {}", op);
      }
      fmt::format_to(it, ", \"critical_ns\": {:.0f}}}}}", crit);
      ++st.slices;
      st.critical_slices += critical;
      v = last + 1;
      flush(false);
    }
  }

  for (size_t m = 0; m < pag.messages.size(); ++m) {
    const Message& msg = pag.messages[m];
    const bool critical = msg_crit[m] != 0;
    const std::string_view name = critical ? "critical" : name_of(msg.type);
    const std::string_view cat = critical ? "critical" : "message";
    const uint32_t src = pag.worker_ids[msg.src_worker], dst = pag.worker_ids[msg.dst_worker];
    // A flow is a start ("s") on the sender and an end bound to the enclosing slice ("f").
    auto put_flow = [&](std::string_view phase, uint32_t worker, int64_t ts) {
      begin_event();
      fmt::format_to(it,
                     "{{\"ph\": {}, \"id\": {}, \"name\": \"{}\", \"cat\": \"{}\", \"pid\": {}, "
                     "\"tid\": {}, \"ts\": ",
                     phase, m + 1, name, cat, worker, worker);
      put_us(out, ts - origin);
      put(out, "}");
    };
    put_flow("\"s\"", src, msg.src_ts);
    put_flow("\"f\", \"bp\": \"e\"", dst, msg.dst_ts);
    ++st.flows;
    st.critical_flows += critical;
    flush(false);
  }
  put(out, "\n]}\n");
  flush(true);
  return st;
}

}  // namespace snailtrail
