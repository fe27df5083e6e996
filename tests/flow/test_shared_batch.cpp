// One immutable batch for several receivers (issue 35; docs/RUNTIME.md "Copies and
// buffers"): SharedBatch through the fabric's rings, a record type that counts the live
// objects, and the runtime's progress batches refilled rather than allocated.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "flow/operators.hpp"
#include "flow/runtime.hpp"

namespace snailtrail::flow {
namespace {

std::atomic<int64_t> g_live_made{0}, g_live_gone{0};

// Every construction (copies included) and destruction is counted.
struct Live {
  uint64_t v = 0;
  explicit Live(uint64_t x) : v(x) { g_live_made.fetch_add(1); }
  Live(const Live& o) : v(o.v) { g_live_made.fetch_add(1); }
  Live& operator=(const Live&) = default;
  ~Live() { g_live_gone.fetch_add(1); }
};

constexpr uint32_t kSharedReceivers = 3;
constexpr uint64_t kSharedRecords = 500;

// Worker 0 sends one batch to workers 0..2 of one process: each reads the same records
// at the same address (no copy), and the records die once, after the last reader.
TEST(FlowSharedBatch, ReceiversReadOneBatchFreedOnce) {
  g_live_made = 0;
  g_live_gone = 0;
  {
    Fabric fabric(kSharedReceivers);
    auto pushers = fabric.pushers<Live>(7, 0);
    std::vector<std::unique_ptr<Puller<Live>>> pullers;
    for (uint32_t to = 0; to < kSharedReceivers; ++to)
      pullers.push_back(fabric.puller<Live>(7, to));
    auto batch = SharedBatch<Live>::make();
    batch.mutable_data().reserve(kSharedRecords);
    for (uint64_t i = 0; i < kSharedRecords; ++i) batch.mutable_data().emplace_back(i * 3);
    const Live* address = batch.data().data();
    for (uint32_t to = 0; to < kSharedReceivers; ++to) {
      auto m = std::make_unique<Message<Live>>();
      m->shared = batch;
      pushers[to]->push(std::move(m));
    }
    batch.reset();  // the sender lets go first: the readers keep it alive
    EXPECT_EQ(g_live_made.load(), static_cast<int64_t>(kSharedRecords));
    std::vector<std::thread> readers;
    std::atomic<uint32_t> ok{0};
    for (uint32_t to = 0; to < kSharedReceivers; ++to)
      readers.emplace_back([&, to] {
        std::unique_ptr<Message<Live>> m;
        while (!(m = pullers[to]->pull())) std::this_thread::yield();
        const auto r = m->records();
        bool same = r.size() == kSharedRecords && r.data() == address;
        for (uint64_t i = 0; same && i < r.size(); ++i) same = r[i].v == i * 3;
        if (same) ok.fetch_add(1);
        m->shared.reset();
        pullers[to]->recycle(std::move(m));
      });
    for (auto& t : readers) t.join();
    EXPECT_EQ(ok.load(), kSharedReceivers);
    EXPECT_EQ(g_live_gone.load(), static_cast<int64_t>(kSharedRecords))
        << "freed once, by the last";
  }
  EXPECT_EQ(g_live_made.load(), static_cast<int64_t>(kSharedRecords)) << "no copy per receiver";
  EXPECT_EQ(g_live_gone.load(), g_live_made.load());
}

// A sender that refills a batch as soon as unique() says every reader let go: readers on
// other threads never see a batch change under them (each round's records carry the
// round), and at the end every record constructed died exactly once.
TEST(FlowSharedBatch, RefilledOnlyAfterEveryReaderLetGo) {
  g_live_made = 0;
  g_live_gone = 0;
  constexpr uint64_t kRounds = 3000, kSize = 64;
  std::atomic<uint64_t> bad{0};
  {
    Fabric fabric(kSharedReceivers + 1, nullptr, 8);
    auto pushers = fabric.pushers<Live>(9, 0);
    std::vector<std::thread> readers;
    for (uint32_t to = 1; to <= kSharedReceivers; ++to)
      readers.emplace_back([&, to, puller = fabric.puller<Live>(9, to)]() mutable {
        for (uint64_t r = 0; r < kRounds;) {
          auto m = puller->pull();
          if (!m) {
            std::this_thread::yield();
            continue;
          }
          const auto recs = m->records();
          if (recs.size() != kSize) bad.fetch_add(1);
          for (size_t i = 0; i < recs.size(); ++i)
            if (recs[i].v != r * kSize + i) bad.fetch_add(1);
          if (r % 7 == 0) std::this_thread::yield();  // a reader that holds on a while
          for (size_t i = 0; i < recs.size(); ++i)
            if (recs[i].v != r * kSize + i) bad.fetch_add(1);
          m->shared.reset();
          puller->recycle(std::move(m));
          ++r;
        }
      });
    std::vector<SharedBatch<Live>> pool{SharedBatch<Live>::make(), SharedBatch<Live>::make()};
    for (uint64_t r = 0; r < kRounds; ++r) {
      SharedBatch<Live>* b = nullptr;
      while (!b) {
        for (auto& p : pool)
          if (p.unique()) b = &p;
        if (!b) std::this_thread::yield();
      }
      auto& v = b->mutable_data();
      v.clear();
      v.reserve(kSize);  // growing would copy (Live has no move)
      for (uint64_t i = 0; i < kSize; ++i) v.emplace_back(r * kSize + i);
      for (uint32_t to = 1; to <= kSharedReceivers; ++to) {
        auto m = pushers[to]->reuse();
        if (!m) m = std::make_unique<Message<Live>>();
        m->from = 0;
        m->shared = *b;
        pushers[to]->push(std::move(m));
        while (!pushers[to]->flush()) std::this_thread::yield();
      }
    }
    for (auto& t : readers) t.join();
  }
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(g_live_made.load(), static_cast<int64_t>(kRounds * kSize));
  EXPECT_EQ(g_live_gone.load(), g_live_made.load());
}

// The runtime's progress: one batch per round for all peers, refilled once they let go,
// so a long run allocates a bounded number of batches (the old code copied the batch
// into each peer's message; a refill-less version allocates one per round). The sources
// stay at most 2 epochs ahead of the probe (as the jobs run), which bounds how many
// rounds a descheduled peer can lag behind on a loaded machine.
TEST(FlowSharedBatch, ProgressBatchesAreRefilled) {
  for (uint32_t workers : {1u, 3u}) {
    std::vector<WorkerCounters> counters;
    std::atomic<uint64_t> sum{0};
    constexpr uint64_t kEpochs = 2000;
    run_dataflow(
        workers,
        [&](Worker& w) {
          auto probe_state = std::make_shared<ProbeHandle>();
          uint64_t e = 0;
          auto s = source<uint64_t>(
              w, "source", [probe_state, e](Capability& cap, Output<uint64_t>& out) mutable {
                if (e == kEpochs) return cap.drop();
                if (*probe_state && e > (*probe_state)->frontier + 2) return;
                cap.downgrade(e);
                out.give(cap, e++);
              });
          auto x = exchange_by(s, "spread", [](uint64_t v) { return v; });
          sink(x, "sink", [&](Time, uint64_t& v) { sum.fetch_add(v); });
          *probe_state = probe(x, "probe", [](Time, Time) {});
        },
        &counters);
    EXPECT_EQ(sum.load(), workers * kEpochs * (kEpochs - 1) / 2);
    uint64_t fresh = 0, steps = 0;
    for (auto& c : counters) fresh += c.fresh_progress_batches, steps += c.steps;
    EXPECT_GE(steps, kEpochs * workers);
    EXPECT_LE(fresh, kProgressPool * workers) << workers << " workers, " << steps << " steps";
    std::printf("workers %u: %llu fresh progress batches in %llu rounds\n", workers,
                static_cast<unsigned long long>(fresh), static_cast<unsigned long long>(steps));
  }
}

}  // namespace
}  // namespace snailtrail::flow
