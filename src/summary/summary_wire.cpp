#include "summary/summary_wire.hpp"

#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace snailtrail {
namespace {

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod(static_cast<uint64_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    out_.append(s);
  }
  void pairs(const std::vector<std::pair<uint32_t, double>>& v) {
    pod(static_cast<uint64_t>(v.size()));
    for (const auto& [id, value] : v) pod(id), pod(value);
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  Reader(std::string_view in, size_t& pos) : in_(in), pos_(pos) {}
  template <typename T>
  void pod(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof v);
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
  }
  template <typename T>
  void vec(std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const uint64_t n = count(sizeof(T));
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
  }
  void str(std::string& s) {
    const uint64_t n = count(1);
    s.assign(in_.data() + pos_, n);
    pos_ += n;
  }
  void pairs(std::vector<std::pair<uint32_t, double>>& v) {
    v.resize(count(sizeof(uint32_t) + sizeof(double)));
    for (auto& [id, value] : v) pod(id), pod(value);
  }

 private:
  // A length, checked against what is left (a corrupt length must not allocate).
  uint64_t count(size_t element) {
    uint64_t n = 0;
    pod(n);
    if (n > (in_.size() - pos_) / element) throw std::runtime_error("MPI: truncated summary");
    return n;
  }
  void need(size_t n) const {
    if (in_.size() - pos_ < n) throw std::runtime_error("MPI: truncated summary");
  }
  std::string_view in_;
  size_t& pos_;
};

template <typename IO, typename G>
void groups(IO& io, G& g) {
  io.pod(g.activity);
  io.vec(g.worker);
  io.pairs(g.op);
  io.pairs(g.op_per_worker);
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
  Writer w(out);
  fields(w, s);
  w.pod(static_cast<uint64_t>(s.diagnostics.input.size()));
  for (const auto& [kind, n] : s.diagnostics.input) {
    w.str(kind);
    w.pod(n);
  }
}

void read_summary(std::string_view in, size_t& pos, WindowSummary& s) {
  Reader r(in, pos);
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
