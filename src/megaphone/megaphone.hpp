// Megaphone: latency-conscious state migration on the dataflow runtime (thesis ch. 5,
// docs/MEGAPHONE.md). A stateful operator whose state is split into 2^k bins; which
// worker holds which bin is a configuration that changes over (logical) time through a
// control stream of (time, bin, worker) updates, and moving a bin moves its state and
// its pending records through the runtime's exchange channels (also between processes).
//
//   auto control = ...;  // Stream<ControlUpdate>, e.g. control_source(...) below
//   auto out = megaphone::stateful_unary<State, Out>(
//       records, control, "count", Options{.log_bins = 12},
//       [](const T& r) { return hash_of(r); },                      // exchange value
//       [](Time t, T& r, State& s, Later<T>& later, Output<Out>& out) {...},  // fold
//       [](uint32_t bin, State& s) {...});                          // done (input complete)
//
// * The bin of a record is the high log_bins bits of its exchange value (thesis §5.2.2),
//   so a hash spreads keys evenly; a dense key space can use rotr(key, k) instead.
// * Initially bin b is on worker b % W (W: all workers of all processes).
// * fold runs for each record once the frontier has passed its time, in timestamp order,
//   with the state of the record's bin; `later.schedule(t2, r2)` (t2 > t) queues a
//   record of the same bin for time t2 (the extended notificator of §5.2.3.2): it is
//   folded at t2 on whichever worker holds the bin then, migrations included.
// * State is serialized with Codec<State> (trivially copyable types, std::vector and
//   std::unordered_map of those are provided; specialize it for others), and pending
//   records must be trivially copyable (they cross processes as bytes).
//
// The operators (§5.1.3): F routes each record by the configuration in force at its time
// and holds records whose time the control frontier has not passed; M (F's migration
// half, a separate operator with the same control input) holds a capability at every
// configuration time t, and once the output frontier of S reaches t it serializes the
// state and pending records of the bins leaving its worker and sends them at time t; S
// keeps the bins of its worker, installs arriving state immediately and folds records
// in timestamp order. F and M share S's bins through a pointer (same worker thread).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flow/operators.hpp"

namespace snailtrail::megaphone {

using flow::Capability;
using flow::Input;
using flow::kTimeMax;
using flow::Output;
using flow::Stream;
using flow::Time;
using flow::Worker;

// A configuration update: from `time` on, `bin` is on `worker`.
struct ControlUpdate {
  Time time = 0;
  uint32_t bin = 0;
  uint32_t worker = 0;
};

// A record on its way from F to S (or a control update to every F/M): its bin and the
// worker it goes to.
template <class T>
struct Routed {
  T rec;
  uint32_t bin = 0;
  uint32_t dest = 0;
};

// Serialized state travels in fixed-size chunks (trivially copyable, so that they cross
// processes as any record does); the chunks of one bin arrive in order (FIFO channels).
inline constexpr size_t kChunkBytes = 4080;
struct StateChunk {
  uint32_t bin = 0, dest = 0;
  uint32_t len = 0;   // bytes used
  uint32_t last = 0;  // 1 on the bin's last chunk
  char bytes[kChunkBytes];
};

inline uint32_t bin_of(uint64_t exchange_value, uint32_t log_bins) {
  return log_bins == 0 ? 0 : static_cast<uint32_t>(exchange_value >> (64 - log_bins));
}
inline uint32_t initial_owner(uint32_t bin, uint32_t workers) {
  return bin % workers;
}

// route_keys(W)[d]: a key that the runtime's exchange sends to worker d (worker_of is a
// fixed function of the key, so the smallest such key is found by trying 0, 1, 2, ...).
inline std::vector<uint64_t> route_keys(uint32_t workers) {
  std::vector<uint64_t> keys(workers, 0);
  std::vector<bool> found(workers, false);
  uint32_t left = workers;
  for (uint64_t k = 0; left > 0; ++k) {
    const uint32_t d = flow::worker_of(k, workers);
    if (!found[d]) {
      found[d] = true;
      keys[d] = k;
      --left;
    }
  }
  return keys;
}

// ---- serialization ----

template <class S, class Enable = void>
struct Codec {
  static_assert(std::is_trivially_copyable_v<S>,
                "specialize megaphone::Codec<State> for this state type");
  static void encode(const S& s, std::vector<char>& out) {
    const auto* p = reinterpret_cast<const char*>(&s);
    out.insert(out.end(), p, p + sizeof(S));
  }
  static void decode(const char*& p, const char* end, S& s) {
    if (static_cast<size_t>(end - p) < sizeof(S))
      throw std::runtime_error("megaphone: truncated state");
    std::memcpy(static_cast<void*>(&s), p, sizeof(S));
    p += sizeof(S);
  }
};

namespace detail {
inline void put_u64(std::vector<char>& out, uint64_t v) {
  const auto* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + 8);
}
inline uint64_t get_u64(const char*& p, const char* end) {
  if (end - p < 8) throw std::runtime_error("megaphone: truncated state");
  uint64_t v;
  std::memcpy(&v, p, 8);
  p += 8;
  return v;
}
}  // namespace detail

template <class P>
struct Codec<std::vector<P>, std::enable_if_t<std::is_trivially_copyable_v<P>>> {
  static void encode(const std::vector<P>& s, std::vector<char>& out) {
    detail::put_u64(out, s.size());
    const auto* p = reinterpret_cast<const char*>(s.data());
    out.insert(out.end(), p, p + s.size() * sizeof(P));
  }
  static void decode(const char*& p, const char* end, std::vector<P>& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) / sizeof(P) < n)
      throw std::runtime_error("megaphone: truncated state");
    s.resize(n);
    if (n) std::memcpy(static_cast<void*>(s.data()), p, n * sizeof(P));
    p += n * sizeof(P);
  }
};

template <class K, class V>
struct Codec<std::unordered_map<K, V>,
             std::enable_if_t<std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V>>> {
  static void encode(const std::unordered_map<K, V>& s, std::vector<char>& out) {
    detail::put_u64(out, s.size());
    const size_t at = out.size();
    out.resize(at + s.size() * (sizeof(K) + sizeof(V)));
    char* p = out.data() + at;
    for (const auto& [k, v] : s) {
      std::memcpy(p, &k, sizeof(K));
      std::memcpy(p + sizeof(K), &v, sizeof(V));
      p += sizeof(K) + sizeof(V);
    }
  }
  static void decode(const char*& p, const char* end, std::unordered_map<K, V>& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) / (sizeof(K) + sizeof(V)) < n)
      throw std::runtime_error("megaphone: truncated state");
    s.clear();
    s.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      K k;
      V v;
      std::memcpy(static_cast<void*>(&k), p, sizeof(K));
      std::memcpy(static_cast<void*>(&v), p + sizeof(K), sizeof(V));
      p += sizeof(K) + sizeof(V);
      s.emplace(k, v);
    }
  }
};

// ---- options and observation ----

struct Options {
  uint32_t log_bins = 12;  // 2^log_bins bins
  // Called on the sending worker for every bin it migrates away (bytes serialized).
  std::function<void(uint32_t bin, uint64_t bytes)> on_bin_sent;
  // The same, with the configuration time the bin moves at (attributes bytes sent on any
  // process to the migration whose step had that time).
  std::function<void(Time t, uint32_t bin, uint64_t bytes)> on_bin_sent_at;
  // The initial configuration (bin -> worker, 2^log_bins entries, every worker < W);
  // empty: bin b on worker b % W. The closed loop (src/loop) starts on a subset.
  std::vector<uint32_t> initial;
};

// What the migrating operator calls for each bin leaving its worker: both of Options'
// callbacks.
inline std::function<void(Time, uint32_t, uint64_t)> bin_sent_callback(const Options& o) {
  return [a = o.on_bin_sent, b = o.on_bin_sent_at](Time t, uint32_t bin, uint64_t n) {
    if (a) a(bin, n);
    if (b) b(t, bin, n);
  };
}

// Pending records of a bin (the extended notificator): fold schedules them.
template <class T>
class Later {
 public:
  // Folds `rec` into the current record's bin at time t2 > the current time.
  void schedule(Time t2, T rec) {
    if (t2 <= now_) throw std::logic_error("megaphone: Later::schedule needs a later time");
    items_.push_back({t2, Routed<T>{std::move(rec), bin_, 0}});
  }
  Time now() const { return now_; }
  uint32_t bin() const { return bin_; }

  // Runtime side.
  void reset(Time now, uint32_t bin) {
    now_ = now;
    bin_ = bin;
  }
  std::vector<std::pair<Time, Routed<T>>>& items() { return items_; }

 private:
  Time now_ = 0;
  uint32_t bin_ = 0;
  std::vector<std::pair<Time, Routed<T>>> items_;
};

// The bins of one worker, shared by its F, M and S operators.
template <class State, class T>
struct BinStore {
  std::vector<State> states;
  std::vector<uint8_t> owned;
  // Records not yet folded, by time (received, or scheduled through Later).
  std::map<Time, std::vector<Routed<T>>> pending;
  flow::Notificator notes;
  std::shared_ptr<const flow::ProbeState> s_probe;  // S's output frontier on this worker
};

// ---- the control stream ----

// Every F and M gets every update: W copies, one to each worker.
inline Stream<Routed<ControlUpdate>> broadcast_control(const Stream<ControlUpdate>& control) {
  const uint32_t W = control.worker().peers();
  return control.template unary<Routed<ControlUpdate>>(
      flow::Pipeline{}, "control-broadcast",
      [W](Input<ControlUpdate>& in, Output<Routed<ControlUpdate>>& out) {
        in.for_each([&](Time t, std::vector<ControlUpdate>& data) {
          for (const ControlUpdate& u : data)
            for (uint32_t d = 0; d < W; ++d) out.give(t, Routed<ControlUpdate>{u, u.bin, d});
        });
      });
}

// ---- the operators ----

template <class State, class Out, class T, class ExchFn, class Fold, class Done>
Stream<Out> stateful_unary(const Stream<T>& input, const Stream<ControlUpdate>& control,
                           const std::string& name, Options opts, ExchFn exch, Fold fold,
                           Done done) {
  static_assert(std::is_trivially_copyable_v<T>, "Megaphone's records must be trivially copyable");
  Worker& w = input.worker();
  const uint32_t W = w.peers();
  const uint32_t log_bins = opts.log_bins;
  const uint32_t B = 1u << log_bins;
  const std::vector<uint64_t> rkeys = route_keys(W);
  if (!opts.initial.empty() && opts.initial.size() != B)
    throw std::invalid_argument("megaphone: the initial configuration needs one worker per bin");
  for (uint32_t x : opts.initial)
    if (x >= W)
      throw std::invalid_argument("megaphone: the initial configuration names worker " +
                                  std::to_string(x) + " of " + std::to_string(W));
  const auto owner0 = [&opts, W](uint32_t b) {
    return opts.initial.empty() ? initial_owner(b, W) : opts.initial[b];
  };
  auto store = std::make_shared<BinStore<State, T>>();
  store->states.resize(B);
  store->owned.assign(B, 0);
  for (uint32_t b = 0; b < B; ++b) store->owned[b] = owner0(b) == w.index();

  auto ctl = broadcast_control(control);
  auto ctl_key = [rkeys](const Routed<ControlUpdate>& r) { return rkeys[r.dest]; };

  // F: routes records by the configuration at their time.
  struct FLogic {
    ExchFn exch;
    uint32_t log_bins;
    std::vector<uint32_t> table;                     // the configuration for every time >= applied
    std::map<Time, std::vector<ControlUpdate>> cfg;  // received, not yet in `table`
    std::map<Time, std::pair<Capability, std::vector<T>>> held;
    std::vector<uint32_t> overlay;
    void route(Time t, std::vector<T>& data, const std::vector<uint32_t>& tab,
               Output<Routed<T>>& out) {
      for (T& r : data) {
        const uint32_t b = bin_of(exch(r), log_bins);
        out.give(t, Routed<T>{r, b, tab[b]});
      }
    }
    void operator()(Input<T>& data, Input<Routed<ControlUpdate>>& control, Output<Routed<T>>& out) {
      control.for_each([&](Time, std::vector<Routed<ControlUpdate>>& us) {
        for (const auto& u : us) cfg[u.rec.time].push_back(u.rec);
      });
      // An update at a time no record still to route precedes (none can arrive before the
      // data frontier, none is held before the first held time) is in force for all of them.
      const Time bound = std::min(data.frontier(), held.empty() ? kTimeMax : held.begin()->first);
      while (!cfg.empty() && cfg.begin()->first <= bound) {
        for (const ControlUpdate& u : cfg.begin()->second) table[u.bin] = u.worker;
        cfg.erase(cfg.begin());
      }
      const Time cf = control.frontier();
      data.for_each([&](Time t, std::vector<T>& recs) {
        if (t < cf && (cfg.empty() || cfg.begin()->first > t) &&
            (held.empty() || held.begin()->first > t)) {
          route(t, recs, table, out);
          return;
        }
        auto [it, fresh] = held.try_emplace(t);
        if (fresh) it->second.first = data.retain(t);
        auto& v = it->second.second;
        v.insert(v.end(), recs.begin(), recs.end());
      });
      while (!held.empty() && held.begin()->first < cf) {
        auto node = held.extract(held.begin());
        const Time t = node.key();
        if (cfg.empty() || cfg.begin()->first > t) {
          route(t, node.mapped().second, table, out);
        } else {  // updates in (bound, t]: the configuration at t differs from `table`
          overlay = table;
          for (auto it = cfg.begin(); it != cfg.end() && it->first <= t; ++it)
            for (const ControlUpdate& u : it->second) overlay[u.bin] = u.worker;
          route(t, node.mapped().second, overlay, out);
        }
      }  // the held capability drops here, in the same round as the records leave
    }
  };
  FLogic fl{exch, log_bins, {}, {}, {}, {}};
  fl.table.resize(B);
  for (uint32_t b = 0; b < B; ++b) fl.table[b] = owner0(b);
  auto routed = flow::binary<Routed<T>>(input, flow::Pipeline{}, ctl, flow::exchange(ctl_key),
                                        name + "-F", std::move(fl));

  // M: migrates the bins that leave this worker once S's output frontier reaches their time.
  struct MLogic {
    std::shared_ptr<BinStore<State, T>> store;
    uint32_t me, op;
    std::vector<uint32_t> owner;
    std::map<Time, std::pair<Capability, std::vector<ControlUpdate>>> pending;
    std::function<void(Time, uint32_t, uint64_t)> on_sent;
    std::vector<char> buf;
    void operator()(Input<Routed<ControlUpdate>>& control, Output<StateChunk>& out) {
      control.for_each([&](Time t, std::vector<Routed<ControlUpdate>>& us) {
        auto [it, fresh] = pending.try_emplace(t);
        if (fresh) it->second.first = control.retain(t);
        for (const auto& u : us) it->second.second.push_back(u.rec);
      });
      const Time cf = control.frontier();
      const Time sf = store->s_probe ? store->s_probe->frontier : 0;
      while (!pending.empty() && pending.begin()->first < cf && pending.begin()->first <= sf) {
        auto node = pending.extract(pending.begin());
        const Time t = node.key();
        flow::Recorder& rec = out.worker().recorder();
        const int64_t t0 = rec.on() ? rec.now() : 0;
        uint64_t chunks = 0;
        // Several updates of one bin at one time: the last one counts (as in F).
        std::unordered_map<uint32_t, uint32_t> to;
        for (const ControlUpdate& u : node.mapped().second) to[u.bin] = u.worker;
        for (const ControlUpdate& u : node.mapped().second) {
          auto it = to.find(u.bin);
          if (it == to.end()) continue;
          const uint32_t from = owner[u.bin], dest = it->second;
          to.erase(it);
          owner[u.bin] = dest;
          if (from == me && dest != me) chunks += send_bin(t, u.bin, dest, out);
        }
        if (chunks > 0)  // the state's serialization: carved out of M's processing
          rec.carve(t0, rec.now(), snailtrail::ActivityType::serialization,
                    static_cast<int64_t>(chunks));
      }
    }
    uint64_t send_bin(Time t, uint32_t bin, uint32_t dest, Output<StateChunk>& out) {
      BinStore<State, T>& s = *store;
      if (!s.owned[bin]) throw std::logic_error("megaphone: migrating a bin this worker lacks");
      buf.clear();
      Codec<State>::encode(s.states[bin], buf);
      s.states[bin] = State{};
      s.owned[bin] = 0;
      // Pending records of the bin (all at times >= t: those before t are folded).
      std::vector<std::pair<Time, T>> items;
      for (auto it = s.pending.lower_bound(t); it != s.pending.end(); ++it) {
        auto& v = it->second;
        auto keep =
            std::partition(v.begin(), v.end(), [bin](const Routed<T>& r) { return r.bin != bin; });
        for (auto i = keep; i != v.end(); ++i) items.emplace_back(it->first, i->rec);
        v.erase(keep, v.end());
      }
      detail::put_u64(buf, items.size());
      const auto* ip = reinterpret_cast<const char*>(items.data());
      buf.insert(buf.end(), ip, ip + items.size() * sizeof(items[0]));
      if (on_sent) on_sent(t, bin, buf.size());
      uint64_t n = 0;
      size_t at = 0;
      do {
        StateChunk c;
        c.bin = bin;
        c.dest = dest;
        c.len = static_cast<uint32_t>(std::min(kChunkBytes, buf.size() - at));
        std::memcpy(c.bytes, buf.data() + at, c.len);
        at += c.len;
        c.last = at == buf.size();
        out.give(t, c);
        ++n;
      } while (at < buf.size());
      buf.clear();
      buf.shrink_to_fit();
      return n;
    }
  };
  const uint32_t m_op_id = w.operator_names().size();  // the id add_operator gives next
  MLogic ml{store, w.index(), m_op_id, {}, {}, bin_sent_callback(opts), {}};
  ml.owner.resize(B);
  for (uint32_t b = 0; b < B; ++b) ml.owner[b] = owner0(b);
  auto chunks = ctl.template unary<StateChunk>(flow::exchange(ctl_key), name + "-M", std::move(ml));

  // S: installs arriving bins, folds records of each time once the frontier passes it.
  struct SLogic {
    std::shared_ptr<BinStore<State, T>> store;
    Fold fold;
    Done done;
    uint32_t op;
    std::unordered_map<uint32_t, std::vector<char>> partial;
    Later<T> later;
    bool finished = false;
    void operator()(Input<Routed<T>>& data, Input<StateChunk>& state, Output<Out>& out) {
      BinStore<State, T>& s = *store;
      flow::Recorder& rec = out.worker().recorder();
      state.for_each([&](Time t, std::vector<StateChunk>& cs) {
        const int64_t t0 = rec.on() ? rec.now() : 0;
        uint64_t installed = 0;
        for (const StateChunk& c : cs) {
          auto& b = partial[c.bin];
          b.insert(b.end(), c.bytes, c.bytes + c.len);
          if (!c.last) continue;
          install(t, c.bin, b, state);
          partial.erase(c.bin);
          ++installed;
        }
        if (installed > 0)  // installing migrated state, carved out of S's processing
          rec.carve(t0, rec.now(), snailtrail::ActivityType::deserialization,
                    static_cast<int64_t>(cs.size()));
      });
      data.for_each([&](Time t, std::vector<Routed<T>>& recs) {
        auto [it, fresh] = s.pending.try_emplace(t);
        if (fresh || it->second.empty()) s.notes.notify_at(data.retain(t));
        if (it->second.empty())
          it->second.swap(recs);
        else
          it->second.insert(it->second.end(), recs.begin(), recs.end());
      });
      const Time f = std::min(data.frontier(), state.frontier());
      s.notes.for_each(f, [&](Capability& cap) {
        const Time t = cap.time();
        auto it = s.pending.find(t);
        if (it == s.pending.end()) return;
        std::vector<Routed<T>> recs = std::move(it->second);
        s.pending.erase(it);
        for (Routed<T>& r : recs) {
          if (!s.owned[r.bin])
            throw std::logic_error("megaphone: a record of bin " + std::to_string(r.bin) +
                                   " reached a worker without the bin");
          later.reset(t, r.bin);
          fold(t, r.rec, s.states[r.bin], later, out);
          for (auto& [t2, item] : later.items()) {
            auto [pit, pfresh] = s.pending.try_emplace(t2);
            if (pfresh || pit->second.empty()) s.notes.notify_at(cap.delayed(t2));
            pit->second.push_back(item);
          }
          later.items().clear();
        }
      });
      if (!finished && s.pending.empty() && f == kTimeMax) {
        finished = true;
        for (uint32_t b = 0; b < s.owned.size(); ++b)
          if (s.owned[b]) done(b, s.states[b]);
      }
    }
    void install(Time t, uint32_t bin, const std::vector<char>& bytes, Input<StateChunk>& in) {
      BinStore<State, T>& s = *store;
      if (s.owned[bin]) throw std::logic_error("megaphone: a bin arrived twice");
      const char* p = bytes.data();
      const char* end = p + bytes.size();
      Codec<State>::decode(p, end, s.states[bin]);
      s.owned[bin] = 1;
      const uint64_t n = detail::get_u64(p, end);
      using Item = std::pair<Time, T>;
      if (static_cast<uint64_t>(end - p) / sizeof(Item) < n)
        throw std::runtime_error("megaphone: truncated pending records");
      for (uint64_t i = 0; i < n; ++i) {
        Item item;
        std::memcpy(static_cast<void*>(&item), p + i * sizeof(Item), sizeof(Item));
        if (item.first < t) throw std::logic_error("megaphone: a migrated record is late");
        auto [it, fresh] = s.pending.try_emplace(item.first);
        if (fresh || it->second.empty()) s.notes.notify_at(in.retain(item.first));
        it->second.push_back(Routed<T>{item.second, bin, 0});
      }
    }
  };
  auto dest_key = [rkeys](const Routed<T>& r) { return rkeys[r.dest]; };
  auto chunk_key = [rkeys](const StateChunk& c) { return rkeys[c.dest]; };
  const uint32_t s_op_id = w.operator_names().size();
  auto result =
      flow::binary<Out>(routed, flow::exchange(dest_key), chunks, flow::exchange(chunk_key), name,
                        SLogic{store, std::move(fold), std::move(done), s_op_id, {}, {}});
  store->s_probe = flow::probe(result, name + "-S-probe", [](Time, Time) {});
  return result;
}

// The same computation on a plain, non-migratable operator (the overhead baseline,
// `--native`): records go to worker dest(record, W) and are folded in timestamp order
// into the worker's one State; done(state) when the input is complete.
template <class State, class Out, class T, class DestFn, class Fold, class Done>
Stream<Out> native_unary(const Stream<T>& input, const std::string& name, DestFn dest, Fold fold,
                         Done done) {
  Worker& w = input.worker();
  const uint32_t W = w.peers();
  const std::vector<uint64_t> rkeys = route_keys(W);
  struct Logic {
    Fold fold;
    Done done;
    State state{};
    std::map<Time, std::vector<T>> pending;
    flow::Notificator notes;
    bool finished = false;
    void operator()(Input<T>& in, Output<Out>& out) {
      in.for_each([&](Time t, std::vector<T>& data) {
        auto [it, fresh] = pending.try_emplace(t);
        if (fresh) notes.notify_at(in.retain(t));
        if (it->second.empty())
          it->second.swap(data);
        else
          it->second.insert(it->second.end(), data.begin(), data.end());
      });
      notes.for_each(in.frontier(), [&](Capability& cap) {
        auto it = pending.find(cap.time());
        if (it == pending.end()) return;
        for (T& r : it->second) fold(cap.time(), r, state, out);
        pending.erase(it);
      });
      if (!finished && pending.empty() && in.frontier() == kTimeMax) {
        finished = true;
        done(state);
      }
    }
  };
  auto key = [rkeys, dest, W](const T& r) { return rkeys[dest(r, W)]; };
  return input.template unary<Out>(flow::exchange(key), name,
                                   Logic{std::move(fold), std::move(done), {}, {}, {}});
}

// ---- more codecs: ordered containers, deques, pairs and vectors of non-trivial types ----

template <class K, class V>
struct Codec<std::pair<K, V>, std::enable_if_t<!std::is_trivially_copyable_v<std::pair<K, V>>>> {
  static void encode(const std::pair<K, V>& s, std::vector<char>& out) {
    Codec<K>::encode(s.first, out);
    Codec<V>::encode(s.second, out);
  }
  static void decode(const char*& p, const char* end, std::pair<K, V>& s) {
    Codec<K>::decode(p, end, s.first);
    Codec<V>::decode(p, end, s.second);
  }
};

namespace detail {
// A sequence container (element by element through Codec<P>): count, then the elements.
template <class C>
struct SeqCodec {
  static void encode(const C& s, std::vector<char>& out) {
    put_u64(out, s.size());
    for (const auto& x : s) Codec<typename C::value_type>::encode(x, out);
  }
  static void decode(const char*& p, const char* end, C& s) {
    const uint64_t n = get_u64(p, end);
    if (static_cast<uint64_t>(end - p) < n)  // every element takes at least one byte
      throw std::runtime_error("megaphone: truncated state");
    s.clear();
    for (uint64_t i = 0; i < n; ++i) {
      typename C::value_type x{};
      Codec<typename C::value_type>::decode(p, end, x);
      s.insert(s.end(), std::move(x));
    }
  }
};
// An ordered map or set, element by element (inserted in order: hinted, linear).
template <class C, class Elem>
struct TreeCodec {
  static void encode(const C& s, std::vector<char>& out) {
    put_u64(out, s.size());
    for (const auto& x : s) Codec<Elem>::encode(Elem(x), out);
  }
  static void decode(const char*& p, const char* end, C& s) {
    const uint64_t n = get_u64(p, end);
    if (static_cast<uint64_t>(end - p) < n) throw std::runtime_error("megaphone: truncated state");
    s.clear();
    for (uint64_t i = 0; i < n; ++i) {
      Elem x{};
      Codec<Elem>::decode(p, end, x);
      s.insert(s.end(), std::move(x));
    }
  }
};
}  // namespace detail

template <class P>
struct Codec<std::vector<P>, std::enable_if_t<!std::is_trivially_copyable_v<P>>>
    : detail::SeqCodec<std::vector<P>> {};
template <class P>
struct Codec<std::deque<P>> : detail::SeqCodec<std::deque<P>> {};
template <>
struct Codec<std::string> {
  static void encode(const std::string& s, std::vector<char>& out) {
    detail::put_u64(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  static void decode(const char*& p, const char* end, std::string& s) {
    const uint64_t n = detail::get_u64(p, end);
    if (static_cast<uint64_t>(end - p) < n) throw std::runtime_error("megaphone: truncated state");
    s.assign(p, n);
    p += n;
  }
};
template <class K, class V>
struct Codec<std::map<K, V>> : detail::TreeCodec<std::map<K, V>, std::pair<K, V>> {};
template <class K>
struct Codec<std::set<K>> : detail::TreeCodec<std::set<K>, K> {};

// ---- the binary operator ----
//
//   auto out = megaphone::stateful_binary<State, Out>(
//       a, b, control, "join", Options{.log_bins = 8},
//       [](const A& r) { return hash_of(r.key); },   // exchange value of an A record
//       [](const B& r) { return hash_of(r.key); },   // ... of a B record (same bins)
//       [](Time t, uint32_t bin, std::vector<A>& as, std::vector<B>& bs, State& s,
//          Wake& wake, Output<Out>& out) {...},        // fold: one (time, bin) at a time
//       [](uint32_t bin, State& s) {...});             // done (both inputs complete)
//
// Two record inputs share one set of bins and one State per bin (a join keeps both
// sides of a key in one bin). The fold is called once per (time, bin) that has records
// of either input at that time, or a wake-up for it — with all of them at once (the
// bin's records of the time, in arrival order; sort them if the order matters), in
// timestamp order per bin, on the worker the configuration names for (time, bin).
// `wake.at(t2)` (t2 > t) calls the fold for the bin at t2 even without records (a timer:
// the State says what is due); pending records and wake-ups travel with their bin. F, M
// and S are the unary operator's (above); the two inputs are first merged into one
// stream of Either<A, B> (a pipeline operator NAME-in), routed by one F.

// One record of either input (trivially copyable, so it crosses processes as bytes).
template <class A, class B>
struct Either {
  static constexpr size_t kSize = sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B);
  static constexpr size_t kAlign = alignof(A) > alignof(B) ? alignof(A) : alignof(B);
  alignas(kAlign) unsigned char raw[kSize];
  uint8_t which;  // 0: an A, 1: a B
  static Either of_a(const A& a) {
    Either e{};
    std::memcpy(static_cast<void*>(e.raw), &a, sizeof(A));
    e.which = 0;
    return e;
  }
  static Either of_b(const B& b) {
    Either e{};
    std::memcpy(static_cast<void*>(e.raw), &b, sizeof(B));
    e.which = 1;
    return e;
  }
  A a() const {
    A x;
    std::memcpy(static_cast<void*>(&x), raw, sizeof(A));
    return x;
  }
  B b() const {
    B x;
    std::memcpy(static_cast<void*>(&x), raw, sizeof(B));
    return x;
  }
};

// Wake-ups of the bin being folded (the fold's notificator).
class Wake {
 public:
  // Calls the fold of the current bin at t2 > the current time (once per (t2, bin),
  // however often it is asked for).
  void at(Time t2) {
    if (t2 <= now_) throw std::logic_error("megaphone: Wake::at needs a later time");
    items_.push_back(t2);
  }
  Time now() const { return now_; }
  uint32_t bin() const { return bin_; }

  // Runtime side.
  void reset(Time now, uint32_t bin) {
    now_ = now;
    bin_ = bin;
  }
  std::vector<Time>& items() { return items_; }

 private:
  Time now_ = 0;
  uint32_t bin_ = 0;
  std::vector<Time> items_;
};

namespace detail {

// F for any record type (the same logic as stateful_unary's F): routes each record by the
// configuration in force at its time, holding those whose time the control frontier has
// not passed.
template <class T, class ExchFn>
struct Router {
  ExchFn exch;
  uint32_t log_bins;
  std::vector<uint32_t> table;
  std::map<Time, std::vector<ControlUpdate>> cfg;
  std::map<Time, std::pair<Capability, std::vector<T>>> held;
  std::vector<uint32_t> overlay;
  void route(Time t, std::vector<T>& data, const std::vector<uint32_t>& tab,
             Output<Routed<T>>& out) {
    for (T& r : data) {
      const uint32_t b = bin_of(exch(r), log_bins);
      out.give(t, Routed<T>{r, b, tab[b]});
    }
  }
  void operator()(Input<T>& data, Input<Routed<ControlUpdate>>& control, Output<Routed<T>>& out) {
    control.for_each([&](Time, std::vector<Routed<ControlUpdate>>& us) {
      for (const auto& u : us) cfg[u.rec.time].push_back(u.rec);
    });
    const Time bound = std::min(data.frontier(), held.empty() ? kTimeMax : held.begin()->first);
    while (!cfg.empty() && cfg.begin()->first <= bound) {
      for (const ControlUpdate& u : cfg.begin()->second) table[u.bin] = u.worker;
      cfg.erase(cfg.begin());
    }
    const Time cf = control.frontier();
    data.for_each([&](Time t, std::vector<T>& recs) {
      if (t < cf && (cfg.empty() || cfg.begin()->first > t) &&
          (held.empty() || held.begin()->first > t)) {
        route(t, recs, table, out);
        return;
      }
      auto [it, fresh] = held.try_emplace(t);
      if (fresh) it->second.first = data.retain(t);
      auto& v = it->second.second;
      v.insert(v.end(), recs.begin(), recs.end());
    });
    while (!held.empty() && held.begin()->first < cf) {
      auto node = held.extract(held.begin());
      const Time t = node.key();
      if (cfg.empty() || cfg.begin()->first > t) {
        route(t, node.mapped().second, table, out);
      } else {
        overlay = table;
        for (auto it = cfg.begin(); it != cfg.end() && it->first <= t; ++it)
          for (const ControlUpdate& u : it->second) overlay[u.bin] = u.worker;
        route(t, node.mapped().second, overlay, out);
      }
    }
  }
};

// The bins of one worker for stateful_binary: states, and per time the records not yet
// folded and the bins to wake.
template <class State, class T>
struct BatchStore {
  struct Batch {
    std::vector<Routed<T>> recs;
    std::vector<uint32_t> wakes;
  };
  std::vector<State> states;
  std::vector<uint8_t> owned;
  std::map<Time, Batch> pending;
  // Indexes of `pending` for sending a bin in time proportional to what it takes (not to
  // every pending wake-up of the worker): the times whose batch has records, and per bin
  // the times with a wake-up of it.
  std::set<Time> rec_times;
  std::vector<std::set<Time>> wake_times;
  flow::Notificator notes;
  std::shared_ptr<const flow::ProbeState> s_probe;
};

}  // namespace detail

template <class State, class Out, class A, class B, class ExchA, class ExchB, class Fold,
          class Done>
Stream<Out> stateful_binary(const Stream<A>& a, const Stream<B>& b,
                            const Stream<ControlUpdate>& control, const std::string& name,
                            Options opts, ExchA exch_a, ExchB exch_b, Fold fold, Done done) {
  static_assert(std::is_trivially_copyable_v<A> && std::is_trivially_copyable_v<B>,
                "Megaphone's records must be trivially copyable");
  using E = Either<A, B>;
  Worker& w = a.worker();
  const uint32_t W = w.peers();
  const uint32_t log_bins = opts.log_bins;
  const uint32_t NB = 1u << log_bins;
  const std::vector<uint64_t> rkeys = route_keys(W);
  using Store = detail::BatchStore<State, E>;
  auto store = std::make_shared<Store>();
  store->states.resize(NB);
  store->owned.assign(NB, 0);
  store->wake_times.resize(NB);
  for (uint32_t bin = 0; bin < NB; ++bin) store->owned[bin] = initial_owner(bin, W) == w.index();

  // Both inputs as one stream (no exchange: F routes).
  auto merged = flow::binary<E>(a, flow::Pipeline{}, b, flow::Pipeline{}, name + "-in",
                                [](Input<A>& ia, Input<B>& ib, Output<E>& out) {
                                  ia.for_each([&](Time t, std::vector<A>& v) {
                                    for (const A& r : v) out.give(t, E::of_a(r));
                                  });
                                  ib.for_each([&](Time t, std::vector<B>& v) {
                                    for (const B& r : v) out.give(t, E::of_b(r));
                                  });
                                });

  auto ctl = broadcast_control(control);
  auto ctl_key = [rkeys](const Routed<ControlUpdate>& r) { return rkeys[r.dest]; };
  auto exch = [exch_a, exch_b](const E& e) -> uint64_t {
    return e.which == 0 ? exch_a(e.a()) : exch_b(e.b());
  };
  detail::Router<E, decltype(exch)> fl{exch, log_bins, {}, {}, {}, {}};
  fl.table.resize(NB);
  for (uint32_t bin = 0; bin < NB; ++bin) fl.table[bin] = initial_owner(bin, W);
  auto routed = flow::binary<Routed<E>>(merged, flow::Pipeline{}, ctl, flow::exchange(ctl_key),
                                        name + "-F", std::move(fl));

  // M: as stateful_unary's, with the bin's pending records and wake-ups.
  struct MLogic {
    std::shared_ptr<Store> store;
    uint32_t me;
    std::vector<uint32_t> owner;
    std::map<Time, std::pair<Capability, std::vector<ControlUpdate>>> pending;
    std::function<void(Time, uint32_t, uint64_t)> on_sent;
    std::vector<char> buf;
    void operator()(Input<Routed<ControlUpdate>>& control, Output<StateChunk>& out) {
      control.for_each([&](Time t, std::vector<Routed<ControlUpdate>>& us) {
        auto [it, fresh] = pending.try_emplace(t);
        if (fresh) it->second.first = control.retain(t);
        for (const auto& u : us) it->second.second.push_back(u.rec);
      });
      const Time cf = control.frontier();
      const Time sf = store->s_probe ? store->s_probe->frontier : 0;
      while (!pending.empty() && pending.begin()->first < cf && pending.begin()->first <= sf) {
        auto node = pending.extract(pending.begin());
        const Time t = node.key();
        flow::Recorder& rec = out.worker().recorder();
        const int64_t t0 = rec.on() ? rec.now() : 0;
        uint64_t chunks = 0;
        std::unordered_map<uint32_t, uint32_t> to;
        for (const ControlUpdate& u : node.mapped().second) to[u.bin] = u.worker;
        for (const ControlUpdate& u : node.mapped().second) {
          auto it = to.find(u.bin);
          if (it == to.end()) continue;
          const uint32_t from = owner[u.bin], dest = it->second;
          to.erase(it);
          owner[u.bin] = dest;
          if (from == me && dest != me) chunks += send_bin(t, u.bin, dest, out);
        }
        if (chunks > 0)
          rec.carve(t0, rec.now(), snailtrail::ActivityType::serialization,
                    static_cast<int64_t>(chunks));
      }
    }
    uint64_t send_bin(Time t, uint32_t bin, uint32_t dest, Output<StateChunk>& out) {
      Store& s = *store;
      if (!s.owned[bin]) throw std::logic_error("megaphone: migrating a bin this worker lacks");
      buf.clear();
      Codec<State>::encode(s.states[bin], buf);
      s.states[bin] = State{};
      s.owned[bin] = 0;
      // Pending records and wake-ups of the bin (all at times >= t: the times before t
      // are folded), found through the indexes.
      std::vector<std::pair<Time, E>> items;
      std::vector<Time> wakes;
      for (auto rt = s.rec_times.lower_bound(t); rt != s.rec_times.end(); ++rt) {
        auto it = s.pending.find(*rt);
        if (it == s.pending.end()) continue;
        auto& v = it->second.recs;
        auto keep =
            std::partition(v.begin(), v.end(), [bin](const Routed<E>& r) { return r.bin != bin; });
        for (auto i = keep; i != v.end(); ++i) items.emplace_back(it->first, i->rec);
        v.erase(keep, v.end());
      }
      for (Time tw : s.wake_times[bin]) {
        auto it = s.pending.find(tw);
        if (it == s.pending.end() || tw < t) continue;
        auto& wk = it->second.wakes;
        wk.erase(std::remove(wk.begin(), wk.end(), bin), wk.end());
        wakes.push_back(tw);
      }
      s.wake_times[bin].clear();
      detail::put_u64(buf, items.size());
      const auto* ip = reinterpret_cast<const char*>(items.data());
      buf.insert(buf.end(), ip, ip + items.size() * sizeof(items[0]));
      Codec<std::vector<Time>>::encode(wakes, buf);
      if (on_sent) on_sent(t, bin, buf.size());
      uint64_t n = 0;
      size_t at = 0;
      do {
        StateChunk c;
        c.bin = bin;
        c.dest = dest;
        c.len = static_cast<uint32_t>(std::min(kChunkBytes, buf.size() - at));
        std::memcpy(c.bytes, buf.data() + at, c.len);
        at += c.len;
        c.last = at == buf.size();
        out.give(t, c);
        ++n;
      } while (at < buf.size());
      buf.clear();
      buf.shrink_to_fit();
      return n;
    }
  };
  MLogic ml{store, w.index(), {}, {}, bin_sent_callback(opts), {}};
  ml.owner.resize(NB);
  for (uint32_t bin = 0; bin < NB; ++bin) ml.owner[bin] = initial_owner(bin, W);
  auto chunks = ctl.template unary<StateChunk>(flow::exchange(ctl_key), name + "-M", std::move(ml));

  // S: installs arriving bins; folds each (time, bin) once the frontier passes the time.
  struct SLogic {
    std::shared_ptr<Store> store;
    Fold fold;
    Done done;
    std::unordered_map<uint32_t, std::vector<char>> partial;
    Wake wake;
    std::vector<A> as;
    std::vector<B> bs;
    bool finished = false;
    typename Store::Batch& at(Time t, const std::function<Capability()>& cap) {
      auto [it, fresh] = store->pending.try_emplace(t);
      if (fresh) store->notes.notify_at(cap());
      return it->second;
    }
    void operator()(Input<Routed<E>>& data, Input<StateChunk>& state, Output<Out>& out) {
      Store& s = *store;
      flow::Recorder& rec = out.worker().recorder();
      state.for_each([&](Time t, std::vector<StateChunk>& cs) {
        const int64_t t0 = rec.on() ? rec.now() : 0;
        uint64_t installed = 0;
        for (const StateChunk& c : cs) {
          auto& buf = partial[c.bin];
          buf.insert(buf.end(), c.bytes, c.bytes + c.len);
          if (!c.last) continue;
          install(t, c.bin, buf, state);
          partial.erase(c.bin);
          ++installed;
        }
        if (installed > 0)
          rec.carve(t0, rec.now(), snailtrail::ActivityType::deserialization,
                    static_cast<int64_t>(cs.size()));
      });
      data.for_each([&](Time t, std::vector<Routed<E>>& recs) {
        auto& batch = at(t, [&] { return data.retain(t); });
        s.rec_times.insert(t);
        if (batch.recs.empty())
          batch.recs.swap(recs);
        else
          batch.recs.insert(batch.recs.end(), recs.begin(), recs.end());
      });
      const Time f = std::min(data.frontier(), state.frontier());
      s.notes.for_each(f, [&](Capability& cap) {
        const Time t = cap.time();
        auto it = s.pending.find(t);
        if (it == s.pending.end()) return;
        typename Store::Batch batch = std::move(it->second);
        s.pending.erase(it);
        s.rec_times.erase(t);
        std::stable_sort(batch.recs.begin(), batch.recs.end(),
                         [](const Routed<E>& x, const Routed<E>& y) { return x.bin < y.bin; });
        std::sort(batch.wakes.begin(), batch.wakes.end());
        batch.wakes.erase(std::unique(batch.wakes.begin(), batch.wakes.end()), batch.wakes.end());
        for (uint32_t bin : batch.wakes) s.wake_times[bin].erase(t);
        size_t i = 0, j = 0;
        while (i < batch.recs.size() || j < batch.wakes.size()) {
          uint32_t bin = ~0u;
          if (i < batch.recs.size()) bin = batch.recs[i].bin;
          if (j < batch.wakes.size()) bin = std::min(bin, batch.wakes[j]);
          as.clear();
          bs.clear();
          for (; i < batch.recs.size() && batch.recs[i].bin == bin; ++i) {
            const E& e = batch.recs[i].rec;
            if (e.which == 0)
              as.push_back(e.a());
            else
              bs.push_back(e.b());
          }
          if (j < batch.wakes.size() && batch.wakes[j] == bin) ++j;
          if (!s.owned[bin])
            throw std::logic_error("megaphone: bin " + std::to_string(bin) +
                                   " folded on a worker without the bin");
          wake.reset(t, bin);
          fold(t, bin, as, bs, s.states[bin], wake, out);
          for (Time t2 : wake.items()) {
            at(t2, [&] { return cap.delayed(t2); }).wakes.push_back(bin);
            s.wake_times[bin].insert(t2);
          }
          wake.items().clear();
        }
      });
      if (!finished && s.pending.empty() && f == kTimeMax) {
        finished = true;
        for (uint32_t bin = 0; bin < s.owned.size(); ++bin)
          if (s.owned[bin]) done(bin, s.states[bin]);
      }
    }
    void install(Time t, uint32_t bin, const std::vector<char>& bytes, Input<StateChunk>& in) {
      Store& s = *store;
      if (s.owned[bin]) throw std::logic_error("megaphone: a bin arrived twice");
      const char* p = bytes.data();
      const char* end = p + bytes.size();
      Codec<State>::decode(p, end, s.states[bin]);
      s.owned[bin] = 1;
      const uint64_t n = detail::get_u64(p, end);
      using Item = std::pair<Time, E>;
      if (static_cast<uint64_t>(end - p) / sizeof(Item) < n)
        throw std::runtime_error("megaphone: truncated pending records");
      for (uint64_t i = 0; i < n; ++i) {
        Item item;
        std::memcpy(static_cast<void*>(&item), p + i * sizeof(Item), sizeof(Item));
        if (item.first < t) throw std::logic_error("megaphone: a migrated record is late");
        at(item.first, [&] {
          return in.retain(item.first);
        }).recs.push_back(Routed<E>{item.second, bin, 0});
        s.rec_times.insert(item.first);
      }
      p += n * sizeof(Item);
      std::vector<Time> wakes;
      Codec<std::vector<Time>>::decode(p, end, wakes);
      for (Time t2 : wakes) {
        if (t2 < t) throw std::logic_error("megaphone: a migrated wake-up is late");
        at(t2, [&] { return in.retain(t2); }).wakes.push_back(bin);
        s.wake_times[bin].insert(t2);
      }
    }
  };
  auto dest_key = [rkeys](const Routed<E>& r) { return rkeys[r.dest]; };
  auto chunk_key = [rkeys](const StateChunk& c) { return rkeys[c.dest]; };
  auto result =
      flow::binary<Out>(routed, flow::exchange(dest_key), chunks, flow::exchange(chunk_key), name,
                        SLogic{store, std::move(fold), std::move(done), {}, {}, {}, {}, false});
  store->s_probe = flow::probe(result, name + "-S-probe", [](Time, Time) {});
  return result;
}

}  // namespace snailtrail::megaphone
