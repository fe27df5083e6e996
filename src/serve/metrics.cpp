#include <algorithm>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "serve/serve_state.hpp"
#include "trace/json_text.hpp"

namespace snailtrail::serve {

std::string label_value(std::string_view v) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size();) {
    const char c = v[i];
    if (p[i] >= 0x80) {
      const size_t len = utf8_sequence_length(p + i, v.size() - i);
      if (len == 0) {
        out += "\xef\xbf\xbd";
        ++i;
      } else {
        out.append(v.substr(i, len));
        i += len;
      }
      continue;
    }
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
    ++i;
  }
  return out;
}

namespace {

// Appends Prometheus metrics to one text.
class MetricText {
 public:
  explicit MetricText(std::string& out) : out_(out) {}

  void metric(const char* name, const char* type, const char* help, double value) {
    fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help,
                   name, type, name, value);
  }
  void counter(const char* name, const char* help, uint64_t value) {
    metric(name, "counter", help, static_cast<double>(value));
  }
  void gauge(const char* name, const char* help, double value) {
    metric(name, "gauge", help, value);
  }
  // A gauge with one series per (label value, value).
  void groups(const char* name, const char* label, const char* help,
              const std::vector<std::pair<std::string, double>>& values) {
    fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const auto& [key, v] : values)
      fmt::format_to(std::back_inserter(out_), "{}{{{}=\"{}\"}} {}\n", name, label,
                     label_value(key), v);
  }

 private:
  std::string& out_;
};

// Events and windows: what came in and what the analysis made of it.
void stream_metrics(MetricText& m, const SharedState& s, const IngestCounters& c) {
  m.counter("snailtrail_events_ingested_total", "Events decoded from all sources.",
            c.events.load());
  m.counter("snailtrail_events_analyzed_total", "Events accepted into windows.", s.events_analyzed);
  m.counter("snailtrail_bytes_received_total", "Bytes read from all sources.", c.bytes.load());
  m.gauge("snailtrail_ingest_rate_events_per_second",
          "Events decoded per second over the last second.", s.ingest_rate);
  m.counter("snailtrail_windows_emitted_total", "Windows analyzed and written.", s.windows_emitted);
  m.gauge("snailtrail_window_lag_seconds",
          "Wall time from the stream passing a window's end to its result, last window.",
          s.lag_last);
  m.gauge("snailtrail_window_lag_seconds_max", "The largest window lag so far.", s.lag_max);
  m.counter("snailtrail_late_events_total",
            "Events for windows already emitted: counted, not merged.", s.late);
  m.gauge("snailtrail_late_event_share",
          "Share of events dropped as late so far (late / (analyzed + late)).", s.late_share);
  m.gauge("snailtrail_late_events_warning",
          "1 when more than 1% of the events were dropped as late: start producers together "
          "or use --wait-for.",
          s.late_share > kLateWarnShare ? 1 : 0);
  m.counter("snailtrail_time_jump_events_total",
            "Events refused for jumping more than --max-jump ahead of the latest event.",
            s.time_jumps);
  m.counter("snailtrail_empty_windows_total",
            "Windows without events written as empty_windows records (not analyzed).",
            s.empty_windows);
  m.counter("snailtrail_out_of_order_events_total",
            "Events older than their worker's previous event: dropped.", s.out_of_order);
}

// Decoding, TCP connections and the input buffer budget.
void input_metrics(MetricText& m, const IngestCounters& c, size_t budget) {
  m.counter("snailtrail_invalid_lines_total", "Malformed JSONL lines skipped.", c.bad_lines.load());
  m.counter("snailtrail_invalid_blocks_total", "Invalid .snail blocks skipped.",
            c.bad_blocks.load());
  m.counter("snailtrail_truncated_streams_total", "Streams that ended inside a line or block.",
            c.truncated.load());
  m.counter("snailtrail_broken_streams_total", "Streams closed because their framing was lost.",
            c.broken_streams.load());
  m.counter("snailtrail_connections_total", "TCP connections accepted.",
            c.connections_total.load());
  m.gauge("snailtrail_connections_open", "TCP connections open now.",
          static_cast<double>(c.connections_open.load()));
  m.counter("snailtrail_connections_refused_total",
            "TCP connections closed at once: --max-connections were open.",
            c.connections_refused.load());
  m.counter("snailtrail_connections_timed_out_total",
            "TCP connections closed after --connection-timeout of silence.",
            c.connections_timed_out.load());
  m.counter("snailtrail_connections_unauthorized_total",
            "TCP connections closed without a valid token line (--token-file).",
            c.connections_unauthorized.load());
  m.counter("snailtrail_connections_tls_failed_total",
            "TCP connections closed because their TLS handshake failed (--tls-cert).",
            c.tls_failed.load());
  m.gauge("snailtrail_ingest_buffered_bytes",
          "TCP input received but not decoded yet (incomplete blocks and lines).",
          static_cast<double>(c.buffered_bytes.load()));
  m.gauge("snailtrail_ingest_buffered_bytes_max", "The largest buffered input so far.",
          static_cast<double>(c.buffered_peak.load()));
  m.gauge("snailtrail_ingest_buffer_budget_bytes",
          "--ingest-buffer: the budget of buffered input beyond 64 KiB per connection.",
          static_cast<double>(budget));
  m.gauge("snailtrail_ingest_paused_connections",
          "TCP connections not read now: waiting for the input buffer budget.",
          static_cast<double>(c.paused_connections.load()));
  // --nats: the durable consumer's lag (stored, not read yet) and its acknowledgements.
  m.counter("snailtrail_nats_messages_total", "JetStream messages read.", c.nats_messages.load());
  m.gauge("snailtrail_nats_pending_messages",
          "JetStream messages stored but not yet delivered to this consumer (its lag).",
          static_cast<double>(c.nats_pending.load()));
  m.gauge("snailtrail_nats_ack_pending_messages",
          "JetStream messages read whose windows are not all written yet (unacknowledged).",
          static_cast<double>(c.nats_ack_pending.load()));
  m.gauge("snailtrail_nats_acked_sequence", "Stream sequence acknowledged so far (AckAll).",
          static_cast<double>(c.nats_acked_seq.load()));
  m.counter("snailtrail_nats_redelivered_total",
            "JetStream messages delivered again after the ack wait, skipped.",
            c.nats_redelivered.load());
  m.counter("snailtrail_nats_gap_fetched_total",
            "JetStream messages fetched by stream sequence to close a gap in the consumer's "
            "delivery (lost in flight when the server restarted).",
            c.nats_gap_fetched.load());
}

// HTTP clients, the analysis queue and the retained PAG.
void server_metrics(MetricText& m, const SharedState& s, const BatchQueue& q,
                    const HttpFront::Counters& h) {
  m.gauge("snailtrail_http_connections_open", "HTTP clients connected now.",
          static_cast<double>(h.connections_open.load()));
  m.counter("snailtrail_http_connections_refused_total",
            "HTTP clients closed at once: the HTTP connection limit was reached, every "
            "client in the middle of a request.",
            h.refused.load());
  m.counter("snailtrail_http_idle_closed_total",
            "Idle HTTP clients closed to let a new client in under the connection limit.",
            h.idle_closed.load());
  m.counter("snailtrail_http_timeouts_total",
            "HTTP clients closed for sending a request or taking a response too slowly, or idle.",
            h.timed_out.load());
  m.counter("snailtrail_http_tls_failures_total",
            "HTTPS clients closed because their TLS handshake failed (e.g. plain HTTP).",
            h.tls_failed.load());
  m.gauge("snailtrail_queued_events", "Events decoded, waiting for analysis.",
          static_cast<double>(q.queued_events()));
  m.gauge("snailtrail_retained_nodes", "PAG nodes kept for windows not yet closed.",
          static_cast<double>(s.retained_nodes));
}

// Critical participation in the latest window: per activity type, worker and operator.
void cp_metrics(MetricText& m, std::string& out, const SharedState& s) {
  out +=
      "# HELP snailtrail_latest_window_cp Critical participation per activity type in the "
      "latest window.\n# TYPE snailtrail_latest_window_cp gauge\n";
  if (s.has_latest)
    for (int a = 0; a < kActivityTypeCount; ++a)
      fmt::format_to(std::back_inserter(out), "snailtrail_latest_window_cp{{activity=\"{}\"}} {}\n",
                     name_of(static_cast<ActivityType>(a)), s.latest_cp[a]);
  m.groups("snailtrail_latest_window_worker_cp", "worker",
           "Critical participation of each worker's timeline in the latest window (the 16 most "
           "critical; the rest summed as \"(other)\").",
           s.latest_worker_cp);
  m.groups("snailtrail_latest_window_operator_cp", "operator",
           "Critical participation of each operator's activities in the latest window (the 16 "
           "most critical; the rest summed as \"(other)\").",
           s.latest_op_cp);
}

}  // namespace

std::vector<std::pair<std::string, double>> bounded_groups(
    std::vector<std::pair<std::string, double>> all, size_t keep) {
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (all.size() > keep) {
    double rest = 0;
    for (size_t i = keep; i < all.size(); ++i) rest += all[i].second;
    all.resize(keep);
    all.emplace_back("(other)", rest);
  }
  return all;
}

std::string metrics_text(SharedState& s, const IngestCounters& c, const BatchQueue& q,
                         const HttpFront::Counters& h, size_t budget) {
  std::string out;
  MetricText m(out);
  std::lock_guard lock(s.mu);
  stream_metrics(m, s, c);
  input_metrics(m, c, budget);
  server_metrics(m, s, q, h);
  cp_metrics(m, out, s);
  return out;
}

}  // namespace snailtrail::serve
