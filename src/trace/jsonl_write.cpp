// JSONL writing (docs/FORMATS.md): metadata lines, then one line per event.
#include <algorithm>
#include <charconv>
#include <string>
#include <utility>
#include <vector>

#include "trace/json_text.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

template <typename T>
void append_int(std::string& out, T value) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, res.ptr);
}

template <typename Map>
void append_meta(std::string& out, const Map& names, std::string_view kind) {
  std::vector<std::pair<uint32_t, const std::string*>> sorted;
  sorted.reserve(names.size());
  for (const auto& [id, name] : names) sorted.emplace_back(id, &name);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, name] : sorted) {
    out.append("{\"meta\":\"");
    out.append(kind);
    out.append("\",\"id\":");
    append_int(out, id);
    out.append(",\"name\":");
    append_json_string(out, *name, kJsonTrace);
    out.append("}\n");
  }
}

}  // namespace

void detail::append_jsonl_metadata(std::string& out, const Trace& meta) {
  append_meta(out, meta.worker_names, "worker");
  append_meta(out, meta.operator_names, "operator");
}

void detail::append_jsonl_events(std::string& out, const Event* events, size_t n,
                                 uint64_t first_record, const std::string& source) {
  for (size_t i = 0; i < n; ++i) {
    const Event& e = events[i];
    if (const char* problem = detail::check_event(e, false))
      throw TraceError(source, "record " + std::to_string(first_record + i), problem);
    out.append("{\"ts\":");
    append_int(out, e.ts);
    out.append(",\"worker\":");
    append_int(out, e.worker);
    out.append(",\"activity\":\"");
    out.append(name_of(e.activity));
    out.append("\",\"event\":\"");
    out.append(name_of(e.kind));
    out.push_back('"');
    if (e.has(kHasOperator)) {
      out.append(",\"operator\":");
      append_int(out, e.op);
    }
    if (e.has(kHasCorrelator)) {
      out.append(",\"correlator\":");
      append_int(out, e.correlator);
    }
    if (e.has(kHasRemote)) {
      out.append(",\"remote\":");
      append_int(out, e.remote);
    }
    if (e.has(kHasRecords)) {
      out.append(",\"records\":");
      append_int(out, e.records);
    }
    out.append("}\n");
  }
}

std::string to_jsonl(const Trace& trace) {
  std::string out;
  out.reserve(trace.events.size() * 112 +
              (trace.worker_names.size() + trace.operator_names.size()) * 48);
  detail::append_jsonl_metadata(out, trace);
  detail::append_jsonl_events(out, trace.events.data(), trace.events.size(), 0, trace.source);
  return out;
}

}  // namespace snailtrail
