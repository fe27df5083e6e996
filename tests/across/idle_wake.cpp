// A cross-process delivery after a long idle period (issue 35; docs/RUNTIME.md "Several
// processes"): the communication thread backs off to sleeps of up to 1 ms while nothing
// moves, so a frame arriving then must still be taken within a bound. Run by
// tests/mpi_idle_wake.sh under mpirun -np 2 (one host: one steady clock). Worker 0 (rank 0)
// holds its capability without any progress for kIdleMs, so both processes' communication
// threads idle, then sends one record, stamped with the clock, to worker 1 (rank 1), which
// measures the delivery. Three rounds; rank 1 fails if any record is lost or late.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>

#include "flow/mpi_transport.hpp"
#include "flow/operators.hpp"
#include "flow/runtime.hpp"

namespace {
constexpr int64_t kIdleMs = 1500;
constexpr int64_t kBoundMs = 250;  // generous: the sleep bound is 1 ms
constexpr int kRounds = 3;
struct Stamped {  // trivially copyable, as records crossing processes must be
  uint64_t key;
  int64_t sent_ns;
};
}  // namespace

int main() {
  using namespace snailtrail::flow;
  std::unique_ptr<Transport> tr = mpi_transport_if_launched();
  if (!tr || tr->procs() != 2) {
    std::fprintf(stderr, "idle_wake: run under mpirun -np 2\n");
    return 2;
  }
  uint64_t key = 0;  // a key exchanged to worker 1
  while (worker_of(key, 2) != 1) ++key;
  std::atomic<int64_t> worst{0};
  std::atomic<int> got{0};
  for (int round = 0; round < kRounds; ++round) {
    run_dataflow(
        1,
        [&](Worker& w) {
          const int64_t start = Transport::steady_now_ns();
          auto s = source<Stamped>(w, "source", [&, start](Capability& cap, Output<Stamped>& out) {
            if (w.index() != 0) return cap.drop();
            if (Transport::steady_now_ns() - start < kIdleMs * 1000000) return;
            out.give(cap, {key, Transport::steady_now_ns()});
            cap.drop();
          });
          auto x = exchange_by(s, "to-1", [](const Stamped& r) { return r.key; });
          sink(x, "sink", [&](Time, Stamped& r) {
            const int64_t d = Transport::steady_now_ns() - r.sent_ns;
            int64_t cur = worst.load();
            while (d > cur && !worst.compare_exchange_weak(cur, d)) {
            }
            got.fetch_add(1);
          });
        },
        nullptr, kRingCapacity, tr.get());
  }
  int rc = 0;
  if (tr->rank() == 1) {
    const double ms = static_cast<double>(worst.load()) / 1e6;
    std::printf("idle wake: %d of %d records, worst delivery %.3f ms after %lld ms idle\n",
                got.load(), kRounds, ms, static_cast<long long>(kIdleMs));
    if (got.load() != kRounds || ms >= kBoundMs) {
      std::printf("FAIL: expected %d records each within %lld ms\n", kRounds,
                  static_cast<long long>(kBoundMs));
      rc = 1;
    }
  }
  std::fflush(stdout);
  tr.reset();  // MPI_Finalize
  return rc;
}
