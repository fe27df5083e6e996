// Span model -> events (spans.hpp).
#include "importers/otel/spans.hpp"

#include <algorithm>
#include <unordered_map>

#include "importers/common/slices.hpp"

namespace snailtrail::importers {

std::string_view name_of(SpanKind k) {
  const size_t i = static_cast<size_t>(k);
  return i < kSpanKindNames.size() ? kSpanKindNames[i].tag : "";
}

SpanKind span_kind_named(std::string_view name, std::string_view SpanKindName::*spelling) {
  for (size_t i = 1; i < kSpanKindNames.size(); ++i)
    if (kSpanKindNames[i].*spelling == name) return static_cast<SpanKind>(i);
  return SpanKind::unspecified;
}

namespace {

// Fibonacci-style mixing of a 64-bit key (the slots are a power of two).
inline uint64_t mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return x;
}

// Hex digit values; 0xFF for anything but 0-9 and a-f (upper case is other text: its
// text would not come back the same).
struct HexTable {
  uint8_t v[256];
  constexpr HexTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = 0xFF;
    for (int i = 0; i < 10; ++i) v['0' + i] = static_cast<uint8_t>(i);
    for (int i = 0; i < 6; ++i) v['a' + i] = static_cast<uint8_t>(10 + i);
  }
};
constexpr HexTable kHex;

// (trace << 32 | span id) -> span index, open addressing sized once (no node per span).
class SpanIndex {
 public:
  explicit SpanIndex(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    keys_.assign(cap, 0);
    values_.assign(cap, kNoSpan);
  }
  // The index stored for `key`, storing `value` if there was none.
  uint32_t emplace(uint64_t key, uint32_t value) {
    const size_t mask = keys_.size() - 1;
    for (size_t at = mix(key) & mask;; at = (at + 1) & mask) {
      if (values_[at] == kNoSpan) {
        keys_[at] = key;
        values_[at] = value;
        return value;
      }
      if (keys_[at] == key) return values_[at];
    }
  }
  uint32_t find(uint64_t key) const {
    const size_t mask = keys_.size() - 1;
    for (size_t at = mix(key) & mask; values_[at] != kNoSpan; at = (at + 1) & mask)
      if (keys_[at] == key) return values_[at];
    return kNoSpan;
  }

 private:
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
};

}  // namespace

bool SpanIds::hex_key(std::string_view text, Key& key) {
  const size_t n = text.size();
  if (n == 0 || n > 32) return false;
  uint64_t hi = 0, lo = 0;
  const size_t split = n > 16 ? n - 16 : 0;  // digits [0, split) go to hi
  uint8_t bad = 0;
  for (size_t i = 0; i < split; ++i) {
    const uint8_t d = kHex.v[static_cast<uint8_t>(text[i])];
    bad |= d;
    hi = hi << 4 | (d & 0xF);
  }
  for (size_t i = split; i < n; ++i) {
    const uint8_t d = kHex.v[static_cast<uint8_t>(text[i])];
    bad |= d;
    lo = lo << 4 | (d & 0xF);
  }
  if (bad & 0xF0) return false;
  key.hi = hi;
  key.lo = lo;
  key.len = static_cast<uint32_t>(n);
  return true;
}

// The slot's half of a hash (low bits) and a fingerprint kept in the slot (high bits),
// so that probing passes other ids without reading their keys.
uint64_t SpanIds::hash(const Key& k) const {
  // Ids that differ in their last hex digit only (ids counted up by a tracer) land in
  // neighbouring slots: lookups of nearby ids touch the same cache lines.
  if (!(k.len & kText)) {
    const uint64_t m = mix(k.lo >> 4 ^ mix(k.hi ^ k.len));
    return ((m + (k.lo & 0xF)) & 0xFFFFFFFFull) | (mix(k.lo ^ k.hi) & ~0xFFFFFFFFull);
  }
  const size_t n = k.len & ~kText;
  return mix(std::hash<std::string_view>{}(std::string_view(arena_).substr(k.hi, n)) ^ kText);
}

// `k` (stored) against a probe: `probe` if the text is hex, else `text`.
inline bool SpanIds::same(const Key& k, std::string_view text, const Key& probe) const {
  if (k.len != probe.len) return false;
  if (!(k.len & kText)) return k.lo == probe.lo && k.hi == probe.hi;
  return std::string_view(arena_).substr(k.hi, text.size()) == text;
}

void SpanIds::grow() {
  const size_t cap = slots_.empty() ? 64 : slots_.size() * 2;
  slots_.assign(cap, 0);
  const size_t mask = cap - 1;
  for (uint32_t i = 0; i < keys_.size(); ++i) {
    const uint64_t h = hash(keys_[i]);
    size_t at = h & mask;
    while (slots_[at]) at = (at + 1) & mask;
    slots_[at] = (h & ~0xFFFFFFFFull) | (i + 1);
  }
}

uint64_t SpanIds::probe_key(std::string_view text, Key& probe) const {
  if (hex_key(text, probe)) return hash(probe);
  probe.len = kText | static_cast<uint32_t>(text.size());
  return mix(std::hash<std::string_view>{}(text) ^ kText);
}

uint32_t SpanIds::find(std::string_view text) const {
  if (slots_.empty()) return kNoSpan;
  Key probe;
  const uint64_t h = probe_key(text, probe), tag = h & ~0xFFFFFFFFull;
  const size_t mask = slots_.size() - 1;
  for (size_t at = h & mask; slots_[at]; at = (at + 1) & mask) {
    const uint64_t slot = slots_[at];
    const uint32_t i = static_cast<uint32_t>(slot) - 1;
    if ((slot & ~0xFFFFFFFFull) == tag && same(keys_[i], text, probe)) return i;
  }
  return kNoSpan;
}

uint32_t SpanIds::id(std::string_view text) {
  Key probe;
  const uint64_t h = probe_key(text, probe);
  return intern(probe, text, h);
}

uint32_t SpanIds::id_of_bytes(std::string_view bytes) {
  if (bytes.empty() || bytes.size() > 16) {
    std::string text;
    append_hex(bytes, text);
    return id(text);
  }
  // The key hex_key gives the bytes' hex text: digits are nibbles, most significant first.
  Key probe;
  const size_t split = bytes.size() > 8 ? bytes.size() - 8 : 0;  // bytes [0, split) -> hi
  for (size_t i = 0; i < split; ++i) probe.hi = probe.hi << 8 | static_cast<uint8_t>(bytes[i]);
  for (size_t i = split; i < bytes.size(); ++i)
    probe.lo = probe.lo << 8 | static_cast<uint8_t>(bytes[i]);
  probe.len = static_cast<uint32_t>(2 * bytes.size());
  return intern(probe, {}, hash(probe));
}

uint32_t SpanIds::id_from(const SpanIds& from, uint32_t id) {
  const Key& k = from.keys_[id];
  if (k.len & kText) return this->id(std::string_view(from.arena_).substr(k.hi, k.len & ~kText));
  return intern(k, {}, hash(k));
}

// `probe` (with `text` if it is not hex) as an id, new or found.
uint32_t SpanIds::intern(const Key& key, std::string_view text, uint64_t h) {
  if (2 * (keys_.size() + 1) > slots_.size()) grow();
  Key probe = key;
  const uint64_t tag = h & ~0xFFFFFFFFull;
  const size_t mask = slots_.size() - 1;
  size_t at = h & mask;
  for (; slots_[at]; at = (at + 1) & mask) {
    const uint64_t slot = slots_[at];
    const uint32_t i = static_cast<uint32_t>(slot) - 1;
    if ((slot & ~0xFFFFFFFFull) == tag && same(keys_[i], text, probe)) return i;
  }
  if (probe.len & kText) {
    probe.hi = arena_.size();
    arena_.append(text);
  }
  const uint32_t n = static_cast<uint32_t>(keys_.size());
  keys_.push_back(probe);
  slots_[at] = tag | (n + 1);
  return n;
}

void append_hex(std::string_view bytes, std::string& out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const size_t at = out.size();
  out.resize(at + 2 * bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    out[at + 2 * i] = kDigits[b >> 4];
    out[at + 2 * i + 1] = kDigits[b & 15];
  }
}

void SpanIds::append(uint32_t id, std::string& out) const {
  const Key& k = keys_[id];
  if (k.len & kText) {
    out.append(arena_, k.hi, k.len & ~kText);
    return;
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[32];
  for (uint32_t i = 0; i < k.len; ++i) {
    const uint32_t from_end = k.len - 1 - i;  // digit i counts from the most significant
    const uint64_t word = from_end < 16 ? k.lo : k.hi;
    buf[i] = kDigits[(word >> (4 * (from_end % 16))) & 0xF];
  }
  out.append(buf, k.len);
}

void SpanSet::count(SpanDiagnostic d, uint64_t n) {
  if (n == 0) return;
  const std::string_view full = span_diagnostic(format, d).name;
  for (auto& [k, v] : diagnostics)
    if (k == full) {
      v += n;
      return;
    }
  diagnostics.emplace_back(full, n);
}

void copy_span(const SpanSet& from, const Span& s, SpanSet& to) {
  auto name = [&](uint32_t x) { return to.strings.id(from.str(x)); };
  auto id = [&](uint32_t x) { return to.ids.id_from(from.ids, x); };
  Span t = s;
  t.trace = id(s.trace);
  t.id = id(s.id);
  t.service = name(s.service);
  t.operation = name(s.operation);
  if (s.thread != kNoSpan) t.thread = name(s.thread);
  t.refs_begin = static_cast<uint32_t>(to.refs.size());
  for (uint32_t r = s.refs_begin; r < s.refs_end; ++r)
    to.refs.push_back({id(from.refs[r].trace), id(from.refs[r].span_id), from.refs[r].child_of});
  t.refs_end = static_cast<uint32_t>(to.refs.size());
  to.spans.push_back(t);
}

void resolve_spans(SpanSet& set) {
  std::vector<Span>& spans = set.spans;
  SpanIndex index(spans.size());
  uint64_t duplicates = 0, orphans = 0, cycles = 0;
  for (uint32_t i = 0; i < spans.size(); ++i)
    if (index.emplace(uint64_t(spans[i].trace) << 32 | spans[i].id, i) != i) ++duplicates;
  set.ref_target.assign(set.refs.size(), kNoSpan);
  for (uint32_t i = 0; i < spans.size(); ++i) {
    Span& s = spans[i];
    s.parent = kNoSpan;
    bool had_parent_ref = false;
    for (uint32_t r = s.refs_begin; r < s.refs_end; ++r) {
      const SpanRef& ref = set.refs[r];
      const uint32_t target = index.find(uint64_t(ref.trace) << 32 | ref.span_id);
      if (target != kNoSpan && target != i) set.ref_target[r] = target;
      if (ref.child_of && !had_parent_ref) {
        had_parent_ref = true;
        // A parent in another trace is a link, not a parent: critical paths are per trace.
        if (set.ref_target[r] != kNoSpan && spans[set.ref_target[r]].trace == s.trace)
          s.parent = set.ref_target[r];
        else if (set.ref_target[r] == kNoSpan)
          ++orphans;
      }
    }
  }
  // Depths by walking up parent chains; a chain that comes back to itself is a cycle,
  // broken at the span where it was found.
  constexpr uint32_t kUnknown = UINT32_MAX, kOnPath = UINT32_MAX - 1;
  std::vector<uint32_t> depth(spans.size(), kUnknown), path;
  for (uint32_t i = 0; i < spans.size(); ++i) {
    uint32_t x = i;
    path.clear();
    while (x != kNoSpan && depth[x] == kUnknown) {
      depth[x] = kOnPath;
      path.push_back(x);
      x = spans[x].parent;
      if (x != kNoSpan && depth[x] == kOnPath) {
        spans[path.back()].parent = kNoSpan;
        ++cycles;
        x = kNoSpan;
      }
    }
    uint32_t d = x == kNoSpan ? 0 : depth[x] + 1;
    for (size_t k = path.size(); k-- > 0;) {
      const uint32_t y = path[k];
      depth[y] = spans[y].parent == kNoSpan ? 0 : d;
      d = depth[y] + 1;
    }
  }
  for (uint32_t i = 0; i < spans.size(); ++i) spans[i].depth = depth[i];
  set.count(SpanDiagnostic::duplicate_span_ids, duplicates);
  set.count(SpanDiagnostic::orphan_spans, orphans);
  set.count(SpanDiagnostic::parent_cycles, cycles);
}

namespace {

// The workers of a span trace: one group per (service, thread).
struct SpanGroups {
  std::unordered_map<uint64_t, uint32_t> index;
  std::vector<std::pair<uint32_t, uint32_t>> of;  // (service, thread)
};

// A slice per span: its interval, group, activity type (the map's, cached per service,
// operation and kind) and operator ("service: operation").
std::vector<Slice> span_slices(const SpanSet& set, const ActivityMap& map, SpanGroups& groups,
                               json::Interner& operators) {
  const std::vector<Span>& spans = set.spans;
  std::unordered_map<uint64_t, ActivityType> activity_cache;
  std::vector<Slice> slices(spans.size());
  for (uint32_t i = 0; i < spans.size(); ++i) {
    const Span& sp = spans[i];
    const uint64_t key = uint64_t(sp.service) << 32 | sp.thread;
    auto [it, fresh] = groups.index.emplace(key, static_cast<uint32_t>(groups.of.size()));
    if (fresh) groups.of.emplace_back(sp.service, sp.thread);
    Slice& s = slices[i];
    s.start = sp.start;
    s.end = sp.end;
    s.group = it->second;
    s.parent = sp.parent;
    s.depth = sp.depth;
    const uint64_t op_key = uint64_t(sp.service) << 32 | sp.operation;
    auto cached = activity_cache.find(op_key << 3 | uint64_t(sp.kind));
    if (cached == activity_cache.end()) {
      const ActivityType t =
          map.match(set.str(sp.operation), "", set.str(sp.service), name_of(sp.kind))
              .value_or(ActivityType::processing);
      cached = activity_cache.emplace(op_key << 3 | uint64_t(sp.kind), t).first;
    }
    s.type = cached->second;
    s.op = operators.id(set.str(sp.service) + ": " + set.str(sp.operation));
  }
  return slices;
}

// A parent waits while a child that returns before the parent ends runs on another
// worker (a synchronous call). A child outliving its parent was not waited for. Per span,
// the merged intervals it waits in.
std::vector<std::vector<std::pair<int64_t, int64_t>>> synchronous_waits(
    const std::vector<Span>& spans, const Lanes& lanes) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> waits(spans.size());
  for (uint32_t c = 0; c < spans.size(); ++c) {
    const uint32_t p = spans[c].parent;
    if (p == kNoSpan || lanes.lane_of[p] == lanes.lane_of[c] || spans[c].end > spans[p].end)
      continue;
    const int64_t a = std::max(spans[c].start, spans[p].start);
    const int64_t b = std::min(spans[c].end, spans[p].end);
    if (a < b) waits[p].emplace_back(a, b);
  }
  for (auto& w : waits) {
    if (w.size() < 2) continue;
    std::sort(w.begin(), w.end());
    size_t out = 0;
    for (size_t k = 1; k < w.size(); ++k) {
      if (w[k].first <= w[out].second)
        w[out].second = std::max(w[out].second, w[k].second);
      else
        w[++out] = w[k];
    }
    w.resize(out + 1);
  }
  return waits;
}

// The messages between lanes: a call and its return between a parent and a child on
// another lane; follows-from references and links. Counts what cannot be a message.
struct SpanMessageCounts {
  uint64_t skewed = 0, links_before_source = 0;
};
SpanMessageCounts add_span_messages(const SpanSet& set, const Lanes& lanes, EventSink& sink) {
  const std::vector<Span>& spans = set.spans;
  SpanMessageCounts n;
  for (uint32_t c = 0; c < spans.size(); ++c) {
    const Span& child = spans[c];
    const uint32_t p = child.parent;
    if (p != kNoSpan && lanes.lane_of[p] != lanes.lane_of[c]) {
      const Span& parent = spans[p];
      if (child.start >= parent.start)
        sink.add_message(lanes.lane_of[p], std::min(child.start, parent.end), lanes.lane_of[c],
                         child.start);
      else
        ++n.skewed;  // clock skew: the call would arrive before it was made
      if (child.end <= parent.end && child.end >= parent.start)
        sink.add_message(lanes.lane_of[c], child.end, lanes.lane_of[p], child.end);
    }
    // Follows-from references and links: the source's end (or the moment the target
    // starts, if earlier) causes the target's start.
    for (uint32_t r = child.refs_begin; r < child.refs_end; ++r) {
      const uint32_t src = set.ref_target[r];
      if (src == kNoSpan || src == p || lanes.lane_of[src] == lanes.lane_of[c]) continue;
      if (child.start < spans[src].start) {
        ++n.links_before_source;
        continue;
      }
      sink.add_message(lanes.lane_of[src], std::min(spans[src].end, child.start), lanes.lane_of[c],
                       child.start);
    }
  }
  return n;
}

// "service/thread", with " (lane k)" for the lanes after a group's first.
void name_span_workers(Trace& trace, const SpanSet& set, const SpanGroups& groups,
                       const Lanes& lanes) {
  for (uint32_t lane = 0; lane < lanes.group_of.size(); ++lane) {
    const auto [service, thread] = groups.of[lanes.group_of[lane]];
    std::string name = set.str(service);
    if (thread != kNoSpan) name += "/" + set.str(thread);
    if (lanes.index_in_group[lane] > 0)
      name += " (lane " + std::to_string(lanes.index_in_group[lane]) + ")";
    trace.worker_names[lane] = std::move(name);
  }
}

}  // namespace

Trace spans_to_trace(const SpanSet& set, const ActivityMap& map) {
  // Workers: one group per (service, thread); lanes inside a group keep spans disjoint.
  SpanGroups groups;
  json::Interner operators;
  const std::vector<Slice> slices = span_slices(set, map, groups, operators);
  Lanes lanes = assign_lanes(slices, static_cast<uint32_t>(groups.of.size()), true);
  const auto waits = synchronous_waits(set.spans, lanes);
  EventSink sink;
  sink.add_timelines(slices, lanes, &waits, GapsBetweenSlices::unrecorded);
  const SpanMessageCounts counts = add_span_messages(set, lanes, sink);

  Trace trace;
  trace.source = set.source;
  sink.finish(trace);
  name_span_workers(trace, set, groups, lanes);
  for (uint32_t i = 0; i < operators.names.size(); ++i)
    trace.operator_names[i] = operators.names[i];
  trace.import_diagnostics = set.diagnostics;
  auto diag = [&](SpanDiagnostic d, uint64_t n) {
    if (n) trace.import_diagnostics.emplace_back(span_diagnostic(set.format, d).name, n);
  };
  diag(SpanDiagnostic::children_starting_before_parent, counts.skewed);
  diag(SpanDiagnostic::links_before_source, counts.links_before_source);
  return trace;
}

}  // namespace snailtrail::importers
