// The CSV output of `snailtrail analyze`: one row per window, summary and key, quoted as
// RFC 4180 says (docs/OUTPUT.md).
#include <iterator>
#include <string_view>

#include "output/format.hpp"
#include "output/writers.hpp"

namespace snailtrail {

using Buf = fmt::memory_buffer;
using output_detail::active_type;
using output_detail::put;

void write_csv_header(Buf& out) {
  put(out, "window,start_ns,end_ns,summary,key,cp,conventional,single_path\n");
}

namespace {
void csv_field(Buf& out, std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    put(out, s);
    return;
  }
  out.push_back('"');
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}
void csv_row(Buf& out, const WindowSummary& w, const char* summary, std::string_view key, double cp,
             double conv, double single) {
  fmt::format_to(std::back_inserter(out), "{},{},{},{},", w.index, w.window.start, w.window.end,
                 summary);
  csv_field(out, key);
  out.push_back(',');
  if (w.has_paths) append_json_number(out, cp);
  out.push_back(',');
  append_json_number(out, conv);
  out.push_back(',');
  if (w.has_paths) append_json_number(out, single);
  out.push_back('\n');
}
}  // namespace

void write_window_csv(Buf& out, const WindowSummary& w, const Names& names,
                      const SummarySelection& sel) {
  if (sel.activity)
    for (int a = 0; a < kActivityTypeCount; ++a)
      if (active_type(w, a))
        csv_row(out, w, "activity", name_of(static_cast<ActivityType>(a)), w.cp.activity[a],
                w.conventional.activity[a], w.single_path.activity[a]);
  if (sel.worker)
    for (size_t k = 0; k < w.cp.worker.size(); ++k)
      if (w.cp.worker[k] != 0 || w.conventional.worker[k] != 0)
        csv_row(out, w, "worker", names.worker[k], w.cp.worker[k], w.conventional.worker[k],
                w.single_path.worker[k]);
  if (sel.op) {
    for (size_t k = 0; k < w.cp.op.size(); ++k)
      csv_row(out, w, "operator", names.op(w.cp.op[k].first), w.cp.op[k].second,
              w.conventional.op[k].second, w.single_path.op[k].second);
    for (size_t k = 0; k < w.cp.op_per_worker.size(); ++k)
      csv_row(out, w, "operator_per_worker", names.op(w.cp.op_per_worker[k].first),
              w.cp.op_per_worker[k].second, w.conventional.op_per_worker[k].second,
              w.single_path.op_per_worker[k].second);
  }
  if (sel.communication)
    for (size_t k = 0; k < w.cp.communication.size(); ++k) {
      const CommCell& c = w.cp.communication[k];
      csv_row(out, w, "communication", names.worker[c.src] + "->" + names.worker[c.dst], c.value,
              w.conventional.communication[k].value, w.single_path.communication[k].value);
    }
}

}  // namespace snailtrail
