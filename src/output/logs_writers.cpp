// The outputs of `snailtrail logs` (logs_writers.hpp).
#include "output/logs_writers.hpp"

#include <algorithm>
#include <cmath>

#include "logs/json_text.hpp"
#include "output/names.hpp"
#include "output/writers.hpp"

namespace snailtrail::output {
namespace {

using logs::append_json_text;

void write_diagnostics_table(fmt::memory_buffer& out, const logs::LogSet& set) {
  if (set.diagnostics.empty()) return;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "\ndiagnostics\n");
  for (const auto& [k, v] : set.diagnostics) fmt::format_to(it, "  {:<34} {}\n", printable(k), v);
}

std::string files_summary(const logs::LogSet& set) {
  std::string s;
  for (const logs::LogFile& f : set.files)
    s += fmt::format("{}{} (format {})", s.empty() ? "" : ", ", f.path, f.format);
  return s;
}

}  // namespace

std::string log_duration(int64_t ns, bool has_time) {
  if (!has_time) return fmt::format("{} lines", ns);
  static constexpr struct {
    double ns;
    const char* unit;
  } kUnits[] = {{3.6e12, "h"}, {6e10, "min"}, {1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}};
  const double v = static_cast<double>(ns), a = std::fabs(v);
  for (const auto& u : kUnits)
    if (a >= u.ns) return fmt::format("{:.3g} {}", v / u.ns, u.unit);
  return fmt::format("{} ns", ns);
}

void write_templates_line(fmt::memory_buffer& out, const logs::LogSet& set, uint32_t f, size_t l,
                          const std::vector<std::string>& templates) {
  auto it = std::back_inserter(out);
  const logs::LogFile& file = set.files[f];
  const logs::LineInfo& li = file.lines[l];
  fmt::format_to(it, "{{");
  if (set.files.size() > 1) {
    fmt::format_to(it, "\"file\": ");
    append_json_text(out, file.path);
    fmt::format_to(it, ", ");
  }
  fmt::format_to(it, "\"line\": {}", l + 1);
  if (li.kind == logs::LineKind::record || li.kind == logs::LineKind::no_header) {
    thread_local std::vector<logs::Token> tokens;
    thread_local std::vector<std::string_view> params;
    const logs::LogRecord& r = set.records[li.record];
    set.drain.params(r.cluster, set.tokens(li.record, tokens), params);
    fmt::format_to(it, ", \"template_id\": {}, \"template\": ", r.cluster);
    append_json_text(out, templates[r.cluster]);
    fmt::format_to(it, ", \"params\": [");
    for (size_t k = 0; k < params.size(); ++k) {
      fmt::format_to(it, "{}", k ? ", " : "");
      append_json_text(out, params[k]);
    }
    fmt::format_to(it, "]");
    if (file.has_time) fmt::format_to(it, ", \"ts_ns\": {}", r.ts);
    if (li.kind == logs::LineKind::no_header) fmt::format_to(it, ", \"no_header\": true");
  } else if (li.kind == logs::LineKind::joined) {
    fmt::format_to(it, ", \"joined_to\": {}", set.records[li.record].line);
  } else {
    fmt::format_to(it, ", \"skipped\": \"{}\"",
                   li.kind == logs::LineKind::binary ? "binary" : "empty");
  }
  fmt::format_to(it, "}}\n");
}

void write_templates_table(fmt::memory_buffer& out, const logs::LogSet& set) {
  auto it = std::back_inserter(out);
  std::vector<uint32_t> order(set.drain.cluster_count());
  for (uint32_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return set.drain.size(x) > set.drain.size(y); });
  fmt::format_to(it, "snailtrail logs templates: {} records, {} templates\n  {}\n",
                 set.record_count, order.size(), files_summary(set));
  fmt::format_to(it, "\n  {:>5} {:>9} {:>6}  {}\n", "id", "count", "share", "template");
  for (uint32_t c : order)
    fmt::format_to(it, "  {:>5} {:>9} {:>5.1f}%  {}\n", c, set.drain.size(c),
                   100.0 * static_cast<double>(set.drain.size(c)) /
                       static_cast<double>(std::max<uint64_t>(set.record_count, 1)),
                   printable(set.drain.template_text(c)));
  write_diagnostics_table(out, set);
}

void write_flow_json(fmt::memory_buffer& out, const logs::LogSet& set, const logs::Flow& f,
                     bool steps) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"id\": ");
  append_json_text(out, f.id);
  fmt::format_to(it, ", \"start_ns\": {}, \"latency_ns\": {}, \"records\": {}, \"nodes\": [",
                 f.start, f.latency(), f.records.size());
  std::vector<uint32_t> nodes;
  for (size_t k = 0; k < f.records.size(); ++k)
    if (std::find(nodes.begin(), nodes.end(), f.record(set, k).node) == nodes.end())
      nodes.push_back(f.record(set, k).node);
  for (size_t k = 0; k < nodes.size(); ++k) {
    fmt::format_to(it, "{}", k ? ", " : "");
    append_json_text(out, set.nodes[nodes[k]]);
  }
  fmt::format_to(it, "], \"flow\": {}", f.signature);
  if (steps) {
    fmt::format_to(it, ", \"steps\": [");
    for (size_t k = 0; k < f.records.size(); ++k) {
      const logs::LogRecord& r = f.record(set, k);
      fmt::format_to(it, "{}{{\"file\": ", k ? ", " : "");
      append_json_text(out, set.files[r.file].path);
      fmt::format_to(it, ", \"line\": {}, \"node\": ", r.line);
      append_json_text(out, set.nodes[r.node]);
      fmt::format_to(it, ", \"ts_ns\": {}, \"template_id\": {}}}", r.ts, r.cluster);
    }
    fmt::format_to(it, "]");
  }
  fmt::format_to(it, "}}");
}

FlowsView::FlowsView(const logs::LogSet& s, const logs::FlowSet& f)
    : set(s), fs(f), total_latency(f.total_latency) {
  has_time = !set.files.empty();
  for (const logs::LogFile& file : set.files) has_time &= file.has_time;
  for (const logs::Flow& flow : fs.flows) slowest.push_back(&flow);
  if (fs.only_slowest) return;  // already slowest first
  std::stable_sort(slowest.begin(), slowest.end(), [](const logs::Flow* x, const logs::Flow* y) {
    return x->latency() > y->latency();
  });
}

std::string FlowsView::identifiers_line(const std::string& id_regex) const {
  std::string src =
      fs.id_source == "auto"     ? fmt::format("inferred ({} parameter slots)", fs.id_slots.size())
      : fs.id_source == "shape"  ? fmt::format("{}... values ({} parameter slots)",
                                               printable(fs.id_shape), fs.id_slots.size())
      : fs.id_source == "regex"  ? "--id " + printable(id_regex)
      : fs.id_source == "thread" ? std::string("none found, grouped by (node, thread)")
                                 : std::string("none found");
  std::string s = fmt::format(
      "{}; {} records in requests, {} without identifier, {} with conflicting identifiers", src,
      fs.records_in_flows, fs.records_without_id, fs.multi_id_records);
  if (fs.sampled)
    s += fmt::format(
        "\n  almost no identifier repeats ({} of {} id-like values are on more than one line): "
        "the log looks sampled, so requests are mostly single lines and latencies say little",
        fs.id_values_repeating, fs.id_values);
  return s;
}

void FlowsView::write_json(fmt::memory_buffer& buf, size_t top,
                           const std::function<void()>& flush) const {
  auto it = std::back_inserter(buf);
  auto piece = [&flush] {
    if (flush) flush();
  };
  fmt::format_to(it,
                 "{{\"id_source\": \"{}\", \"records\": {}, \"records_in_flows\": {}, "
                 "\"records_without_id\": {}, \"multi_id_records\": {}, \"has_time\": {}, "
                 "\"requests\": {}, \"sampled\": {}, \"id_values\": {}, "
                 "\"id_values_repeating\": {}, \"id_slots\": [",
                 fs.id_source, set.record_count, fs.records_in_flows, fs.records_without_id,
                 fs.multi_id_records, has_time, fs.flow_count, fs.sampled, fs.id_values,
                 fs.id_values_repeating);
  for (size_t k = 0; k < fs.id_slots.size(); ++k) {
    const logs::IdSlot& s = fs.id_slots[k];
    fmt::format_to(it,
                   "{}{{\"template_id\": {}, \"param\": {}, \"records\": {}, \"distinct\": {}, "
                   "\"recurring\": {}}}",
                   k ? ", " : "", s.cluster, s.position, s.records, s.distinct, s.recurring);
  }
  fmt::format_to(it, "], \"templates\": [");
  for (uint32_t c = 0; c < set.drain.cluster_count(); ++c) {
    fmt::format_to(it, "{}{{\"id\": {}, \"count\": {}, \"template\": ", c ? ", " : "", c,
                   set.drain.size(c));
    append_json_text(buf, set.drain.template_text(c));
    fmt::format_to(it, "}}");
    piece();
  }
  fmt::format_to(it, "], \"flows\": [");
  for (size_t k = 0; k < fs.signatures.size(); ++k) {
    const logs::FlowSignature& s = fs.signatures[k];
    fmt::format_to(it, "{}{{\"flow\": {}, \"count\": {}, \"mean_latency_ns\": {}, \"example\": ",
                   k ? ", " : "", k, s.count, s.total_ns / static_cast<int64_t>(s.count));
    append_json_text(buf, s.example_id);
    fmt::format_to(it, ", \"templates\": [");
    for (size_t j = 0; j < s.templates.size(); ++j)
      fmt::format_to(it, "{}{}", j ? ", " : "", s.templates[j]);
    fmt::format_to(it, "]}}");
    piece();
  }
  fmt::format_to(it, "], \"graph\": [");
  for (size_t k = 0; k < fs.edges.size(); ++k) {
    const logs::FlowEdge& e = fs.edges[k];
    fmt::format_to(it,
                   "{}{{\"from\": {}, \"to\": {}, \"count\": {}, \"cross_node\": {}, "
                   "\"total_ns\": {}, \"mean_ns\": {}, \"max_ns\": {}, \"latency_share\": {}}}",
                   k ? ", " : "", e.from, e.to, e.count, e.cross_node, e.total_ns,
                   e.total_ns / static_cast<int64_t>(e.count), e.max_ns, share(e.total_ns));
    piece();
  }
  fmt::format_to(it, "], \"slowest\": [");
  for (size_t k = 0; k < std::min(top, slowest.size()); ++k) {
    fmt::format_to(it, "{}", k ? ", " : "");
    write_flow_json(buf, set, *slowest[k], true);
    piece();
  }
  fmt::format_to(it, "], \"diagnostics\": ");
  put_counts(buf, set.diagnostics);
  fmt::format_to(it, "}}\n");
}

void FlowsView::write_table(fmt::memory_buffer& buf, size_t top, const std::string& id_regex,
                            const std::function<void()>& flush) const {
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "snailtrail logs flows: {} records, {} templates, {} requests\n  {}\n",
                 set.record_count, set.drain.cluster_count(), fs.flow_count, files_summary(set));
  fmt::format_to(it, "  identifiers: {}\n", identifiers_line(id_regex));
  auto tmpl = [&](uint32_t c) {
    std::string t = set.drain.template_text(c);
    if (t.size() <= 60) return printable(t);
    size_t cut = 57;  // not inside a UTF-8 sequence
    while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
    return printable(std::string_view(t).substr(0, cut)) + "...";
  };
  fmt::format_to(it, "\nmost common flows (template sequences)\n  {:>4} {:>7} {:>14}  {}\n", "flow",
                 "count", "mean latency", "templates");
  for (size_t k = 0; k < std::min(top, fs.signatures.size()); ++k) {
    const logs::FlowSignature& s = fs.signatures[k];
    std::string seq;
    for (size_t j = 0; j < s.templates.size() && j < 24; ++j)
      seq += fmt::format("{}T{}", j ? " " : "", s.templates[j]);
    if (s.templates.size() > 24) seq += fmt::format(" ... ({} steps)", s.templates.size());
    fmt::format_to(it, "  {:>4} {:>7} {:>14}  {}\n", k, s.count,
                   log_duration(s.total_ns / static_cast<int64_t>(s.count), has_time), seq);
  }
  size_t id_w = 2;
  for (size_t k = 0; k < std::min(top, slowest.size()); ++k)
    id_w = std::max(id_w, std::min<size_t>(display_width(printable(slowest[k]->id)), 48));
  fmt::format_to(it, "\nslowest requests\n  {:<{}} {:>14} {:>7} {:>5} {:>4}\n", "id", id_w,
                 "latency", "records", "nodes", "flow");
  for (size_t k = 0; k < std::min(top, slowest.size()); ++k) {
    const logs::Flow& f = *slowest[k];
    fmt::format_to(it, "  {:<{}} {:>14} {:>7} {:>5} {:>4}\n", printable(f.id), id_w,
                   log_duration(f.latency(), has_time), f.records.size(), f.node_count,
                   f.signature);
  }
  fmt::format_to(it,
                 "\nsteps (flow graph edges) by share of request latency\n  {:>5} {:>5} {:>7} "
                 "{:>6} {:>14} {:>6}  {}\n",
                 "from", "to", "count", "x-node", "mean", "share", "to template");
  std::vector<size_t> by_time(fs.edges.size());
  for (size_t k = 0; k < by_time.size(); ++k) by_time[k] = k;
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](size_t x, size_t y) { return fs.edges[x].total_ns > fs.edges[y].total_ns; });
  for (size_t k = 0; k < std::min(top * 2, by_time.size()); ++k) {
    const logs::FlowEdge& e = fs.edges[by_time[k]];
    fmt::format_to(it, "  {:>5} {:>5} {:>7} {:>6} {:>14} {:>5.1f}%  {}\n",
                   fmt::format("T{}", e.from), fmt::format("T{}", e.to), e.count, e.cross_node,
                   log_duration(e.total_ns / static_cast<int64_t>(e.count), has_time),
                   100.0 * share(e.total_ns), tmpl(e.to));
  }
  fmt::format_to(it, "\ntemplates\n");
  for (uint32_t c = 0; c < set.drain.cluster_count(); ++c) {
    fmt::format_to(it, "  T{:<4} {:>8}  {}\n", c, set.drain.size(c),
                   printable(set.drain.template_text(c)));
    if (flush) flush();
  }
  write_diagnostics_table(buf, set);
}

}  // namespace snailtrail::output
