// Request identifiers inferred from plain logs (flows.hpp, request_groups.hpp): which
// parameter slots hold identifiers, their kinds, and the records joined by them.
#include <algorithm>
#include <map>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "logs/request_groups.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::logs {
namespace {

using detail::Grouping;
using detail::kNone;
using detail::push_grown;
using detail::RecordPairs;
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

static_assert(sizeof(size_t) == 8, "the census samples values by the top bits of a 64-bit hash");

struct TextHash {
  size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
};
using ValueTable = detail::ValueTable<TextHash>;

size_t hash_of(std::string_view v) {
  return TextHash{}(v);
}

// Records per value, over-estimated, in fixed memory (a count-min sketch, 1 MiB): a value
// whose estimate is at most the hub limit is on at most that many records, so only the
// few above it need an exact count (pass 3). Counters only add (saturating), so adding n
// at once leaves the cells as n single adds would: the census feeds it only once it
// samples, first with the exact counts it held until then (allocated then too).
class RecordSketch {
 public:
  void add(size_t h, uint32_t n = 1) {
    if (cells_.empty()) cells_.assign(kDepth * kWidth, 0);
    for (size_t d = 0; d < kDepth; ++d) {
      uint32_t& c = cells_[d * kWidth + index(h, d)];
      c = c > UINT32_MAX - n ? UINT32_MAX : c + n;
    }
  }
  uint32_t estimate(size_t h) const {
    if (cells_.empty()) return 0;  // nothing added
    uint32_t m = UINT32_MAX;
    for (size_t d = 0; d < kDepth; ++d) m = std::min(m, cells_[d * kWidth + index(h, d)]);
    return m;
  }

 private:
  static constexpr size_t kDepth = 4, kWidth = size_t{1} << 16;
  static size_t index(size_t h, size_t d) {
    const uint64_t x = (h ^ ((d + 1) * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
    return static_cast<size_t>(x >> 48);
  }
  std::vector<uint32_t> cells_;  // empty until the first add
};

// Pass 2, the census: which slots (template, parameter position) hold identifiers, from
// the values' repeat statistics. Memory is bounded: it holds at most `cap` distinct
// id-like values, exactly while there are no more; beyond, a sample of them by hash (a
// value is held iff the top `level` bits of its hash are zero; the level rises whenever
// more than `cap` are held), so that a held value was held from its first record and its
// counts are exact. Per-slot counts of distinct and recurring values are the sample's,
// scaled by 2^level; a slot's decision is their ratio. Every value's records are counted
// in a fixed-size sketch (hubs, pass 3); per-slot record counts are exact.
// 8 bytes a value (millions on logs of unique ids): the cluster and the flag share a word.
constexpr uint32_t kNoCluster = (uint32_t{1} << 31) - 1;
struct ParamValue {
  uint32_t records = 0;  // records holding it (once per record)
  uint32_t first_cluster : 31 = kNoCluster;
  uint32_t multi_cluster : 1 = 0;
};
static_assert(sizeof(ParamValue) == 8);
// A value's distinct slots: [begin, end) of Census::value_slots.
struct SlotRange {
  const uint32_t *b, *e;
  const uint32_t* begin() const { return b; }
  const uint32_t* end() const { return e; }
};
struct Census {
  explicit Census(bool copy, size_t cap) : table(copy), cap(std::max<size_t>(cap, 1)) {}
  std::vector<uint32_t> slot_base;     // per template: its first slot; [clusters] = all slots
  std::vector<uint64_t> slot_records;  // per slot: its id-like values (every one)
  ValueTable table;                    // the held values
  std::vector<ParamValue> values;
  std::vector<uint64_t> pairs;  // sampling: set of (value + 1) << 32 | slot, open addressing
  size_t pair_count = 0;
  unsigned level = 0;  // 1 value in 2^level held
  size_t cap;
  size_t most_held = 0;
  RecordSketch sketch;  // every value's records, once sampling (read only then)
  // While exact (level 0): every record's (value, slot) pairs, in record order, so that the
  // grouping needs no more reading; dropped when the census starts sampling.
  RecordPairs rec_values;
  std::vector<uint32_t> slot_begin, value_slots;  // per held value: its slots (flat)

  bool held_level(size_t h) const { return level == 0 || (h >> (64 - level)) == 0; }
  size_t slots() const { return slot_base.back(); }
  SlotRange slots_of(size_t v) const {
    return {value_slots.data() + slot_begin[v], value_slots.data() + slot_begin[v + 1]};
  }
  uint64_t scaled(uint64_t n) const { return n << level; }
  void add_pair(uint32_t v, uint32_t slot);
  void raise_level();
  void slot_lists();
};

void Census::add_pair(uint32_t v, uint32_t slot) {
  if ((pair_count + 1) * 2 > pairs.size()) {
    std::vector<uint64_t> old(std::max<size_t>(1024, pairs.size() * 2), 0);
    old.swap(pairs);
    pair_count = 0;
    for (uint64_t k : old)
      if (k != 0) add_pair(static_cast<uint32_t>((k >> 32) - 1), static_cast<uint32_t>(k));
  }
  const uint64_t key = (uint64_t{v} + 1) << 32 | slot;
  const size_t mask = pairs.size() - 1;
  for (size_t i = (key * 0x9e3779b97f4a7c15ull) >> 20 & mask;; i = (i + 1) & mask) {
    if (pairs[i] == key) return;
    if (pairs[i] == 0) {
      pairs[i] = key;
      ++pair_count;
      return;
    }
  }
}

// Half the held values, expected: those whose hash has the next bit set are dropped.
void Census::raise_level() {
  if (level == 0) {  // from now on the pairs are a set of the held values' pairs
    for (const auto& p : rec_values.pairs()) add_pair(p.value, p.slot());
    rec_values.clear();
    // Exact until now: every value seen is held with its records, which the sketch then
    // gets at once (the same cells as fed record by record).
    for (size_t v = 0; v < values.size(); ++v)
      sketch.add(hash_of(table.text(v)), values[v].records);
  }
  ++level;
  const std::vector<uint32_t> to =
      table.keep_if([&](size_t v) { return held_level(hash_of(table.text(v))); });
  std::vector<ParamValue> kept;
  for (size_t v = 0; v < values.size(); ++v)
    if (to[v] != kNone) kept.push_back(values[v]);
  values.swap(kept);
  std::vector<uint64_t> old(pairs.size(), 0);
  old.swap(pairs);
  pair_count = 0;
  for (uint64_t k : old)
    if (k != 0 && to[(k >> 32) - 1] != kNone) add_pair(to[(k >> 32) - 1], static_cast<uint32_t>(k));
}

// Each held value's distinct slots, sorted, in one flat array: from the records' pairs
// (exact census: a counting sort by value, no copy of the pairs) or from the set.
void Census::slot_lists() {
  const size_t n = values.size();
  slot_begin.assign(n + 1, 0);
  if (level == 0) {
    for (const auto& p : rec_values.pairs()) ++slot_begin[p.value + 1];
    for (size_t v = 0; v < n; ++v) slot_begin[v + 1] += slot_begin[v];
    value_slots.resize(rec_values.pairs().size());
    for (const auto& p : rec_values.pairs()) value_slots[slot_begin[p.value]++] = p.slot();
    for (size_t v = n; v > 0; --v) slot_begin[v] = slot_begin[v - 1];
    slot_begin[0] = 0;
  } else {
    std::vector<uint64_t> sorted;
    sorted.reserve(pair_count);
    for (uint64_t k : pairs)
      if (k != 0) sorted.push_back(k);
    std::vector<uint64_t>().swap(pairs);
    std::sort(sorted.begin(), sorted.end());
    value_slots.resize(sorted.size());
    for (size_t i = 0; i < sorted.size(); ++i) {
      ++slot_begin[sorted[i] >> 32];  // value + 1
      value_slots[i] = static_cast<uint32_t>(sorted[i]);
    }
    for (size_t v = 0; v < n; ++v) slot_begin[v + 1] += slot_begin[v];
  }
  uint32_t out = 0;  // each value's slots sorted, duplicates dropped, compacted
  for (size_t v = 0; v < n; ++v) {
    uint32_t* b = value_slots.data() + slot_begin[v];
    uint32_t* e = value_slots.data() + slot_begin[v + 1];
    std::sort(b, e);
    e = std::unique(b, e);
    slot_begin[v] = out;
    for (uint32_t* p = b; p != e; ++p) value_slots[out++] = *p;
  }
  slot_begin[n] = out;
  value_slots.resize(out);
  value_slots.shrink_to_fit();
}

std::vector<uint32_t> slot_bases(const Drain& drain) {
  const size_t clusters = drain.cluster_count();
  std::vector<uint32_t> slot_base(clusters + 1, 0);
  for (size_t c = 0; c < clusters; ++c) {
    uint32_t k = 0;
    const size_t n = drain.token_count(static_cast<uint32_t>(c));
    Drain::TokenCursor tokens = drain.tokens(static_cast<uint32_t>(c));
    for (size_t i = 0; i < n; ++i) k += tokens.next().find(kWildcard) != std::string_view::npos;
    slot_base[c + 1] = slot_base[c] + k;
  }
  return slot_base;
}

// The id-like parameter values of each record's message (as `messages` gives them, in
// record order): visit(record, cluster, slot of its first parameter, params).
template <class Visit>
void each_record_params(const LogSet& logs, const detail::MessageSource& messages, Visit&& visit) {
  std::vector<Token> tokens;
  std::vector<std::string_view> params;
  const size_t max_tokens = logs.drain.options().max_tokens;
  messages([&](uint32_t r, std::string_view message) {
    const uint32_t cluster = logs.cluster(r);
    tokenize(message, tokens, max_tokens, &logs.drain.masks());
    logs.drain.params(cluster, tokens, params);
    visit(r, cluster, params);
  });
}

Census census_values(const LogSet& logs, const detail::MessageSource& messages, bool copy_values,
                     size_t cap) {
  Census vc(copy_values, cap);
  if (logs.drain.cluster_count() >= kNoCluster)
    throw std::length_error("flows: too many templates");
  vc.slot_base = slot_bases(logs.drain);
  vc.slot_records.assign(vc.slots(), 0);
  std::vector<std::string_view> seen;  // the record's values so far
  each_record_params(logs, messages, [&](uint32_t r, uint32_t cluster, const auto& params) {
    seen.clear();
    for (size_t k = 0; k < params.size(); ++k) {
      const std::string_view v = params[k];
      if (!id_like(v)) continue;
      const uint32_t slot = vc.slot_base[cluster] + static_cast<uint32_t>(k);
      ++vc.slot_records[slot];
      const size_t h = hash_of(v);
      const bool first = std::find(seen.begin(), seen.end(), v) == seen.end();
      if (first) {  // a value counts once per record
        seen.push_back(v);
        if (vc.level > 0) vc.sketch.add(h);
      }
      if (!vc.held_level(h)) continue;
      bool fresh = false;
      const uint32_t id = vc.table.intern(v, h, fresh);
      if (fresh) push_grown(vc.values, ParamValue{});
      ParamValue& val = vc.values[id];
      val.records += first;
      if (static_cast<uint32_t>(val.first_cluster) == kNoCluster)
        val.first_cluster = cluster & kNoCluster;
      else if (static_cast<uint32_t>(val.first_cluster) != cluster)
        val.multi_cluster = 1;
      if (vc.level == 0)
        vc.rec_values.push(r, id, slot);
      else
        vc.add_pair(id, slot);
      while (vc.values.size() > vc.cap && vc.level < 63) vc.raise_level();
      vc.most_held = std::max(vc.most_held, vc.values.size());
    }
  });
  // Nothing looks a value up after the census (pass 3 has its own tables): its lookup (8
  // to 16 bytes a value) is freed before the slot lists are built, the census's peak.
  vc.table.drop_lookup();
  vc.slot_lists();
  return vc;
}

// A slot holds identifiers if at least 30 % of its distinct values recur in another
// template and are not hubs (on more than `hub` records): counted on the census's held
// values (all of them, or a sample: the ratio is the same), reported scaled. Appends the
// identifier slots to id_slots.
std::vector<bool> identifier_slots(const Census& vc, uint64_t hub, std::vector<IdSlot>& id_slots) {
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
  std::vector<bool> is_id(slots, false);
  for (size_t s = 0; s < slots; ++s) {
    stats[s].records = vc.slot_records[s];
    if (stats[s].recurring > 0 && stats[s].recurring * 10 >= stats[s].distinct * 3) {
      is_id[s] = true;
      stats[s].distinct = vc.scaled(stats[s].distinct);
      stats[s].recurring = vc.scaled(stats[s].recurring);
      id_slots.push_back(stats[s]);
    }
  }
  return is_id;
}

// Pass 3 (the messages again): every value of an identifier slot, exactly. Slots that
// share a value hold the same kind of identifier (block ids, request ids, node addresses,
// ...); a kind with more distinct values is finer. A value is a hub if it is on more than
// `hub` records: counted exactly only for the values whose sketched count says they may be.
struct IdValues {
  explicit IdValues(bool copy) : table(copy) {}
  ValueTable table;
  std::vector<uint32_t> kind;  // per value: its kind (the root slot of its slots)
  std::vector<bool> hub;
  std::vector<uint64_t> kind_values;  // per kind (its root slot): distinct values
};

IdValues identifier_values(const LogSet& logs, const detail::MessageSource& messages,
                           bool copy_values, const Census& vc, const std::vector<bool>& is_id,
                           uint64_t hub) {
  IdValues ids(copy_values);
  UnionFind kinds;  // slots of one kind are united
  for (size_t s = 0; s < vc.slots(); ++s) kinds.add();
  ValueTable heavy(copy_values);  // the values that may be hubs: their records, exactly
  std::vector<std::pair<uint32_t, uint32_t>> heavy_records;  // (records, last record)
  each_record_params(logs, messages, [&](uint32_t r, uint32_t cluster, const auto& params) {
    for (size_t k = 0; k < params.size(); ++k) {
      const std::string_view v = params[k];
      if (!id_like(v)) continue;
      const uint32_t slot = vc.slot_base[cluster] + static_cast<uint32_t>(k);
      const size_t h = hash_of(v);
      bool fresh = false;
      if (vc.sketch.estimate(h) > hub) {
        const uint32_t id = heavy.intern(v, h, fresh);
        if (fresh) heavy_records.emplace_back(0, kNone);
        auto& [records, last] = heavy_records[id];
        if (last != r) ++records, last = r;
      }
      if (!is_id[slot]) continue;
      const uint32_t id = ids.table.intern(v, h, fresh);
      if (fresh)
        ids.kind.push_back(slot);  // its first slot, for now
      else
        kinds.unite(ids.kind[id], slot);
    }
  });
  ids.kind_values.assign(vc.slots(), 0);
  ids.hub.assign(ids.table.size(), false);
  for (size_t v = 0; v < ids.table.size(); ++v) {
    ids.kind[v] = kinds.find(ids.kind[v]);
    ++ids.kind_values[ids.kind[v]];
    const std::string_view t = ids.table.text(v);
    const uint32_t hv = heavy.find(t, hash_of(t));
    ids.hub[v] = hv != kNone && heavy_records[hv].first > hub;
  }
  return ids;
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

// Pass 4: union-find over identifier values, as lprof's request accumulators: two groups
// join only if they do not conflict (hold different values of one kind). A record goes to
// the group of its finest identifier. Records are given in record order, with their
// identifier values (hubs left out) in parameter order.
class Joiner {
 public:
  Joiner(const IdValues& idv, Grouping& g) : idv_(idv), g_(g), uf_of_(idv.table.size(), kNone) {
    // At most one union-find node per identifier value: reserved once, not grown by
    // doubling (a log of unique request ids has millions).
    const size_t nodes = static_cast<size_t>(
        std::count_if(idv.kind.begin(), idv.kind.end(), [](uint32_t k) { return k != kNone; }));
    for (std::vector<uint32_t>* v : {&value_of_, &next_, &tail_, &g.uf.parent}) v->reserve(nodes);
    if (idv.table.copies())
      g.key_texts.reserve(nodes);
    else
      g.key_names.reserve(nodes);
  }

  void record(uint32_t r, std::vector<uint32_t>& ids) {
    if (ids.empty()) return;
    // The finest identifier first: the record belongs to its group.
    stable_sort_small(ids, [&](uint32_t a, uint32_t b) {
      return idv_.kind_values[idv_.kind[a]] > idv_.kind_values[idv_.kind[b]];
    });
    for (uint32_t v : ids)
      if (uf_of_[v] == kNone) {
        uf_of_[v] = g_.uf.add();
        if (idv_.table.copies())
          g_.key_texts.push_back(idv_.table.handle(v));
        else
          g_.key_names.emplace_back(idv_.table.text(v));
        value_of_.push_back(v);
        next_.push_back(kNone);
        tail_.push_back(uf_of_[v]);
      }
    bool conflict = false;
    for (size_t k = 1; k < ids.size(); ++k) {
      uint32_t a = g_.uf.find(uf_of_[ids[0]]), b = g_.uf.find(uf_of_[ids[k]]);
      if (a == b) continue;
      if (!compatible(a, b)) {
        conflict = true;
        continue;
      }
      g_.uf.unite(a, b);
      const uint32_t root = g_.uf.find(a), other = root == a ? b : a;
      next_[tail_[root]] = other;
      tail_[root] = tail_[other];
    }
    multi_id_records += conflict;
    g_.key[r] = uf_of_[ids[0]];
  }

  uint64_t multi_id_records = 0;  // records whose values conflicted

 private:
  bool compatible(uint32_t a, uint32_t b) const {
    for (uint32_t x = a; x != kNone; x = next_[x])
      for (uint32_t y = b; y != kNone; y = next_[y])
        if (idv_.kind[value_of_[x]] == idv_.kind[value_of_[y]] && value_of_[x] != value_of_[y])
          return false;
    return true;
  }

  const IdValues& idv_;
  Grouping& g_;
  std::vector<uint32_t> uf_of_;
  // The values a group holds (their kinds: idv_.kind): a list through next_ from its root,
  // one entry per union-find node (the value that made it), so no list per value is
  // allocated.
  std::vector<uint32_t> value_of_, next_, tail_;
};

// The join from the messages read again (after pass 3).
uint64_t join_reading(const LogSet& logs, const detail::MessageSource& messages, const Census& vc,
                      const std::vector<bool>& is_id, const IdValues& idv, Grouping& g) {
  Joiner join(idv, g);
  std::vector<uint32_t> ids;
  each_record_params(logs, messages, [&](uint32_t r, uint32_t cluster, const auto& params) {
    ids.clear();
    for (size_t k = 0; k < params.size(); ++k) {
      const std::string_view text = params[k];
      if (!id_like(text) || !is_id[vc.slot_base[cluster] + k]) continue;
      const uint32_t v = idv.table.find(text, hash_of(text));
      if (v == kNone) throw std::logic_error("flows: a message changed between two reads");
      if (idv.hub[v]) continue;
      if (std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
    }
    join.record(r, ids);
  });
  return join.multi_id_records;
}

// An exact census (never sampled) kept every record's (value, slot) pairs and every
// value: kinds, hubs and the join need no more reading.
IdValues identifier_values_held(Census& vc, const std::vector<bool>& is_id, uint64_t hub) {
  IdValues ids(false);
  const size_t n = vc.values.size();
  UnionFind kinds;  // slots of one kind are united
  for (size_t s = 0; s < vc.slots(); ++s) kinds.add();
  ids.kind.assign(n, kNone);
  for (size_t v = 0; v < n; ++v)
    for (uint32_t s : vc.slots_of(v))
      if (is_id[s]) ids.kind[v] == kNone ? void(ids.kind[v] = s) : kinds.unite(ids.kind[v], s);
  ids.kind_values.assign(vc.slots(), 0);
  ids.hub.assign(n, false);
  for (size_t v = 0; v < n; ++v) {
    if (ids.kind[v] == kNone) continue;
    ids.kind[v] = kinds.find(ids.kind[v]);
    ++ids.kind_values[ids.kind[v]];
    ids.hub[v] = vc.values[v].records > hub;
  }
  ids.table = std::move(vc.table);
  return ids;
}

uint64_t join_held(const Census& vc, const std::vector<bool>& is_id, const IdValues& idv,
                   Grouping& g) {
  Joiner join(idv, g);
  std::vector<uint32_t> ids;
  vc.rec_values.each_record([&](uint32_t r, std::span<const detail::RecordPair> pairs) {
    ids.clear();
    for (const detail::RecordPair& p : pairs) {
      if (!is_id[p.slot()] || idv.hub[p.value]) continue;
      if (std::find(ids.begin(), ids.end(), p.value) == ids.end()) ids.push_back(p.value);
    }
    join.record(r, ids);
  });
  return join.multi_id_records;
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
std::string shape_slots(const Census& vc, std::vector<bool>& is_id, std::vector<IdSlot>& id_slots) {
  const size_t slots = vc.slots();
  std::vector<std::unordered_map<std::string_view, uint64_t>> prefixes(slots);
  for (size_t v = 0; v < vc.values.size(); ++v)
    if (const std::string_view p = id_prefix(vc.table.text(v)); !p.empty())
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
                          size_t census_cap, FlowSet& out, Grouping& g) {
  const uint64_t hub = std::max<uint64_t>(64, logs.record_count / 100);
  std::vector<bool> is_id;
  {
    Census vc = census_values(logs, messages, copy_values, census_cap);
    out.census_held = vc.most_held;
    is_id = identifier_slots(vc, hub, out.id_slots);
    out.id_values = vc.scaled(vc.values.size());
    uint64_t repeating = 0;
    for (const ParamValue& v : vc.values) repeating += v.records > 1;
    out.id_values_repeating = vc.scaled(repeating);
    // Fewer than 1 value in 20 repeats: a sample, not a log of whole requests.
    out.sampled = out.id_values >= 20 && out.id_values_repeating * 20 < out.id_values;
    if (out.sampled) {
      out.id_slots.clear();
      std::fill(is_id.begin(), is_id.end(), false);
      out.id_shape = shape_slots(vc, is_id, out.id_slots);
    }
    if (out.id_slots.empty()) {
      out.id_source = "none";
      return;
    }
    if (vc.level == 0) {  // exact: every value and pair held, no more reading
      IdValues idv = identifier_values_held(vc, is_id, hub);
      out.id_values_held = static_cast<uint64_t>(
          std::count_if(idv.kind.begin(), idv.kind.end(), [](uint32_t k) { return k != kNone; }));
      // The join reads the records' pairs and the values' texts only: the values' counts
      // and slot lists (about 16 bytes a value; the lookup went at the census's end) are
      // freed before it allocates its union-find.
      std::vector<ParamValue>().swap(vc.values);
      std::vector<uint32_t>().swap(vc.slot_begin);
      std::vector<uint32_t>().swap(vc.value_slots);
      std::vector<uint64_t>().swap(vc.pairs);
      out.multi_id_records += join_held(vc, is_id, idv, g);
      out.id_arena = idv.table.take_arena();  // the groups' names are in it
      if (idv.table.copies()) g.key_arena = &out.id_arena;
    } else {
      // The held values are freed: what follows holds the identifier values only (the
      // sketch and the slots' layout stay: 1 MiB and a few words a slot).
      vc.table = decltype(vc.table)(copy_values);
      std::vector<ParamValue>().swap(vc.values);
      std::vector<uint32_t>().swap(vc.slot_begin);
      std::vector<uint32_t>().swap(vc.value_slots);
      IdValues idv = identifier_values(logs, messages, copy_values, vc, is_id, hub);
      out.id_values_held = idv.table.size();
      out.multi_id_records += join_reading(logs, messages, vc, is_id, idv, g);
      out.id_arena = idv.table.take_arena();
      if (idv.table.copies()) g.key_arena = &out.id_arena;
    }
  }
  out.id_source = out.sampled ? "shape" : "auto";
}

}  // namespace detail
}  // namespace snailtrail::logs
