// The random-dataflow oracle and Megaphone's random migration plans across processes:
//   mpirun -np P snailtrail_random_across WORKERS [SEEDS]
// runs the same random dataflows as tests/flow/test_progress.cpp and the same random
// plans as tests/megaphone/test_megaphone.cpp with WORKERS threads in each of P processes
// (P*WORKERS workers, exchanges and migrations between processes over the MPI transport),
// one transport for all seeds. Every rank checks its own workers (frontiers, early
// records, order per bin, placement); rank 0 gathers what every worker delivered and
// checks it against the sequential oracle. A failure on any rank makes its exit status
// non-zero, and mpirun's.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flow/mpi_transport.hpp"
#include "random_dataflows.hpp"  // tests/flow
#include "random_plans.hpp"      // tests/megaphone
#include "sanitized.hpp"         // tests

namespace test_random_across {
namespace {

namespace flow = snailtrail::flow;
namespace rd = snailtrail::flow::random_dataflows;
namespace rp = snailtrail::random_plans;

flow::Transport* g_transport = nullptr;
uint32_t g_workers = 1;  // per process
int g_seeds = 150;

uint32_t total_workers() {
  return g_transport->procs() * g_workers;
}

TEST(RandomAcrossProcesses, DataflowsDeliverEveryRecordOnceAndFrontiersAreExact) {
  flow::Transport& tr = *g_transport;
  uint64_t delivered = 0, small_rings = 0;
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(g_seeds); ++seed) {
    const rd::Plan plan = rd::random_plan(seed);
    // Every third seed with rings of 1 to 4 slots: local pushes overflow at the sender.
    const size_t cap = seed % 3 == 0 ? 1 + seed / 3 % 4 : flow::kRingCapacity;
    small_rings += cap < flow::kRingCapacity;
    const rd::Observed mine = rd::run_plan(plan, seed, g_workers, cap, &tr);
    EXPECT_EQ(mine.sink_regressions + mine.frontier_regressions + mine.early_records, 0u)
        << "rank " << tr.rank() << " seed " << seed;
    // Rank 0 gathers (time, value) pairs and every rank's counters.
    std::vector<uint64_t> flat = {mine.sink_regressions, mine.frontier_regressions,
                                  mine.early_records, mine.got.size()};
    for (auto [t, v] : mine.got) {
      flat.push_back(t);
      flat.push_back(v);
    }
    const std::vector<uint64_t> all = tr.gather(flat);
    if (tr.rank() != 0) continue;
    rd::Observed every;
    for (size_t i = 0; i < all.size();) {
      every.sink_regressions += all[i];
      every.frontier_regressions += all[i + 1];
      every.early_records += all[i + 2];
      const size_t n = all[i + 3];
      i += 4;
      for (size_t j = 0; j < n; ++j, i += 2) every.got.emplace_back(all[i], all[i + 1]);
    }
    delivered += every.got.size();
    EXPECT_EQ(rd::mismatch(every, rd::expected(plan, seed, total_workers())), "")
        << "seed " << seed << ": " << tr.procs() << " processes x " << g_workers
        << " workers, ring capacity " << cap;
  }
  if (tr.rank() == 0)
    std::printf(
        "random dataflows: %d seeds (%llu with rings of 1-4 slots), %u processes x %u "
        "workers, %llu records delivered\n",
        g_seeds, static_cast<unsigned long long>(small_rings), tr.procs(), g_workers,
        static_cast<unsigned long long>(delivered));
}

TEST(RandomAcrossProcesses, MegaphonePlansMatchThePlainLoopExactlyOnce) {
  flow::Transport& tr = *g_transport;
  std::mt19937_64 rng(16);  // every rank draws the same scenarios
  const int iters = g_seeds / 2;
  int moved = 0;
  uint64_t applied = 0, bins_sent = 0, updates = 0;
  for (int iter = 0; iter < iters; ++iter) {
    const rp::Scenario s = rp::random_scenario(rng, true, total_workers());
    const rp::Outcome mine = rp::run(s, &tr);
    EXPECT_EQ(
        mine.order_violations + mine.misplaced + mine.early_records + mine.frontier_regressions, 0u)
        << "rank " << tr.rank() << " iteration " << iter;
    std::vector<uint64_t> flat = {mine.applied,      mine.bins_sent,     mine.order_violations,
                                  mine.misplaced,    mine.early_records, mine.frontier_regressions,
                                  mine.counts.size()};
    for (auto [k, v] : mine.counts) {
      flat.push_back(k);
      flat.push_back(v);
    }
    const std::vector<uint64_t> all = tr.gather(flat);
    if (tr.rank() != 0) continue;
    rp::Outcome every;
    for (size_t i = 0; i < all.size();) {
      every.applied += all[i];
      every.bins_sent += all[i + 1];
      every.order_violations += all[i + 2];
      every.misplaced += all[i + 3];
      every.early_records += all[i + 4];
      every.frontier_regressions += all[i + 5];
      const size_t n = all[i + 6];
      i += 7;
      for (size_t j = 0; j < n; ++j, i += 2) every.counts[all[i]] += all[i + 1];
    }
    SCOPED_TRACE(::testing::Message()
                 << "iteration " << iter << ": " << tr.procs() << " processes x " << g_workers
                 << " workers, 2^" << s.log_bins << " bins, " << s.plan.size() << " updates, echo "
                 << s.echo_delay);
    uint64_t records = 0;
    for (const auto& in : s.input) records += in.size();
    EXPECT_EQ(every.counts, rp::oracle(s));
    EXPECT_EQ(every.applied, records * (s.echo_delay ? 2 : 1));  // exactly once
    EXPECT_EQ(every.order_violations, 0u);
    EXPECT_EQ(every.misplaced, 0u);
    EXPECT_EQ(every.early_records, 0u);
    EXPECT_EQ(every.frontier_regressions, 0u);
    if (rp::plan_moves_something(s)) {
      EXPECT_GT(every.bins_sent, 0u);
      ++moved;
    }
    applied += every.applied;
    bins_sent += every.bins_sent;
    updates += s.plan.size();
  }
  if (tr.rank() != 0) return;
  EXPECT_GT(moved, iters * 5 / 12);  // the plans did move state
  std::printf(
      "megaphone random plans: %d scenarios (%d moved state), %llu updates, %llu bins "
      "sent, %llu applications\n",
      iters, moved, static_cast<unsigned long long>(updates),
      static_cast<unsigned long long>(bins_sent), static_cast<unsigned long long>(applied));
}

// Comm-thread wake-ups (issue 35, docs/RUNTIME.md "Scaling and idle workers"): with idle
// workers parking up to 2 s, global worker 0's source waits 1.5 s (polling: its worker
// parks 20 us at most), then gives 64 records at time 0 to every worker and ends. The
// other workers have been idle all along, their parks grown to over a second; a frame
// (data or progress) that the communication thread delivers must wake them, so the
// exchange completes on every rank within 0.9 s of the source's end. Without the
// wake-ups the receivers sleep out their parks: the run takes 2.6 s or more.
TEST(RandomAcrossProcesses, ParkedWorkersWakeForFramesFromOtherProcesses) {
  using Clock = std::chrono::steady_clock;
  flow::Transport& tr = *g_transport;
  constexpr auto kIdle = std::chrono::milliseconds(1500);
  constexpr int64_t kParkMaxNs = 2'000'000'000;
  constexpr uint64_t kRecords = 64;
  std::atomic<uint64_t> received{0};
  const auto begin = Clock::now();
  flow::run_dataflow(
      g_workers,
      [&](flow::Worker& w) {
        auto late =
            flow::source<uint64_t>(w, "late",
                                   [&w, begin, kIdle, i = uint64_t{0}](
                                       flow::Capability& cap, flow::Output<uint64_t>& out) mutable {
                                     if (w.index() != 0) return cap.drop();
                                     if (Clock::now() - begin < kIdle)
                                       return w.set_source_active(true);
                                     for (; i < kRecords; ++i) out.give(cap, i);
                                     cap.drop();
                                   });
        auto spread = flow::exchange_by(late, "spread", [](uint64_t k) { return k; });
        flow::sink(spread, "count", [&received](flow::Time, uint64_t) { ++received; });
      },
      nullptr, flow::kRingCapacity, &tr, kParkMaxNs);
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  EXPECT_LT(seconds, 2.4) << "rank " << tr.rank() << ": parked workers slept through frames";
  const std::vector<uint64_t> all = tr.gather({received.load()});
  if (tr.rank() != 0) return;
  uint64_t sum = 0, ranks_with_records = 0;
  for (uint64_t n : all) {
    sum += n;
    ranks_with_records += n > 0;
  }
  EXPECT_EQ(sum, kRecords);
  EXPECT_EQ(ranks_with_records, tr.procs());  // every process took part in the exchange
  std::printf("parked workers: exchange across %u processes done %.3f s after the start\n",
              tr.procs(), seconds);
}

// Ranks other than 0 print only their failures, each naming the rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(uint32_t rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "rank %u: %s:%d: Failure\n%s\n", rank_,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
  }

 private:
  uint32_t rank_;
};

}  // namespace
}  // namespace test_random_across

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpirun -np P %s WORKERS [SEEDS]\n", argv[0]);
    return 2;
  }
  test_random_across::g_workers = static_cast<uint32_t>(std::max(1, std::atoi(argv[1])));
  test_random_across::g_seeds =
      argc > 2 ? std::max(2, std::atoi(argv[2]))
               : snailtrail::testing::random_inputs(150, 30);  // fewer under a sanitizer
  std::unique_ptr<snailtrail::flow::Transport> tr = snailtrail::flow::mpi_transport_if_launched();
  if (!tr) {
    std::fprintf(stderr, "%s: run under mpirun with more than one process\n", argv[0]);
    return 2;
  }
  test_random_across::g_transport = tr.get();
  if (tr->rank() != 0) {  // rank 0 prints the run; the others their failures
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new test_random_across::FailurePrinter(tr->rank()));
  }
  const int rc = RUN_ALL_TESTS();
  // Read by tests/mpi_random_dataflows.sh when it sets tiny message limits.
  const snailtrail::flow::Transport::Stats st = tr->stats();
  std::printf("transport rank %u: %llu messages, largest %llu bytes, %llu sender waits\n",
              tr->rank(), static_cast<unsigned long long>(st.messages),
              static_cast<unsigned long long>(st.largest_message),
              static_cast<unsigned long long>(st.sender_waits));
  std::fflush(stdout);
  tr.reset();  // MPI_Finalize
  return rc;
}
