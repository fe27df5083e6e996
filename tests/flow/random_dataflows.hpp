// Random dataflows and their sequential oracle (tests/flow/test_progress.cpp in one
// process, tests/across under mpirun): random chains of map, filter, exchange and a
// notification-driven delay after one or two sources, an optional union (pipelined or
// exchanged) and more stages after it, over random inputs. A run reports what its sinks
// saw; mismatch() compares it with the oracle: every record delivered exactly once,
// frontiers monotone, no record at a time its frontier had passed, and every
// notification delivered only after all records of its time.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "flow/operators.hpp"
#include "flow/runtime.hpp"

namespace snailtrail::flow::random_dataflows {

using Rec = std::pair<Time, uint64_t>;  // (time, value)

// Source s on (global) worker w: nondecreasing times, unique values.
inline std::vector<Rec> source_records(uint64_t seed, uint32_t s, uint32_t w) {
  std::mt19937_64 rng(seed * 1000003 + s * 101 + w);
  const size_t n = 100 + rng() % 400;
  std::vector<Rec> out;
  Time t = rng() % 3;
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 10 < 3) t += rng() % 4;
    out.emplace_back(t, (uint64_t{w} << 32) | (uint64_t{s} << 28) | i);
  }
  return out;
}

enum Stage { kMap, kFilter, kExchange, kDelay, kStage_count };

inline uint64_t map_fn(uint64_t v) {
  return v * 3 + 1;
}
inline bool keep_fn(uint64_t v) {
  return mix64(v) % 5 != 0;
}
inline Time delay_of(uint64_t v) {
  return v % 3;
}

inline std::vector<Rec> oracle_apply(std::vector<Rec> in, Stage st) {
  std::vector<Rec> out;
  for (auto [t, v] : in) {
    if (st == kMap) out.emplace_back(t, map_fn(v));
    if (st == kFilter && keep_fn(v)) out.emplace_back(t, v);
    if (st == kExchange) out.emplace_back(t, v);
    if (st == kDelay) out.emplace_back(t + delay_of(v), v);
  }
  return out;
}

// A source that gives its records a random number at a time, holding its capability at
// the next record's time.
inline Stream<uint64_t> test_source(Worker& w, uint64_t seed, uint32_t s) {
  auto recs = std::make_shared<std::vector<Rec>>(source_records(seed, s, w.index()));
  auto rng = std::make_shared<std::mt19937_64>(seed + w.index());
  size_t pos = 0;
  return source<uint64_t>(w, "source" + std::to_string(s),
                          [recs, rng, pos](Capability& cap, Output<uint64_t>& out) mutable {
                            const size_t k = (*rng)() % 4 == 0 ? 0 : (*rng)() % 20;
                            for (size_t i = 0; i < k && pos < recs->size(); ++i, ++pos) {
                              cap.downgrade((*recs)[pos].first);
                              out.give(cap, (*recs)[pos].second);
                            }
                            if (pos == recs->size())
                              cap.drop();
                            else
                              cap.downgrade((*recs)[pos].first);
                          });
}

inline Stream<uint64_t> apply(const Stream<uint64_t>& s, Stage st) {
  switch (st) {
    case kMap:
      return map<uint64_t>(s, "map", [](uint64_t v) { return map_fn(v); });
    case kFilter:
      return filter(s, "filter", [](uint64_t v) { return keep_fn(v); });
    case kExchange:
      return exchange_by(s, "exchange", [](uint64_t v) { return v; });
    default:
      break;
  }
  // Holds records of time t until the frontier passes t, then gives them at t + delay.
  struct Delay {
    std::map<Time, std::vector<uint64_t>> held;
    Notificator notes;
    void operator()(Input<uint64_t>& in, Output<uint64_t>& out) {
      in.for_each([&](const InputCapability& cap, std::vector<uint64_t>& data) {
        auto [it, fresh] = held.try_emplace(cap.time());
        if (fresh) notes.notify_at(cap.retain());
        it->second.insert(it->second.end(), data.begin(), data.end());
      });
      notes.for_each(in.frontier(), [&](Capability& cap) {
        for (uint64_t v : held[cap.time()]) {
          Capability later = cap.delayed(cap.time() + delay_of(v));
          out.give(later, v);
        }
        held.erase(cap.time());
      });
    }
  };
  return s.unary<uint64_t>(exchange([](uint64_t v) { return mix64(v + 7); }), "delay", Delay{});
}

struct SinkLog {
  std::vector<Rec> got;
  std::map<Time, uint64_t> at_notify;  // count of time t when t was notified
  uint64_t regressions = 0;
};

inline void test_sink(const Stream<uint64_t>& s, SinkLog& log) {
  struct Logic {
    SinkLog* log;
    Notificator notes;
    std::map<Time, uint64_t> count;
    Time last_frontier = 0;
    void operator()(Input<uint64_t>& in, Output<char>&) {
      in.for_each([&](const InputCapability& cap, std::vector<uint64_t>& data) {
        const Time t = cap.time();
        if (count[t] == 0) notes.notify_at(cap.retain());
        count[t] += data.size();
        for (uint64_t v : data) log->got.emplace_back(t, v);
      });
      const Time f = in.frontier();
      if (f < last_frontier) ++log->regressions;
      last_frontier = f;
      notes.for_each(f, [&](Capability& cap) { log->at_notify[cap.time()] = count[cap.time()]; });
      if (f == kTimeMax) {
        // Every time counted at notification must have stayed complete.
        for (auto& [t, c] : log->at_notify)
          if (count[t] != c) ++log->regressions;
      }
    }
  };
  s.unary<char>(Pipeline{}, "sink", Logic{&log, {}, {}, 0});
}

// The dataflow of a seed (the same on every worker and every process).
struct Plan {
  uint32_t sources = 1;
  std::vector<std::vector<Stage>> chains;  // per source
  std::vector<Stage> after;                // after the union of the chains
  bool union_exchanged = false;
};

inline Plan random_plan(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Plan p;
  p.sources = 1 + rng() % 2;
  p.chains.resize(p.sources);
  for (auto& c : p.chains) {
    const size_t n = 1 + rng() % 4;
    for (size_t i = 0; i < n; ++i) c.push_back(static_cast<Stage>(rng() % kStage_count));
  }
  for (size_t i = 0, n = rng() % 3; i < n; ++i)
    p.after.push_back(static_cast<Stage>(rng() % kStage_count));
  p.union_exchanged = rng() % 2;
  return p;
}

// What the sinks of this process's workers saw, and the runtime's own counters.
struct Observed {
  std::vector<Rec> got;
  uint64_t sink_regressions = 0;  // frontier regressions or late records seen by the sinks
  uint64_t frontier_regressions = 0, early_records = 0;  // WorkerCounters, summed
};

// Runs the seed's dataflow on `workers` threads (of this process: with a transport, on
// every process, which all call it for the same seed).
inline Observed run_plan(const Plan& p, uint64_t seed, uint32_t workers,
                         size_t ring_capacity = kRingCapacity, Transport* transport = nullptr) {
  std::vector<SinkLog> logs(workers);
  std::vector<WorkerCounters> counters;
  run_dataflow(
      workers,
      [&](Worker& w) {
        std::vector<Stream<uint64_t>> streams;
        for (uint32_t s = 0; s < p.sources; ++s) {
          Stream<uint64_t> st = test_source(w, seed, s);
          for (Stage x : p.chains[s]) st = apply(st, x);
          streams.push_back(st);
        }
        Stream<uint64_t> u = streams[0];
        if (p.sources == 2) {
          auto pass = [](Input<uint64_t>& a, Input<uint64_t>& b, Output<uint64_t>& out) {
            a.for_each([&](const InputCapability& cap, std::vector<uint64_t>& d) {
              for (uint64_t v : d) out.give(cap, v);
            });
            b.for_each([&](const InputCapability& cap, std::vector<uint64_t>& d) {
              for (uint64_t v : d) out.give(cap, v);
            });
          };
          if (p.union_exchanged)
            u = binary<uint64_t>(streams[0], exchange([](uint64_t v) { return v; }), streams[1],
                                 exchange([](uint64_t v) { return v ^ 1; }), "union", pass);
          else
            u = binary<uint64_t>(streams[0], Pipeline{}, streams[1], Pipeline{}, "union", pass);
        }
        for (Stage x : p.after) u = apply(u, x);
        test_sink(u, logs[w.index() % workers]);  // local index: global ones start at rank*workers
      },
      &counters, ring_capacity, transport);
  Observed o;
  for (auto& l : logs) {
    o.got.insert(o.got.end(), l.got.begin(), l.got.end());
    o.sink_regressions += l.regressions;
  }
  for (auto& c : counters) {
    o.frontier_regressions += c.frontier_regressions;
    o.early_records += c.early_records;
  }
  return o;
}

// The sequential oracle: what the sinks of all `total_workers` workers must see together.
inline std::vector<Rec> expected(const Plan& p, uint64_t seed, uint32_t total_workers) {
  std::vector<Rec> want;
  for (uint32_t s = 0; s < p.sources; ++s) {
    std::vector<Rec> in;
    for (uint32_t w = 0; w < total_workers; ++w) {
      auto r = source_records(seed, s, w);
      in.insert(in.end(), r.begin(), r.end());
    }
    for (Stage x : p.chains[s]) in = oracle_apply(in, x);
    want.insert(want.end(), in.begin(), in.end());
  }
  for (Stage x : p.after) want = oracle_apply(want, x);
  return want;
}

// "" when every worker's observations (`all`, over every process) match the oracle's
// `want`, else what differs.
inline std::string mismatch(Observed all, std::vector<Rec> want) {
  std::string out;
  if (all.sink_regressions)
    out += std::to_string(all.sink_regressions) +
           " frontier regressions or late records at the sinks; ";
  if (all.frontier_regressions)
    out += std::to_string(all.frontier_regressions) + " frontier regressions; ";
  if (all.early_records) out += std::to_string(all.early_records) + " early records; ";
  std::sort(all.got.begin(), all.got.end());
  std::sort(want.begin(), want.end());
  if (all.got.size() != want.size())
    out += std::to_string(all.got.size()) + " records delivered, " + std::to_string(want.size()) +
           " expected; ";
  else if (all.got != want)
    out += "the records delivered differ from the oracle's; ";
  return out;
}

}  // namespace snailtrail::flow::random_dataflows
