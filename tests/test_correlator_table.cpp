// The live message matching's flat table (pag/correlator_table.hpp) against a reference:
// the node-based map with a vector of halves per key that StreamingPag used before, on
// random sequences of halves with few keys (duplicates, receives before sends, halves
// that expire unmatched, keys retired and used again).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "pag/correlator_table.hpp"
#include "sanitized.hpp"

namespace snailtrail::test_correlator_table {
namespace {

using Half = CorrelatorTable::Half;
using Key = CorrelatorTable::Key;

// The matching as StreamingPag did it with std::unordered_map<Key, KeyState>.
class Reference {
 public:
  bool add(const Key& key, bool is_send, const Half& half, std::vector<IssueAt>& issues,
           Half& partner) {
    State& k = keys_[std::make_tuple(key.sender, key.receiver, key.correlator)];
    k.last_ts = std::max(k.last_ts, half.ts);
    auto count_duplicates = [&](uint32_t n, int64_t& first_ts) {
      if (n == 1) first_ts = half.ts;
      if (n == 2) issues.push_back({first_ts, Issue::duplicate_correlator});
      if (n >= 2) issues.push_back({half.ts, Issue::duplicate_correlator});
    };
    if (is_send) {
      count_duplicates(++k.n_send, k.first_send_ts);
      if (k.n_send == 1 && k.n_recv >= 2)
        for (int64_t t : k.recvs_before_send) issues.push_back({t, Issue::duplicate_correlator});
      k.recvs_before_send.clear();
      if (!k.recvs.empty()) {
        partner = k.recvs.front();
        k.recvs.erase(k.recvs.begin());
        return true;
      }
      k.sends.push_back(half);
    } else {
      if (k.n_send == 0) {
        if (++k.n_recv == 1) k.first_recv_ts = half.ts;
        k.recvs_before_send.push_back(half.ts);
      } else {
        count_duplicates(++k.n_recv, k.first_recv_ts);
      }
      if (!k.sends.empty()) {
        partner = k.sends.front();
        k.sends.erase(k.sends.begin());
        return true;
      }
      k.recvs.push_back(half);
    }
    return false;
  }
  void expire(int64_t end, bool closed_end, std::vector<IssueAt>& issues) {
    auto before_end = [&](int64_t t) { return t < end || (closed_end && t == end); };
    for (auto& [key, k] : keys_) {
      while (!k.sends.empty() && before_end(k.sends.front().ts)) {
        issues.push_back({k.sends.front().ts, Issue::unmatched_send});
        k.sends.erase(k.sends.begin());
      }
      while (!k.recvs.empty() && before_end(k.recvs.front().ts)) {
        issues.push_back({k.recvs.front().ts, Issue::unmatched_recv});
        k.recvs.erase(k.recvs.begin());
      }
    }
  }
  void retire(int64_t horizon) {
    std::erase_if(keys_, [&](const auto& kv) {
      return kv.second.sends.empty() && kv.second.recvs.empty() && kv.second.last_ts < horizon;
    });
  }
  size_t keys() const { return keys_.size(); }
  size_t open_halves() const {
    size_t n = 0;
    for (const auto& [key, k] : keys_) n += k.sends.size() + k.recvs.size();
    return n;
  }

 private:
  struct State {
    std::vector<Half> sends, recvs;
    uint32_t n_send = 0, n_recv = 0;
    int64_t last_ts = INT64_MIN;
    int64_t first_send_ts = 0, first_recv_ts = 0;
    std::vector<int64_t> recvs_before_send;
  };
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, State> keys_;
};

std::vector<std::pair<int64_t, int>> sorted(const std::vector<IssueAt>& issues) {
  std::vector<std::pair<int64_t, int>> out;
  for (const IssueAt& i : issues) out.emplace_back(i.ts, static_cast<int>(i.issue));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CorrelatorTable, MatchesTheReferenceOnRandomHalves) {
  const int traces = testing::random_inputs(300, 60);
  for (int seed = 0; seed < traces; ++seed) {
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    CorrelatorTable table;
    Reference ref;
    // Few workers and correlators: many keys are used more than once.
    const uint32_t workers = 1 + static_cast<uint32_t>(rng() % 3);
    const int64_t correlators = 1 + static_cast<int64_t>(rng() % (seed % 2 ? 8 : 400));
    int64_t horizon = 0;
    size_t pairs = 0;
    for (int step = 0; step < 600; ++step) {
      const uint64_t r = rng() % 100;
      std::vector<IssueAt> got, want;
      if (r < 4) {  // a window cut: what is before its end expires, then retires
        const int64_t end = horizon + static_cast<int64_t>(rng() % 30);
        const bool closed = rng() % 4 == 0;
        table.expire(end, closed, got);
        ref.expire(end, closed, want);
        if (!closed) {
          table.retire(end);
          ref.retire(end);
          horizon = end;
        }
      } else {
        const Key key{static_cast<uint32_t>(rng() % workers), static_cast<uint32_t>(rng() % workers),
                      static_cast<int64_t>(rng() % static_cast<uint64_t>(correlators))};
        const bool is_send = rng() % 2 == 0;
        const Half half{horizon + static_cast<int64_t>(rng() % 40), static_cast<uint32_t>(step),
                        static_cast<uint64_t>(step) * 7, static_cast<ActivityType>(rng() % 3)};
        Half p1{}, p2{};
        const bool m1 = table.add(key, is_send, half, got, p1);
        const bool m2 = ref.add(key, is_send, half, want, p2);
        ASSERT_EQ(m1, m2) << "seed " << seed << " step " << step;
        if (m1) {
          ++pairs;
          ASSERT_EQ(std::tie(p1.ts, p1.worker, p1.node, p1.type),
                    std::tie(p2.ts, p2.worker, p2.node, p2.type))
              << "seed " << seed << " step " << step;
        }
      }
      ASSERT_EQ(sorted(got), sorted(want)) << "seed " << seed << " step " << step;
      ASSERT_EQ(table.keys(), ref.keys()) << "seed " << seed << " step " << step;
      ASSERT_EQ(table.open_halves(), ref.open_halves()) << "seed " << seed << " step " << step;
    }
    EXPECT_GT(pairs, 0u) << "seed " << seed;
  }
}

// A hand-checked case: a receive twice before its send, a send matched, a correlator
// used again, a half expired unmatched, and a key gone after the horizon passed it.
TEST(CorrelatorTable, DuplicatesUnmatchedAndRetiredKeysByHand) {
  CorrelatorTable t;
  std::vector<IssueAt> issues;
  Half p{};
  const Key k{1, 2, 7};
  EXPECT_FALSE(t.add(k, false, {10, 1, 0, ActivityType::data_message}, issues, p));
  EXPECT_FALSE(t.add(k, false, {12, 1, 1, ActivityType::data_message}, issues, p));
  EXPECT_TRUE(issues.empty());  // repeated receives count only once the key has a send
  ASSERT_TRUE(t.add(k, true, {5, 0, 3, ActivityType::data_message}, issues, p));
  EXPECT_EQ(p.ts, 10);  // the first receive
  EXPECT_EQ(sorted(issues), (std::vector<std::pair<int64_t, int>>{{10, 3}, {12, 3}}));
  issues.clear();
  ASSERT_TRUE(t.add(k, true, {6, 0, 4, ActivityType::data_message}, issues, p));
  EXPECT_EQ(p.ts, 12);
  EXPECT_EQ(sorted(issues), (std::vector<std::pair<int64_t, int>>{{5, 3}, {6, 3}}));
  issues.clear();
  EXPECT_FALSE(t.add({2, 1, 7}, true, {20, 1, 2, ActivityType::data_message}, issues, p));
  EXPECT_EQ(t.open_halves(), 1u);
  t.expire(20, false, issues);
  EXPECT_TRUE(issues.empty());  // 20 is not before 20
  t.expire(20, true, issues);
  EXPECT_EQ(sorted(issues), (std::vector<std::pair<int64_t, int>>{{20, 0}}));
  EXPECT_EQ(t.keys(), 2u);
  t.retire(13);  // key k's last half was at 12
  EXPECT_EQ(t.keys(), 1u);
  issues.clear();
  EXPECT_FALSE(t.add(k, true, {30, 0, 9, ActivityType::data_message}, issues, p));
  EXPECT_TRUE(issues.empty());  // a fresh key: no duplicate
}

}  // namespace
}  // namespace snailtrail::test_correlator_table
