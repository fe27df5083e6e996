// Megaphone's control stream (src/megaphone/core.hpp, issue 35): an update whose time
// differs from the time it is given at, or whose worker or bin is out of range, stops the
// job with a clear error instead of splitting records from their state or indexing past
// the operators' tables.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "flow/runtime.hpp"
#include "megaphone/megaphone.hpp"

namespace mp = snailtrail::megaphone;
namespace flow = snailtrail::flow;
using flow::Time;

namespace {

// Two workers, 2^3 bins; worker 0's control source gives `u` at time `given_at` while
// both workers count 200 records over times 0..19. Returns the error, "" if none, and
// the records counted.
std::pair<std::string, uint64_t> run_with_update(mp::ControlUpdate u, Time given_at) {
  std::atomic<uint64_t> counted{0};
  try {
    flow::run_dataflow(2, [&](flow::Worker& w) {
      auto data = flow::source<uint64_t>(
          w, "source",
          [i = uint64_t{0}](flow::Capability& cap, flow::Output<uint64_t>& out) mutable {
            for (int n = 0; n < 10 && i < 100; ++n, ++i) {
              if (i / 5 != cap.time()) cap.downgrade(i / 5);
              out.give(cap, i);
            }
            if (i == 100) cap.drop();
          });
      auto control = flow::source<mp::ControlUpdate>(
          w, "control",
          [u, given_at, me = w.index()](flow::Capability& cap,
                                        flow::Output<mp::ControlUpdate>& out) {
            if (me == 0) {
              cap.downgrade(given_at);
              out.give(cap, u);
            }
            cap.drop();
          });
      mp::Options opts;
      opts.log_bins = 3;
      mp::stateful_unary<uint64_t, char>(
          data, control, "count", opts, [](uint64_t k) { return flow::mix64(k); },
          [&](Time, uint64_t, uint64_t& st, mp::Later<uint64_t>&, flow::Session<char>&) {
            ++st;
            counted.fetch_add(1);
          },
          [](uint32_t, uint64_t&) {});
    });
  } catch (const std::exception& e) {
    return {e.what(), counted.load()};
  }
  return {"", counted.load()};
}

TEST(MegaphoneControl, AnUpdateInRangeAtItsOwnTimeRuns) {
  const auto [error, counted] = run_with_update({7, 5, 1}, 7);
  EXPECT_EQ(error, "");
  EXPECT_EQ(counted, 200u);  // both workers' 100 records, once each
}

TEST(MegaphoneControl, AnUpdateGivenAtAnotherTimeIsRefused) {
  for (const auto& [said, given] : {std::pair<Time, Time>{3, 7}, {7, 3}}) {
    const std::string error = run_with_update({said, 5, 1}, given).first;
    EXPECT_NE(error.find("control update of bin 5 says time " + std::to_string(said) +
                         " but was given at time " + std::to_string(given)),
              std::string::npos)
        << error;
  }
}

TEST(MegaphoneControl, AnUpdateNamingAWorkerOutOfRangeIsRefused) {
  for (uint32_t worker : {2u, 1000u, ~0u}) {
    const std::string error = run_with_update({4, 1, worker}, 4).first;
    EXPECT_NE(error.find("names worker " + std::to_string(worker) + " of 2 (workers 0 to 1)"),
              std::string::npos)
        << error;
  }
}

TEST(MegaphoneControl, AnUpdateNamingABinOutOfRangeIsRefused) {
  const std::string error = run_with_update({4, 8, 0}, 4).first;
  EXPECT_NE(error.find("control update of bin 8: no such bin (8 bins)"), std::string::npos)
      << error;
}

}  // namespace
