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

}  // namespace snailtrail::serve
