// Copies and allocations inside one process (docs/RUNTIME.md "Copies and buffers"): a
// record type that counts its copy constructions, and the runtime's count of fresh
// batch buffers (WorkerCounters::fresh_buffers) over a long run.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "flow/operators.hpp"
#include "flow/runtime.hpp"
#include "sanitized.hpp"  // tests/

namespace snailtrail::flow {
namespace {

std::atomic<uint64_t> g_copies{0};

// Moves are free; every copy construction or assignment is counted.
struct Counted {
  uint64_t v = 0;
  explicit Counted(uint64_t x) : v(x) {}
  Counted(const Counted& o) : v(o.v) { g_copies.fetch_add(1, std::memory_order_relaxed); }
  Counted(Counted&& o) noexcept = default;
  Counted& operator=(const Counted& o) {
    g_copies.fetch_add(1, std::memory_order_relaxed);
    v = o.v;
    return *this;
  }
  Counted& operator=(Counted&& o) noexcept = default;
};

constexpr uint64_t kRecords = 20000;  // per worker
constexpr uint64_t kPerTime = 700;    // records per time (batches of one time)

Stream<Counted> counted_source(Worker& w) {
  uint64_t i = 0;
  const uint64_t base = uint64_t{w.index()} * kRecords;
  return source<Counted>(w, "source", [i, base](Capability& cap, Output<Counted>& out) mutable {
    for (int k = 0; k < 300 && i < kRecords; ++k, ++i) {
      cap.downgrade(i / kPerTime);
      out.give(cap, Counted(base + i));
    }
    if (i == kRecords) cap.drop();
  });
}

// Runs source -> consumer (pipeline or exchange) and a probe on the source; returns the
// copies made, and checks every record reached the consumer once and the probe completed.
uint64_t copies_with_probe(uint32_t workers, bool exchanged, bool second_consumer) {
  g_copies = 0;
  std::mutex mu;
  std::map<uint64_t, uint64_t> seen;
  std::vector<Time> probe_end(workers, 0);
  run_dataflow(workers, [&](Worker& w) {
    auto s = counted_source(w);
    auto take = [&](Time, Counted& r) {
      std::lock_guard<std::mutex> lock(mu);
      ++seen[r.v];
    };
    if (exchanged)
      sink(exchange_by(s, "exchange", [](const Counted& r) { return r.v; }), "sink", take);
    else
      sink(s, "sink", take);
    probe(s, "probe", [&, i = w.index()](Time, Time now) { probe_end[i] = now; });
    if (second_consumer) sink(s, "sink2", [](Time, Counted&) {});
  });
  EXPECT_EQ(seen.size(), workers * kRecords);
  for (auto& [v, n] : seen) EXPECT_EQ(n, 1u) << v;
  for (Time t : probe_end) EXPECT_EQ(t, kTimeMax);
  return g_copies.load();
}

TEST(FlowCopies, OneConsumerPlusProbeCopiesNoRecord) {
  for (uint32_t workers : {1u, 2u}) {
    EXPECT_EQ(copies_with_probe(workers, false, false), 0u) << workers << " pipeline";
    EXPECT_EQ(copies_with_probe(workers, true, false), 0u) << workers << " exchange";
  }
}

// The counter sees copies: a second real consumer still gets its own copy of each record.
TEST(FlowCopies, SecondRealConsumerGetsOneCopyPerRecord) {
  EXPECT_EQ(copies_with_probe(2, true, true), 2 * kRecords);
}

// Several readers (map, filter, flat_map: the Read pact) and `owners` owning consumers
// (sinks) of one stream; every consumer must see every record once. Returns the copies.
uint64_t copies_with_readers(uint32_t workers, int owners) {
  g_copies = 0;
  std::mutex mu;
  // consumer -> record -> times seen
  std::map<std::string, std::map<uint64_t, uint64_t>> seen;
  auto note = [&](const std::string& who, uint64_t v) {
    std::lock_guard<std::mutex> lock(mu);
    ++seen[who][v];
  };
  run_dataflow(workers, [&](Worker& w) {
    auto s = counted_source(w);
    sink(map<uint64_t>(s, "read-map", [](const Counted& r) { return r.v; }), "map-sink",
         [&](Time, uint64_t& v) { note("map", v); });
    // Keeps every record: a copy each, on purpose (counted below); the others copy none.
    sink(filter(s, "read-filter", [](const Counted& r) { return r.v % 2 == 0; }), "filter-sink",
         [&](Time, Counted& r) { note("filter", r.v); });
    sink(flat_map<uint64_t>(s, "read-flat-map",
                            [](const Counted& r, auto&& emit) {
                              emit(r.v);
                              emit(r.v);
                            }),
         "flat-map-sink", [&](Time, uint64_t& v) { note("flat_map", v); });
    for (int i = 0; i < owners; ++i)
      sink(s, "owner", [&, i](Time, Counted& r) { note("owner" + std::to_string(i), r.v); });
  });
  const uint64_t n = workers * kRecords;
  EXPECT_EQ(seen["map"].size(), n);
  EXPECT_EQ(seen["flat_map"].size(), n);
  EXPECT_EQ(seen["filter"].size(), n / 2);
  for (auto& [v, k] : seen["map"]) EXPECT_EQ(k, 1u) << v;
  for (auto& [v, k] : seen["flat_map"]) EXPECT_EQ(k, 2u) << v;
  for (auto& [v, k] : seen["filter"]) EXPECT_EQ(k, 1u) << v;
  for (int i = 0; i < owners; ++i) {
    auto& o = seen["owner" + std::to_string(i)];
    EXPECT_EQ(o.size(), n) << i;
    for (auto& [v, k] : o) EXPECT_EQ(k, 1u) << v;
  }
  return g_copies.load();
}

// Readers share one batch: with no owning consumer no record is copied for them (only
// the filter's kept half, given downstream); with one owner, the readers' shared batch
// is the one copy; each further owner adds one. Before rt49 every consumer but the last
// got its own copy: 2, 3 and 4 copies per record here (the filter moved its half).
TEST(FlowCopies, ReadersShareOneBatchAndOnlyOwnersBeyondTheFirstCopy) {
  for (uint32_t workers : {1u, 2u}) {
    const uint64_t n = workers * kRecords;
    EXPECT_EQ(copies_with_readers(workers, 0), n / 2) << workers << " workers, no owner";
    EXPECT_EQ(copies_with_readers(workers, 1), n + n / 2) << workers << " workers, 1 owner";
    EXPECT_EQ(copies_with_readers(workers, 2), 2 * n + n / 2) << workers << " workers, 2 owners";
  }
}

// Megaphone's input an operator ignores: an empty stream that follows the frontier.
TEST(FlowCopies, FrontierStreamCarriesNoRecordAndCompletes) {
  for (uint32_t workers : {1u, 2u}) {
    g_copies = 0;
    std::atomic<uint64_t> records{0};
    std::vector<Time> end(workers, 0);
    run_dataflow(workers, [&](Worker& w) {
      auto s = counted_source(w);
      auto none = frontier_stream<char>(s, "none");
      sink(none, "none-sink", [&](Time, char) { records.fetch_add(1); });
      probe(none, "probe", [&, i = w.index()](Time old, Time now) {
        EXPECT_LT(old, now);
        end[i] = now;
      });
      sink(s, "sink", [](Time, Counted&) {});
    });
    EXPECT_EQ(records.load(), 0u);
    EXPECT_EQ(g_copies.load(), 0u);
    for (Time t : end) EXPECT_EQ(t, kTimeMax);
  }
}

// Steady state allocates nothing: every batch buffer and message comes back to its
// sender. A source a few epochs ahead of the probe at most (as the jobs run) sends many
// batches through an exchange and a per-key count; the buffers allocated anew stay
// bounded by what is in flight, far below the messages sent.
TEST(FlowCopies, BatchBuffersAreRecycledInSteadyState) {
  const uint64_t epochs = static_cast<uint64_t>(snailtrail::testing::random_inputs(600, 150));
  for (uint32_t workers : {1u, 2u}) {
    std::vector<WorkerCounters> counters;
    std::mutex mu;
    std::map<uint64_t, uint64_t> counts;
    run_dataflow(
        workers,
        [&](Worker& w) {
          auto probe_state = std::make_shared<ProbeHandle>();
          uint64_t e = 0;
          auto s = source<uint64_t>(w, "source",
                                    [probe_state, e, epochs, i = w.index()](
                                        Capability& cap, Output<uint64_t>& out) mutable {
                                      if (e == epochs) return cap.drop();
                                      if (*probe_state && e > (*probe_state)->frontier + 2) return;
                                      cap.downgrade(e);
                                      for (uint64_t k = 0; k < kBatch; ++k)
                                        out.give(cap, (e * kBatch + k) * 2 + i);
                                      ++e;
                                    });
          auto doubled = map<uint64_t>(s, "map", [](uint64_t v) { return v % 5000; });
          auto counted = stateful_unary<char, uint64_t>(
              doubled, "count", [](uint64_t k) { return k; },
              [](Time, uint64_t, uint64_t&, uint64_t& n, Session<char>&) { ++n; },
              [&](FlatMap<uint64_t>& st) {
                std::lock_guard<std::mutex> lock(mu);
                for (auto& [k, n] : st) counts[k] += n;
              });
          *probe_state = probe(counted, "probe", [](Time, Time) {});
        },
        &counters);
    std::map<uint64_t, uint64_t> want;  // the oracle: the same counts by a plain loop
    for (uint32_t i = 0; i < workers; ++i)
      for (uint64_t e = 0; e < epochs; ++e)
        for (uint64_t k = 0; k < kBatch; ++k) ++want[((e * kBatch + k) * 2 + i) % 5000];
    EXPECT_EQ(counts, want) << workers;
    uint64_t fresh = 0;
    for (auto& c : counters) fresh += c.fresh_buffers;
    // Messages sent: at least one per epoch, worker and data edge (source->map,
    // map->count): 2 * epochs * workers; without reuse each costs a buffer and a message.
    EXPECT_LE(fresh, 40u * workers * workers) << workers << " workers, " << epochs << " epochs";
    std::printf("workers %u: %llu fresh buffers for %llu batches\n", workers,
                static_cast<unsigned long long>(fresh),
                static_cast<unsigned long long>(2 * epochs * workers));
  }
}

}  // namespace
}  // namespace snailtrail::flow
