// Request identifiers inferred from plain logs (flows.hpp, request_groups.hpp): which
// parameter slots hold identifiers, their kinds, and the records joined by them.
#include <algorithm>
#include <map>
#include <regex>
#include <unordered_map>

#include "logs/request_groups.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::logs {
namespace {

using detail::Grouping;
using detail::kNone;
using detail::UnionFind;

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// host:port, /10.251.42.84:50010, node-7:8042: a node's address, never a request.
bool is_host_port(std::string_view v) {
  const size_t colon = v.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == v.size() ||
      v.size() - colon > 6)
    return false;
  for (size_t i = colon + 1; i < v.size(); ++i)
    if (v[i] < '0' || v[i] > '9') return false;
  for (size_t i = 0; i < colon; ++i)
    if (!is_letter(v[i]) && !(v[i] >= '0' && v[i] <= '9') && v[i] != '.' && v[i] != '-' &&
        v[i] != '_' && v[i] != '/')
      return false;
  return true;
}

}  // namespace

// Small counters (all digits, dots, signs: "12", "0.0", "-3") collide across requests:
// only values with a letter or at least 6 digits can identify one. Numbers with
// separators (IPs 10.251.42.84, dates 2015-08-07, times 17:41:44, versions, decimals)
// and addresses (host:port) name nodes, times or sizes, never a request; nor does a value
// with its unit ("45 ms", "1190 bytes (1.16 KB)", one token for the miner).
bool id_like(std::string_view v) {
  if (v.find(' ') != std::string_view::npos || v.find('\t') != std::string_view::npos) return false;
  size_t digits = 0, separators = 0;
  bool letter = false;
  for (size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (c >= '0' && c <= '9')
      ++digits;
    else if (c == 'T' && i > 0 && i + 1 < v.size() && v[i - 1] >= '0' && v[i - 1] <= '9')
      ++separators;  // the T of an ISO-8601 date-time
    else if (c == 'Z' && i + 1 == v.size() && i > 0 && v[i - 1] >= '0' && v[i - 1] <= '9')
      ++separators;
    else if (is_letter(c))
      letter = true;
    else if (i > 0 || (c != '-' && c != '+'))
      ++separators;
  }
  if (digits == 0) return false;
  if (!letter) return separators == 0 && digits >= 6;
  return !is_host_port(v);
}

namespace {

// Pass 1: every id-like parameter value, the template slots it occurs in (a slot is a
// (template, parameter position)), and the values of each record.
struct ParamValue {
  uint32_t records = 0;  // a record index is 32-bit: 12 bytes a value, not 16
  uint32_t first_cluster = kNone;
  bool multi_cluster = false;
};
// A value's distinct slots: [begin, end) of ValueCensus::value_slots.
struct SlotRange {
  const uint32_t *b, *e;
  const uint32_t* begin() const { return b; }
  const uint32_t* end() const { return e; }
};
struct RecordValue {
  uint32_t record = 0, value = 0, slot = 0;
};
struct ValueCensus {
  std::vector<uint32_t> slot_base;  // per template: its first slot; [clusters] = all slots
  std::vector<ParamValue> values;
  std::vector<std::string_view> value_text;
  // The records' (value, slot) pairs in record order; only records with values have any
  // (no array per record: most lines of a log hold no id-like value).
  std::vector<RecordValue> rec_values;
  // text -> value: open addressing over value indices + 1 (0 = empty), at most half full;
  // a map node per value was most of `flows`' memory on logs of unique tokens.
  std::vector<uint32_t> value_table;
  TextArena text;  // copies of the values (intern(v, true))
  uint32_t intern(std::string_view v, bool copy);
  uint32_t id_of_last() const { return static_cast<uint32_t>(value_text.size() - 1); }
  std::vector<uint32_t> slot_begin, value_slots;  // per value: its distinct slots (flat)
  size_t slots() const { return slot_base.back(); }
  SlotRange slots_of(size_t v) const {
    return {value_slots.data() + slot_begin[v], value_slots.data() + slot_begin[v + 1]};
  }
};

uint32_t ValueCensus::intern(std::string_view v, bool copy) {
  if ((value_text.size() + 1) * 2 > value_table.size()) {
    std::vector<uint32_t> table(std::max<size_t>(1024, value_table.size() * 2), 0);
    const size_t mask = table.size() - 1;
    for (uint32_t id : value_table) {
      if (id == 0) continue;
      size_t i = std::hash<std::string_view>{}(value_text[id - 1]) & mask;
      while (table[i] != 0) i = (i + 1) & mask;
      table[i] = id;
    }
    value_table.swap(table);
  }
  const size_t mask = value_table.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(v)&mask;; i = (i + 1) & mask) {
    const uint32_t id = value_table[i];
    if (id == 0) {
      value_table[i] = static_cast<uint32_t>(value_text.size() + 1);
      values.emplace_back();
      value_text.push_back(copy ? text.add({}, v) : v);
      return id_of_last();
    }
    if (value_text[id - 1] == v) return id - 1;
  }
}

std::vector<uint32_t> slot_bases(const Drain& drain) {
  const size_t clusters = drain.cluster_count();
  std::vector<uint32_t> slot_base(clusters + 1, 0);
  for (size_t c = 0; c < clusters; ++c) {
    uint32_t k = 0;
    for (size_t i = 0; i < drain.token_count(static_cast<uint32_t>(c)); ++i)
      k += drain.token(static_cast<uint32_t>(c), i).find(kWildcard) != std::string_view::npos;
    slot_base[c + 1] = slot_base[c] + k;
  }
  return slot_base;
}

// Each value's distinct slots, from the (value, slot) pairs of the records: one flat
// array, not a list per value (logs of mostly unique tokens have millions of values).
void value_slot_lists(ValueCensus& vc) {
  const size_t n = vc.values.size();
  vc.slot_begin.assign(n + 1, 0);
  for (const auto& [r, v, s] : vc.rec_values) ++vc.slot_begin[v + 1];
  for (size_t v = 0; v < n; ++v) vc.slot_begin[v + 1] += vc.slot_begin[v];
  vc.value_slots.resize(vc.rec_values.size());  // counting sort by value, no copy of the pairs
  for (const auto& [r, v, s] : vc.rec_values) vc.value_slots[vc.slot_begin[v]++] = s;
  for (size_t v = n; v > 0; --v) vc.slot_begin[v] = vc.slot_begin[v - 1];
  vc.slot_begin[0] = 0;
  uint32_t out = 0;  // each value's slots sorted, duplicates dropped, compacted
  for (size_t v = 0; v < n; ++v) {
    uint32_t* b = vc.value_slots.data() + vc.slot_begin[v];
    uint32_t* e = vc.value_slots.data() + vc.slot_begin[v + 1];
    std::sort(b, e);
    e = std::unique(b, e);
    vc.slot_begin[v] = out;
    for (uint32_t* p = b; p != e; ++p) vc.value_slots[out++] = *p;
  }
  vc.slot_begin[n] = out;
  vc.value_slots.resize(out);
  vc.value_slots.shrink_to_fit();
}

// Every id-like parameter value of the records' messages, as `messages` gives them (in
// record order). Values are copied into `vc.text` if `copy_values` (messages read again
// from the files do not stay).
ValueCensus census_values(const LogSet& logs, const detail::MessageSource& messages,
                          bool copy_values) {
  ValueCensus vc;
  vc.slot_base = slot_bases(logs.drain);
  std::vector<Token> tokens;
  std::vector<std::string_view> params;
  const size_t max_tokens = logs.drain.options().max_tokens;
  messages([&](uint32_t r, std::string_view message) {
    const LogRecord& rec = logs.records[r];
    tokenize(message, tokens, max_tokens, &logs.drain.masks());
    logs.drain.params(rec.cluster, tokens, params);
    const size_t begin = vc.rec_values.size();  // this record's pairs
    for (size_t k = 0; k < params.size(); ++k) {
      const std::string_view v = params[k];
      if (!id_like(v)) continue;
      const uint32_t id = vc.intern(v, copy_values);
      ParamValue& val = vc.values[id];
      const uint32_t slot = vc.slot_base[rec.cluster] + static_cast<uint32_t>(k);
      // A value counts once per record.
      bool dup = false;
      for (size_t j = begin; j < vc.rec_values.size(); ++j) dup |= vc.rec_values[j].value == id;
      if (!dup) ++val.records;
      if (val.first_cluster == kNone)
        val.first_cluster = rec.cluster;
      else if (val.first_cluster != rec.cluster)
        val.multi_cluster = true;
      vc.rec_values.push_back({r, id, slot});
    }
  });
  value_slot_lists(vc);
  return vc;
}

// Pass 2: a slot holds identifiers if at least 30 % of its distinct values recur in
// another template and are not hubs (on more than `hub` records). Appends them to id_slots.
std::vector<bool> identifier_slots(const ValueCensus& vc, uint64_t hub,
                                   std::vector<IdSlot>& id_slots) {
  const size_t slots = vc.slots();
  std::vector<IdSlot> stats(slots);
  for (size_t c = 0; c + 1 < vc.slot_base.size(); ++c)
    for (uint32_t s = vc.slot_base[c]; s < vc.slot_base[c + 1]; ++s)
      stats[s].cluster = static_cast<uint32_t>(c), stats[s].position = s - vc.slot_base[c];
  for (size_t v = 0; v < vc.values.size(); ++v)
    for (uint32_t s : vc.slots_of(v)) {
      ++stats[s].distinct;
      stats[s].recurring += vc.values[v].multi_cluster && vc.values[v].records <= hub;
    }
  for (const auto& [r, v, s] : vc.rec_values) ++stats[s].records;
  std::vector<bool> is_id(slots, false);
  for (size_t s = 0; s < slots; ++s)
    if (stats[s].recurring > 0 && stats[s].recurring * 10 >= stats[s].distinct * 3) {
      is_id[s] = true;
      id_slots.push_back(stats[s]);
    }
  return is_id;
}

// Kinds of identifier: slots that share a value hold the same kind (block ids, request
// ids, node addresses, ...). A kind with more distinct values is finer.
struct IdKinds {
  UnionFind slots;                      // slots of one kind are united
  std::vector<uint64_t> kind_values;    // per kind (its root slot): distinct values
  std::vector<uint32_t> kind_of_value;  // per value: its kind, kNone if not an identifier
};

IdKinds identifier_kinds(const ValueCensus& vc, const std::vector<bool>& is_id) {
  IdKinds k;
  const size_t slots = vc.slots();
  for (size_t s = 0; s < slots; ++s) k.slots.add();
  for (size_t v = 0; v < vc.values.size(); ++v) {
    uint32_t first = kNone;  // the value's first identifier slot
    for (uint32_t s : vc.slots_of(v))
      if (is_id[s]) first == kNone ? void(first = s) : k.slots.unite(first, s);
  }
  k.kind_values.assign(slots, 0);
  k.kind_of_value.assign(vc.values.size(), kNone);
  for (size_t v = 0; v < vc.values.size(); ++v)
    for (uint32_t s : vc.slots_of(v))
      if (is_id[s]) {
        k.kind_of_value[v] = k.slots.find(s);
        ++k.kind_values[k.kind_of_value[v]];
        break;
      }
  return k;
}

// std::stable_sort's order, without its buffer allocation for the few values of a record.
template <class Less>
void stable_sort_small(std::vector<uint32_t>& v, Less less) {
  if (v.size() > 16) return std::stable_sort(v.begin(), v.end(), less);
  for (size_t i = 1; i < v.size(); ++i) {
    const uint32_t x = v[i];
    size_t j = i;
    for (; j > 0 && less(x, v[j - 1]); --j) v[j] = v[j - 1];
    v[j] = x;
  }
}

// Pass 3: union-find over identifier values, as lprof's request accumulators: two groups
// join only if they do not conflict (hold different values of one kind). A record goes
// to the group of its finest identifier. Returns the records whose values conflicted.
uint64_t join_requests(const ValueCensus& vc, const std::vector<bool>& is_id, uint64_t hub,
                       IdKinds& kinds, Grouping& g) {
  std::vector<uint32_t> uf_of(vc.values.size(), kNone);
  // The (kind, value) pairs a group holds: a list through next[] from its root, one entry
  // per union-find node (the value that made it), so no list per value is allocated.
  std::vector<uint32_t> kind_of, value_of, next, tail;
  auto compatible = [&](uint32_t a, uint32_t b) {
    for (uint32_t x = a; x != kNone; x = next[x])
      for (uint32_t y = b; y != kNone; y = next[y])
        if (kind_of[x] == kind_of[y] && value_of[x] != value_of[y]) return false;
    return true;
  };
  // At most one union-find node per identifier value: reserved once, not grown by
  // doubling (a log of unique request ids has millions).
  const size_t nodes =
      static_cast<size_t>(std::count_if(kinds.kind_of_value.begin(), kinds.kind_of_value.end(),
                                        [](uint32_t k) { return k != kNone; }));
  for (std::vector<uint32_t>* v : {&kind_of, &value_of, &next, &tail, &g.uf.parent})
    v->reserve(nodes);
  g.key_names.reserve(nodes);
  uint64_t multi_id_records = 0;
  std::vector<uint32_t> ids;
  for (size_t end = 0; end < vc.rec_values.size();) {
    const uint32_t r = vc.rec_values[end].record;  // the record's pairs: [begin, end)
    const size_t begin = end;
    while (end < vc.rec_values.size() && vc.rec_values[end].record == r) ++end;
    ids.clear();
    for (size_t j = begin; j < end; ++j) {
      const auto [rec, v, s] = vc.rec_values[j];
      if (!is_id[s] || vc.values[v].records > hub) continue;
      if (std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
    }
    if (ids.empty()) continue;
    // The finest identifier first: the record belongs to its group.
    stable_sort_small(ids, [&](uint32_t a, uint32_t b) {
      return kinds.kind_values[kinds.kind_of_value[a]] > kinds.kind_values[kinds.kind_of_value[b]];
    });
    for (uint32_t v : ids)
      if (uf_of[v] == kNone) {
        uf_of[v] = g.uf.add();
        g.key_names.emplace_back(vc.value_text[v]);
        kind_of.push_back(kinds.kind_of_value[v]);
        value_of.push_back(v);
        next.push_back(kNone);
        tail.push_back(uf_of[v]);
      }
    bool conflict = false;
    for (size_t k = 1; k < ids.size(); ++k) {
      uint32_t a = g.uf.find(uf_of[ids[0]]), b = g.uf.find(uf_of[ids[k]]);
      if (a == b) continue;
      if (!compatible(a, b)) {
        conflict = true;
        continue;
      }
      g.uf.unite(a, b);
      const uint32_t root = g.uf.find(a), other = root == a ? b : a;
      next[tail[root]] = other;
      tail[root] = tail[other];
    }
    multi_id_records += conflict;
    g.key[r] = uf_of[ids[0]];
  }
  return multi_id_records;
}

// The shape of an identifier: its text before the first digit (blk_, req-, attempt_),
// if that has a letter; empty otherwise.
std::string_view id_prefix(std::string_view v) {
  size_t i = 0;
  while (i < v.size() && !(v[i] >= '0' && v[i] <= '9')) ++i;
  std::string_view p = v.substr(0, i);
  while (!p.empty() && (p.back() == '-' || p.back() == '+')) p.remove_suffix(1);
  return std::any_of(p.begin(), p.end(), is_letter) ? p : std::string_view();
}

// A sampled log: values rarely repeat, so no slot recurs. Identifiers are then the slots
// whose values share a prefix that slots of at least two templates hold (blk_ in HDFS);
// the prefix with most distinct values wins. Returns the chosen prefix.
std::string shape_slots(const ValueCensus& vc, std::vector<bool>& is_id,
                        std::vector<IdSlot>& id_slots) {
  const size_t slots = vc.slots();
  std::vector<std::unordered_map<std::string_view, uint64_t>> prefixes(slots);
  for (size_t v = 0; v < vc.values.size(); ++v)
    if (const std::string_view p = id_prefix(vc.value_text[v]); !p.empty())
      for (uint32_t s : vc.slots_of(v)) ++prefixes[s][p];
  std::vector<uint32_t> cluster_of(slots);
  for (size_t c = 0; c + 1 < vc.slot_base.size(); ++c)
    for (uint32_t s = vc.slot_base[c]; s < vc.slot_base[c + 1]; ++s)
      cluster_of[s] = static_cast<uint32_t>(c);
  struct Shape {
    std::vector<uint32_t> slots, clusters;
    uint64_t values = 0;
  };
  std::map<std::string_view, Shape> shapes;  // the main prefix of each slot
  for (size_t s = 0; s < slots; ++s) {
    if (prefixes[s].empty()) continue;
    auto top = std::max_element(prefixes[s].begin(), prefixes[s].end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    Shape& sh = shapes[top->first];
    sh.slots.push_back(static_cast<uint32_t>(s));
    sh.values += top->second;
    if (std::find(sh.clusters.begin(), sh.clusters.end(), cluster_of[s]) == sh.clusters.end())
      sh.clusters.push_back(cluster_of[s]);
  }
  const Shape* best = nullptr;
  std::string_view best_prefix;
  for (const auto& [p, sh] : shapes)
    if (sh.clusters.size() >= 2 && (!best || sh.values > best->values)) best = &sh, best_prefix = p;
  if (!best) return {};
  for (uint32_t s : best->slots) {
    is_id[s] = true;
    IdSlot slot;
    slot.cluster = cluster_of[s];
    slot.position = s - vc.slot_base[cluster_of[s]];
    id_slots.push_back(slot);
  }
  return std::string(best_prefix);
}

}  // namespace

namespace detail {

// --id REGEX: the first match of every whole line (its first group if any) names its request.
void group_by_regex(const LogSet& logs, const std::string& id_regex, Grouping& g) {
  std::regex re;
  try {
    re = std::regex(id_regex, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw UsageError({field("id_regex"), " '" + id_regex + "': " + e.what()});
  }
  std::unordered_map<std::string_view, uint32_t> ids;
  std::match_results<std::string_view::const_iterator> m;
  for (size_t r = 0; r < logs.records.size(); ++r) {
    // The whole line: an id may sit in a header field (OpenStack's [req-...]).
    const std::string_view c = logs.whole_line(r);
    if (!std::regex_search(c.begin(), c.end(), m, re)) continue;
    const size_t group = m.size() > 1 && m[1].matched ? 1 : 0;
    const std::string_view v =
        c.substr(static_cast<size_t>(m.position(group)), static_cast<size_t>(m.length(group)));
    auto [it, fresh] = ids.try_emplace(v, static_cast<uint32_t>(g.key_names.size()));
    if (fresh) g.key_names.push_back(v), g.uf.add();
    g.key[r] = it->second;
  }
}

void group_by_identifiers(const LogSet& logs, const MessageSource& messages, bool copy_values,
                          FlowSet& out, Grouping& g) {
  ValueCensus vc = census_values(logs, messages, copy_values);
  const uint64_t hub = std::max<uint64_t>(64, logs.records.size() / 100);
  std::vector<bool> is_id = identifier_slots(vc, hub, out.id_slots);
  out.id_values = vc.values.size();
  for (const ParamValue& v : vc.values) out.id_values_repeating += v.records > 1;
  // Fewer than 1 value in 20 repeats: a sample, not a log of whole requests.
  out.sampled = out.id_values >= 20 && out.id_values_repeating * 20 < out.id_values;
  if (out.sampled) {
    out.id_slots.clear();
    std::fill(is_id.begin(), is_id.end(), false);
    out.id_shape = shape_slots(vc, is_id, out.id_slots);
  }
  IdKinds kinds = identifier_kinds(vc, is_id);
  out.multi_id_records += join_requests(vc, is_id, hub, kinds, g);
  out.id_source = out.id_slots.empty() ? "none" : out.sampled ? "shape" : "auto";
  out.id_arena = std::move(vc.text);  // the groups' names view into it
}

}  // namespace detail
}  // namespace snailtrail::logs
