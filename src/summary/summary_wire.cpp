#include "summary/summary_wire.hpp"

#include <utility>
#include <vector>

#include "trace/byte_wire.hpp"

namespace snailtrail {
namespace {

// The (operator, value) lists of a group summary.
void pairs(ByteWriter& w, const std::vector<std::pair<uint32_t, double>>& v) {
  w.pod(static_cast<uint64_t>(v.size()));
  for (const auto& [id, value] : v) w.pod(id), w.pod(value);
}
void pairs(ByteReader& r, std::vector<std::pair<uint32_t, double>>& v) {
  v.resize(r.length(sizeof(uint32_t) + sizeof(double)));
  for (auto& [id, value] : v) r.pod(id), r.pod(value);
}

template <typename IO, typename G>
void groups(IO& io, G& g) {
  io.pod(g.activity);
  io.vec(g.worker);
  pairs(io, g.op);
  pairs(io, g.op_per_worker);
  io.vec(g.communication);
}

// The fields in one order for both directions; `S` is const for writing.
template <typename IO, typename S>
void fields(IO& io, S& s) {
  io.pod(s.index);
  io.pod(s.window);
  io.pod(s.span_start);
  io.pod(s.span_end);
  io.pod(s.cp_ns);
  io.pod(s.events);
  io.pod(s.nodes);
  io.pod(s.edges);
  io.pod(s.has_paths);
  io.pod(s.paths_log10);
  groups(io, s.cp);
  groups(io, s.conventional);
  groups(io, s.single_path);
  io.vec(s.top);
  auto& d = s.diagnostics;
  io.pod(d.no_paths);
  io.pod(d.property1_violations);
  io.pod(d.property2_violations);
  io.pod(d.property2_ns);
  io.pod(d.input_idle_ns);
  io.pod(d.segments);
  io.pod(d.no_path_segments);
  io.pod(d.zero_duration_cycles);
  io.pod(d.issues);
  io.pod(d.unknown_share);
  io.pod(d.waiting_share);
  io.vec(s.what_if);
}

}  // namespace

void append_summary(std::string& out, const WindowSummary& s) {
  ByteWriter w(out);
  fields(w, s);
  w.pod(static_cast<uint64_t>(s.diagnostics.input.size()));
  for (const auto& [kind, n] : s.diagnostics.input) {
    w.str(kind);
    w.pod(n);
  }
}

void read_summary(std::string_view in, size_t& pos, WindowSummary& s) {
  ByteReader r(in, pos, "window summary");
  fields(r, s);
  uint64_t inputs = 0;
  r.pod(inputs);
  s.diagnostics.input.clear();
  for (uint64_t i = 0; i < inputs; ++i) {
    std::pair<std::string, uint64_t> kv;
    r.str(kv.first);
    r.pod(kv.second);
    s.diagnostics.input.push_back(std::move(kv));
  }
}

}  // namespace snailtrail
