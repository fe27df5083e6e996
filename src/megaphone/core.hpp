// The core of Megaphone's migratable operators (thesis §5.1.3, docs/MEGAPHONE.md),
// shared by stateful_unary and stateful_binary (megaphone.hpp): the configuration
// (which worker holds which bin, changed by a control stream), and the three operators
//   F (Router)   routes each record by the configuration in force at its time, holding
//                records whose time the control frontier has not passed;
//   M (Migrator) F's migration half, with the same control input: holds a capability at
//                every configuration time t and, once S's output frontier reaches t,
//                serializes the bins leaving its worker (state and pending work) and
//                sends them as StateChunks at time t;
//   S (Stateful) keeps the bins of its worker, installs arriving bins immediately and
//                folds the pending work of each time once the frontier passes it.
// F, M and S share the worker's bins through a pointer (same worker thread). What is
// pending in a bin, how it travels and how one time of it is folded is the variant's
// (record_bins.hpp: records one by one; batch_bins.hpp: (time, bin) batches and timers):
// a Bins type derived from BinsBase<State> with
//   using Rec = ...;                                 // the routed record type
//   void resize(uint32_t bins);
//   void add(Time t, std::vector<Routed<Rec>>& recs, Retain retain);  // received records
//   bool idle() const;                               // nothing pending
//   void extract(Time t, uint32_t bin, std::vector<char>& buf);   // the bin's pending work
//   void install(Time t, uint32_t bin, const char*& p, const char* end, Input<StateChunk>&);
// and a FoldTime functor, fold_time(bins, capability, output), folding one time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flow/operators.hpp"
#include "megaphone/codec.hpp"

namespace snailtrail::megaphone {

using flow::Capability;
using flow::Input;
using flow::InputCapability;
using flow::kTimeMax;
using flow::Output;
using flow::Session;
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

// ---- the control stream ----

// An update given at time t, checked before any operator uses it: F applies an update at
// its `time`, M at the time it was given, so the two must agree (else records and state
// part ways), and its bin and worker index the operators' tables.
inline void check_update(const ControlUpdate& u, Time t, uint32_t workers, uint32_t bins) {
  const std::string what = "megaphone: the control update of bin " + std::to_string(u.bin);
  if (u.time != t)
    throw std::invalid_argument(what + " says time " + std::to_string(u.time) +
                                " but was given at time " + std::to_string(t) +
                                " (give an update at its own time)");
  if (u.bin >= bins)
    throw std::invalid_argument(what + ": no such bin (" + std::to_string(bins) + " bins)");
  if (u.worker >= workers)
    throw std::invalid_argument(what + " names worker " + std::to_string(u.worker) + " of " +
                                std::to_string(workers) + " (workers 0 to " +
                                std::to_string(workers - 1) + ")");
}

// Every F and M gets every update: W copies, one to each worker.
inline Stream<Routed<ControlUpdate>> broadcast_control(const Stream<ControlUpdate>& control,
                                                       uint32_t bins) {
  const uint32_t W = control.worker().peers();
  return control.template unary<Routed<ControlUpdate>>(
      flow::Pipeline{}, "control-broadcast",
      [W, bins](Input<ControlUpdate>& in, Output<Routed<ControlUpdate>>& out) {
        in.for_each([&](const InputCapability& cap, std::vector<ControlUpdate>& data) {
          Session<Routed<ControlUpdate>> session = out.session(cap);
          for (const ControlUpdate& u : data) {
            check_update(u, cap.time(), W, bins);
            for (uint32_t d = 0; d < W; ++d) session.give(Routed<ControlUpdate>{u, u.bin, d});
          }
        });
      });
}

// The initial configuration of opts (bin -> worker, checked), or bin b on worker b % W.
inline std::vector<uint32_t> initial_config(const Options& opts, uint32_t workers) {
  const uint32_t bins = 1u << opts.log_bins;
  if (!opts.initial.empty() && opts.initial.size() != bins)
    throw std::invalid_argument("megaphone: the initial configuration needs one worker per bin");
  for (uint32_t x : opts.initial)
    if (x >= workers)
      throw std::invalid_argument("megaphone: the initial configuration names worker " +
                                  std::to_string(x) + " of " + std::to_string(workers));
  if (!opts.initial.empty()) return opts.initial;
  std::vector<uint32_t> config(bins);
  for (uint32_t b = 0; b < bins; ++b) config[b] = initial_owner(b, workers);
  return config;
}

namespace detail {

// ---- the bins of one worker ----

// What every variant's bins hold: each bin's State, whether this worker holds it, the
// notificator of the times with pending work, and S's output frontier on this worker.
template <class State>
struct BinsBase {
  using StateType = State;
  std::vector<State> states;
  std::vector<uint8_t> owned;
  flow::Notificator notes;
  std::shared_ptr<const flow::ProbeState> s_probe;
  void resize(uint32_t bins) {
    states.resize(bins);
    owned.assign(bins, 0);
  }
};

// A bin's pending records travel as a count, then (time, record) pairs as bytes.
template <class T>
void encode_pending(const std::vector<std::pair<Time, T>>& items, std::vector<char>& buf) {
  put_u64(buf, items.size());
  const auto* ip = reinterpret_cast<const char*>(items.data());
  buf.insert(buf.end(), ip, ip + items.size() * sizeof(items[0]));
}
// each(time, record) for the pending records of a bin arriving at configuration time t.
template <class T, class Each>
void decode_pending(Time t, const char*& p, const char* end, Each each) {
  const uint64_t n = get_u64(p, end);
  using Item = std::pair<Time, T>;
  if (static_cast<uint64_t>(end - p) / sizeof(Item) < n)
    throw std::runtime_error("megaphone: truncated pending records");
  for (uint64_t i = 0; i < n; ++i) {
    Item item;
    std::memcpy(static_cast<void*>(&item), p + i * sizeof(Item), sizeof(Item));
    if (item.first < t) throw std::logic_error("megaphone: a migrated record is late");
    each(item.first, item.second);
  }
  p += n * sizeof(Item);
}

// ---- F: routing by the configuration at each record's time ----

template <class T, class ExchFn>
struct Router {
  ExchFn exch;
  uint32_t log_bins;
  std::vector<uint32_t> table;                     // the configuration for every time >= applied
  std::map<Time, std::vector<ControlUpdate>> cfg;  // received, not yet in `table`
  std::map<Time, std::pair<Capability, std::vector<T>>> held;
  std::vector<uint32_t> overlay;
  template <class Cap>
  void route(const Cap& cap, std::vector<T>& data, const std::vector<uint32_t>& tab,
             Output<Routed<T>>& out) {
    Session<Routed<T>> session = out.session(cap);
    for (T& r : data) {
      const uint32_t b = bin_of(exch(r), log_bins);
      session.give(Routed<T>{r, b, tab[b]});
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
    data.for_each([&](const InputCapability& cap, std::vector<T>& recs) {
      const Time t = cap.time();
      if (t < cf && (cfg.empty() || cfg.begin()->first > t) &&
          (held.empty() || held.begin()->first > t)) {
        route(cap, recs, table, out);
        return;
      }
      auto [it, fresh] = held.try_emplace(t);
      if (fresh) it->second.first = cap.retain();
      auto& v = it->second.second;
      v.insert(v.end(), recs.begin(), recs.end());
    });
    route_held(cf, out);
  }
  // Routes the held records whose time the control frontier `cf` has passed.
  void route_held(Time cf, Output<Routed<T>>& out) {
    while (!held.empty() && held.begin()->first < cf) {
      auto node = held.extract(held.begin());
      const Time t = node.key();
      const Capability& cap = node.mapped().first;
      if (cfg.empty() || cfg.begin()->first > t) {
        route(cap, node.mapped().second, table, out);
      } else {  // updates in (bound, t]: the configuration at t differs from `table`
        overlay = table;
        for (auto it = cfg.begin(); it != cfg.end() && it->first <= t; ++it)
          for (const ControlUpdate& u : it->second) overlay[u.bin] = u.worker;
        route(cap, node.mapped().second, overlay, out);
      }
    }  // the held capability drops here, in the same round as the records leave
  }
};

// ---- M: migrating the bins that leave this worker ----

template <class Bins>
struct Migrator {
  using State = typename Bins::StateType;
  std::shared_ptr<Bins> bins;
  uint32_t me;
  std::vector<uint32_t> owner;
  std::map<Time, std::pair<Capability, std::vector<ControlUpdate>>> pending;
  std::function<void(Time, uint32_t, uint64_t)> on_sent;
  std::vector<char> buf;
  void operator()(Input<Routed<ControlUpdate>>& control, Output<StateChunk>& out) {
    control.for_each([&](const InputCapability& cap, std::vector<Routed<ControlUpdate>>& us) {
      auto [it, fresh] = pending.try_emplace(cap.time());
      if (fresh) it->second.first = cap.retain();
      for (const auto& u : us) it->second.second.push_back(u.rec);
    });
    const Time cf = control.frontier();
    const Time sf = bins->s_probe ? bins->s_probe->frontier : 0;
    while (!pending.empty() && pending.begin()->first < cf && pending.begin()->first <= sf) {
      auto node = pending.extract(pending.begin());
      apply(node.mapped().first, node.mapped().second, out);
    }
  }
  // The updates of configuration time cap.time(): the bins leaving this worker go.
  void apply(const Capability& cap, const std::vector<ControlUpdate>& updates,
             Output<StateChunk>& out) {
    flow::Recorder& rec = out.worker().recorder();
    const int64_t t0 = rec.on() ? rec.now() : 0;
    uint64_t chunks = 0;
    // Several updates of one bin at one time: the last one counts (as in F).
    std::unordered_map<uint32_t, uint32_t> to;
    for (const ControlUpdate& u : updates) to[u.bin] = u.worker;
    for (const ControlUpdate& u : updates) {
      auto it = to.find(u.bin);
      if (it == to.end()) continue;
      const uint32_t from = owner[u.bin], dest = it->second;
      to.erase(it);
      owner[u.bin] = dest;
      if (from == me && dest != me) chunks += send_bin(cap, u.bin, dest, out);
    }
    if (chunks > 0)  // the state's serialization: carved out of M's processing
      rec.carve(t0, rec.now(), snailtrail::ActivityType::serialization,
                static_cast<int64_t>(chunks));
  }
  // Serializes the bin (state, then its pending work) and sends it; returns the chunks.
  uint64_t send_bin(const Capability& cap, uint32_t bin, uint32_t dest, Output<StateChunk>& out) {
    const Time t = cap.time();
    Bins& s = *bins;
    if (!s.owned[bin]) throw std::logic_error("megaphone: migrating a bin this worker lacks");
    buf.clear();
    Codec<State>::encode(s.states[bin], buf);
    s.states[bin] = State{};
    s.owned[bin] = 0;
    s.extract(t, bin, buf);
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
      out.give(cap, c);
      ++n;
    } while (at < buf.size());
    buf.clear();
    buf.shrink_to_fit();
    return n;
  }
};

// ---- S: installing arriving bins, folding each time once the frontier passes it ----

template <class Bins, class Out, class FoldTime, class Done>
struct Stateful {
  using Rec = typename Bins::Rec;
  using State = typename Bins::StateType;
  std::shared_ptr<Bins> bins;
  FoldTime fold_time;
  Done done;
  std::unordered_map<uint32_t, std::vector<char>> partial;  // chunks of bins arriving
  bool finished = false;
  void operator()(Input<Routed<Rec>>& data, Input<StateChunk>& state, Output<Out>& out) {
    Bins& s = *bins;
    receive_bins(state, out.worker().recorder());
    data.for_each([&](const InputCapability& cap, std::vector<Routed<Rec>>& recs) {
      s.add(cap.time(), recs, [&] { return cap.retain(); });
    });
    const Time f = std::min(data.frontier(), state.frontier());
    s.notes.for_each(f, [&](Capability& cap) { fold_time(s, cap, out); });
    if (!finished && s.idle() && f == kTimeMax) {
      finished = true;
      for (uint32_t b = 0; b < s.owned.size(); ++b)
        if (s.owned[b]) done(b, s.states[b]);
    }
  }
  void receive_bins(Input<StateChunk>& state, flow::Recorder& rec) {
    state.for_each([&](const InputCapability& cap, std::vector<StateChunk>& cs) {
      const int64_t t0 = rec.on() ? rec.now() : 0;
      uint64_t installed = 0;
      for (const StateChunk& c : cs) {
        auto& b = partial[c.bin];
        b.insert(b.end(), c.bytes, c.bytes + c.len);
        if (!c.last) continue;
        install(cap, c.bin, b);
        partial.erase(c.bin);
        ++installed;
      }
      if (installed > 0)  // installing migrated state, carved out of S's processing
        rec.carve(t0, rec.now(), snailtrail::ActivityType::deserialization,
                  static_cast<int64_t>(cs.size()));
    });
  }
  // The bin's pending work is held by capabilities delayed from the state's message.
  void install(const InputCapability& cap, uint32_t bin, const std::vector<char>& bytes) {
    Bins& s = *bins;
    if (s.owned[bin]) throw std::logic_error("megaphone: a bin arrived twice");
    const char* p = bytes.data();
    const char* end = p + bytes.size();
    Codec<State>::decode(p, end, s.states[bin]);
    s.owned[bin] = 1;
    s.install(cap, bin, p, end);
  }
};

// F, M and S over `input` (one stream of records: the variant's inputs, merged), on the
// bins of type Bins; returns S's output.
template <class Bins, class Out, class Rec, class ExchFn, class FoldTime, class Done>
Stream<Out> migratable(const Stream<Rec>& input, const Stream<ControlUpdate>& control,
                       const std::string& name, const Options& opts, ExchFn exch,
                       FoldTime fold_time, Done done) {
  Worker& w = input.worker();
  const uint32_t W = w.peers();
  const std::vector<uint64_t> rkeys = route_keys(W);
  const std::vector<uint32_t> config = initial_config(opts, W);
  auto bins = std::make_shared<Bins>();
  bins->resize(static_cast<uint32_t>(config.size()));
  for (uint32_t b = 0; b < config.size(); ++b) bins->owned[b] = config[b] == w.index();

  auto ctl = broadcast_control(control, static_cast<uint32_t>(config.size()));
  auto ctl_key = [rkeys](const Routed<ControlUpdate>& r) { return rkeys[r.dest]; };
  auto routed = flow::binary<Routed<Rec>>(
      input, flow::Pipeline{}, ctl, flow::exchange(ctl_key), name + "-F",
      Router<Rec, ExchFn>{std::move(exch), opts.log_bins, config, {}, {}, {}});
  auto chunks = ctl.template unary<StateChunk>(
      flow::exchange(ctl_key), name + "-M",
      Migrator<Bins>{bins, w.index(), config, {}, bin_sent_callback(opts), {}});
  auto dest_key = [rkeys](const Routed<Rec>& r) { return rkeys[r.dest]; };
  auto chunk_key = [rkeys](const StateChunk& c) { return rkeys[c.dest]; };
  auto result = flow::binary<Out>(
      routed, flow::exchange(dest_key), chunks, flow::exchange(chunk_key), name,
      Stateful<Bins, Out, FoldTime, Done>{bins, std::move(fold_time), std::move(done), {}, false});
  bins->s_probe = flow::probe(result, name + "-S-probe", [](Time, Time) {});
  return result;
}

}  // namespace detail
}  // namespace snailtrail::megaphone
