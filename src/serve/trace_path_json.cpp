#include "serve/trace_path_json.hpp"

#include "output/names.hpp"

namespace snailtrail::serve {

void append_trace_path_json(fmt::memory_buffer& out, const requests::PathCollection& all,
                            const requests::PathCollection::TracePaths& p) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"trace_id\": ");
  append_json_string(out, p.trace_id(), kJsonNames);
  fmt::format_to(it,
                 ", \"duration_ns\": {}, \"spans\": {}, \"clipped_children\": {}, "
                 "\"dropped_children\": {}, \"roots\": {}, \"nonblocking_children\": {}, "
                 "\"path\": [",
                 p.duration_ns, p.spans, p.clipped, p.dropped, p.roots, p.nonblocking);
  for (size_t k = 0; k < p.path.size(); ++k) {
    const requests::PathCollection::Step& s = p.path[k];
    fmt::format_to(it, "{}{{\"span_id\": ", k ? ", " : "");
    append_json_string(out, p.span_id(s), kJsonNames);
    fmt::format_to(it, ", \"operation\": ");
    append_json_string(out, all.name(s.operation), kJsonNames);
    fmt::format_to(it, ", \"service\": ");
    append_json_string(out, all.name(s.service), kJsonNames);
    fmt::format_to(it, ", \"start_ns\": {}, \"end_ns\": {}, \"self_ns\": {}}}", s.start_ns,
                   s.end_ns, s.self_ns);
  }
  fmt::format_to(it, "]}}");
}

void append_services_json(fmt::memory_buffer& out, const requests::PathCollection& all,
                          const std::vector<requests::ServiceTime>& services) {
  auto it = std::back_inserter(out);
  int64_t total = 0;
  for (const requests::ServiceTime& s : services) total += s.critical_ns;
  out.push_back('[');
  for (size_t k = 0; k < services.size(); ++k) {
    fmt::format_to(it, "{}{{\"service\": ", k ? ", " : "");
    append_json_string(out, all.name(services[k].service), kJsonNames);
    fmt::format_to(it, ", \"critical_ns\": {}, \"share\": {}, \"spans_on_path\": {}}}",
                   services[k].critical_ns,
                   total > 0 ? static_cast<double>(services[k].critical_ns) / total : 0.0,
                   services[k].spans_on_path);
  }
  out.push_back(']');
}

}  // namespace snailtrail::serve
