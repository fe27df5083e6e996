#include "report/timeline_wire.hpp"

#include <stdexcept>
#include <type_traits>

#include "trace/byte_wire.hpp"

namespace snailtrail::report {

namespace {

static_assert(std::is_trivially_copyable_v<TimelineEdge>);

}  // namespace

void append_timeline(std::string& out, const Timeline& t) {
  ByteWriter w(out);
  w.vec(t.edges);
  w.pod(t.dropped_edges);
  w.pod(t.score);
}

void read_timeline(std::string_view in, Timeline& t) {
  size_t pos = 0;
  ByteReader r(in, pos, "timeline");
  r.vec(t.edges);
  r.pod(t.dropped_edges);
  r.pod(t.score);
  if (pos != in.size())
    throw std::runtime_error("timeline: " + std::to_string(in.size() - pos) +
                             " bytes after its end");
}

}  // namespace snailtrail::report
