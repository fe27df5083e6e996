#include "report/timeline_wire.hpp"

#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace snailtrail::report {

namespace {

static_assert(std::is_trivially_copyable_v<TimelineEdge>);

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

void append_timeline(std::string& out, const Timeline& t) {
  put(out, static_cast<uint64_t>(t.edges.size()));
  put(out, t.dropped_edges);
  put(out, t.score);
  out.append(reinterpret_cast<const char*>(t.edges.data()), t.edges.size() * sizeof(TimelineEdge));
}

void read_timeline(std::string_view in, Timeline& t) {
  constexpr size_t kHead = 2 * sizeof(uint64_t) + sizeof(double);
  uint64_t n = 0;
  if (in.size() < kHead) throw std::runtime_error("timeline: cut before its head");
  std::memcpy(&n, in.data(), sizeof n);
  std::memcpy(&t.dropped_edges, in.data() + 8, sizeof t.dropped_edges);
  std::memcpy(&t.score, in.data() + 16, sizeof t.score);
  in.remove_prefix(kHead);
  if (n > in.size() / sizeof(TimelineEdge) || in.size() != n * sizeof(TimelineEdge))
    throw std::runtime_error("timeline: " + std::to_string(in.size()) + " bytes for " +
                             std::to_string(n) + " edges");
  t.edges.resize(n);
  std::memcpy(t.edges.data(), in.data(), in.size());
}

}  // namespace snailtrail::report
