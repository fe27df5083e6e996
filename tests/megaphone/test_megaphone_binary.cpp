// Megaphone's binary operator (stateful_binary): two record inputs sharing bins and state,
// random migration plans at random times against a plain single-threaded oracle; every
// record folded exactly once, per bin in timestamp order, on the worker the plan names;
// wake-ups (timers kept in the state) travel with their bin; the new codecs round-trip.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "flow/runtime.hpp"
#include "megaphone/megaphone.hpp"
#include "sanitized.hpp"  // tests/

namespace mp = snailtrail::megaphone;
namespace flow = snailtrail::flow;
using flow::Time;

namespace {

// Input a: (key, value) adds value to the key's sum. Input b: (key) asks for the sum, and
// sets a timer `delay` later that asks again.
struct ARec {
  uint64_t key, value;
};
struct BRec {
  uint64_t key;
};
// Output: (time, key, sum of the key's a-values at times <= time, kind 1 = b, 2 = timer).
struct Answer {
  Time t;
  uint64_t key, sum, kind;
  auto operator<=>(const Answer&) const = default;
};

struct BinState {
  std::map<uint64_t, uint64_t> sums;
  std::map<Time, std::vector<uint64_t>> timers;
  Time last = 0;  // the last time folded (part of the migrated state)
  uint64_t folds = 0;
};

}  // namespace

namespace snailtrail::megaphone {
template <>
struct Codec<BinState> {
  static void encode(const BinState& s, std::vector<char>& out) {
    Codec<std::map<uint64_t, uint64_t>>::encode(s.sums, out);
    Codec<std::map<Time, std::vector<uint64_t>>>::encode(s.timers, out);
    Codec<Time>::encode(s.last, out);
    Codec<uint64_t>::encode(s.folds, out);
  }
  static void decode(const char*& p, const char* end, BinState& s) {
    Codec<std::map<uint64_t, uint64_t>>::decode(p, end, s.sums);
    Codec<std::map<Time, std::vector<uint64_t>>>::decode(p, end, s.timers);
    Codec<Time>::decode(p, end, s.last);
    Codec<uint64_t>::decode(p, end, s.folds);
  }
};
}  // namespace snailtrail::megaphone

namespace {

struct Scenario {
  uint32_t workers = 2;
  uint32_t log_bins = 3;
  Time delay = 0;  // 0: no timers
  // Per worker, time-sorted: (time, key, value); value 0 marks a b record.
  std::vector<std::vector<std::tuple<Time, uint64_t, uint64_t>>> input;
  std::vector<mp::ControlUpdate> plan;
  std::vector<size_t> per_round;
  uint32_t control_every = 1;
  std::vector<uint32_t> initial;  // Options::initial (empty: bin b on worker b % W)
};

uint32_t initial_at(const Scenario& s, uint32_t bin) {
  return s.initial.empty() ? mp::initial_owner(bin, s.workers) : s.initial[bin];
}

Scenario random_scenario(std::mt19937_64& rng, bool with_plan) {
  Scenario s;
  s.workers = 1 + static_cast<uint32_t>(rng() % 4);
  s.log_bins = static_cast<uint32_t>(rng() % 6);
  const uint64_t keys = 1 + rng() % 100;
  const Time horizon = 50 + rng() % 200;
  s.input.resize(s.workers);
  for (auto& in : s.input) {
    const size_t n = rng() % 300;
    Time t = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 4 == 0) t += rng() % 5;
      in.emplace_back(std::min(t, horizon), rng() % keys, rng() % 3 == 0 ? 0 : 1 + rng() % 1000);
    }
  }
  if (with_plan) {
    const size_t updates = rng() % 40;
    for (size_t i = 0; i < updates; ++i)
      s.plan.push_back({rng() % (horizon + 10), static_cast<uint32_t>(rng() % (1u << s.log_bins)),
                        static_cast<uint32_t>(rng() % s.workers)});
    std::sort(
        s.plan.begin(), s.plan.end(),
        [](const mp::ControlUpdate& a, const mp::ControlUpdate& b) { return a.time < b.time; });
  }
  s.delay = rng() % 3 == 0 ? 0 : 1 + rng() % 30;
  for (uint32_t w = 0; w < s.workers; ++w) s.per_round.push_back(1 + rng() % 64);
  s.control_every = 1 + static_cast<uint32_t>(rng() % 16);
  return s;
}

// The plain loop: each b record at t answers sum(a-values of its key at times <= t) at t,
// and again at t + delay with the sum at times <= t + delay.
std::multiset<Answer> oracle(const Scenario& s) {
  std::vector<std::tuple<Time, uint64_t, uint64_t>> all;
  for (const auto& in : s.input) all.insert(all.end(), in.begin(), in.end());
  auto sum_at = [&](uint64_t key, Time t) {
    uint64_t sum = 0;
    for (const auto& [ta, k, v] : all)
      if (k == key && v > 0 && ta <= t) sum += v;
    return sum;
  };
  std::multiset<Answer> out;
  std::set<std::pair<Time, uint64_t>> timers;  // one answer per (time, key)
  for (const auto& [t, k, v] : all) {
    if (v != 0) continue;
    out.insert({t, k, sum_at(k, t), 1});
    if (s.delay) timers.insert({t + s.delay, k});
  }
  for (const auto& [t, k] : timers) out.insert({t, k, sum_at(k, t), 2});
  return out;
}

uint32_t config_at(const Scenario& s, Time t, uint32_t bin) {
  uint32_t w = initial_at(s, bin);
  for (const auto& u : s.plan)
    if (u.time <= t && u.bin == bin) w = u.worker;
  return w;
}

struct Outcome {
  std::multiset<Answer> answers;
  uint64_t a_folded = 0, b_folded = 0, bins_sent = 0, order_violations = 0, misplaced = 0;
  uint64_t done_folds = 0;
  uint64_t early_records = 0, frontier_regressions = 0;
};

Outcome run(const Scenario& s) {
  Outcome o;
  std::mutex mu;
  std::atomic<uint64_t> na{0}, nb{0}, sent{0}, violations{0}, misplaced{0}, done_folds{0};
  std::vector<flow::WorkerCounters> counters;
  flow::run_dataflow(
      s.workers,
      [&](flow::Worker& w) {
        using In = std::tuple<Time, uint64_t, uint64_t>;
        const auto* in = &s.input[w.index()];
        const size_t speed = s.per_round[w.index()];
        auto data = flow::source<In>(
            w, "source",
            [in, speed, i = size_t{0}](flow::Capability& cap, flow::Output<In>& out) mutable {
              for (size_t n = 0; n < speed && i < in->size(); ++n, ++i) {
                const Time t = std::get<0>((*in)[i]);
                if (t != cap.time()) cap.downgrade(t);
                out.give(cap, (*in)[i]);
              }
              if (i == in->size()) cap.drop();
            });
        auto as = flow::flat_map<ARec>(data, "as", [](const In& r, auto&& emit) {
          if (std::get<2>(r) != 0) emit(ARec{std::get<1>(r), std::get<2>(r)});
        });
        auto bs = flow::flat_map<BRec>(data, "bs", [](const In& r, auto&& emit) {
          if (std::get<2>(r) == 0) emit(BRec{std::get<1>(r)});
        });
        const auto* plan = &s.plan;
        auto control = flow::source<mp::ControlUpdate>(
            w, "control",
            [plan, every = s.control_every, me = w.index(), i = size_t{0}, round = uint32_t{0}](
                flow::Capability& cap, flow::Output<mp::ControlUpdate>& out) mutable {
              if (me != 0) {
                cap.drop();
                return;
              }
              if (++round % every != 0) return;
              if (i < plan->size()) {
                const auto& u = (*plan)[i++];
                if (u.time != cap.time()) cap.downgrade(u.time);
                out.give(cap, u);
              }
              if (i == plan->size()) cap.drop();
            });
        mp::Options opts;
        opts.log_bins = s.log_bins;
        opts.initial = s.initial;
        opts.on_bin_sent = [&](uint32_t, uint64_t bytes) {
          EXPECT_GT(bytes, 0u);
          sent.fetch_add(1);
        };
        const Time delay = s.delay;
        auto out = mp::stateful_binary<BinState, Answer>(
            as, bs, control, "join", opts, [](const ARec& r) { return flow::mix64(r.key); },
            [](const BRec& r) { return flow::mix64(r.key); },
            [&, delay, me = w.index()](Time t, uint32_t bin, std::vector<ARec>& va,
                                       std::vector<BRec>& vb, BinState& st, mp::Wake& wake,
                                       flow::Session<Answer>& out) {
              if (config_at(s, t, bin) != me) misplaced.fetch_add(1);
              if (st.folds > 0 && st.last >= t) violations.fetch_add(1);
              st.last = t;
              ++st.folds;
              na.fetch_add(va.size());
              nb.fetch_add(vb.size());
              for (const ARec& r : va) st.sums[r.key] += r.value;
              for (const BRec& r : vb) {
                auto it = st.sums.find(r.key);
                out.give(Answer{t, r.key, it == st.sums.end() ? 0 : it->second, 1});
                if (delay) {
                  auto& keys = st.timers[t + delay];
                  if (keys.empty()) wake.at(t + delay);
                  keys.push_back(r.key);
                }
              }
              auto due = st.timers.find(t);
              if (due != st.timers.end()) {
                std::set<uint64_t> keys(due->second.begin(), due->second.end());
                for (uint64_t k : keys) {
                  auto it = st.sums.find(k);
                  out.give(Answer{t, k, it == st.sums.end() ? 0 : it->second, 2});
                }
                st.timers.erase(due);
              }
              if (!st.timers.empty() && st.timers.begin()->first < t) violations.fetch_add(1);
            },
            [&](uint32_t, BinState& st) {
              done_folds.fetch_add(st.folds);
              if (!st.timers.empty()) violations.fetch_add(1);  // a timer never woke
            });
        flow::sink(out, "collect", [&](Time t, const Answer& a) {
          EXPECT_EQ(t, a.t);
          std::lock_guard<std::mutex> lock(mu);
          o.answers.insert(a);
        });
      },
      &counters);
  o.a_folded = na;
  o.b_folded = nb;
  o.bins_sent = sent;
  o.order_violations = violations;
  o.misplaced = misplaced;
  o.done_folds = done_folds;
  for (const auto& c : counters) {
    o.early_records += c.early_records;
    o.frontier_regressions += c.frontier_regressions;
  }
  return o;
}

bool plan_moves_something(const Scenario& s) {
  std::vector<uint32_t> owner(1u << s.log_bins);
  for (uint32_t b = 0; b < owner.size(); ++b) owner[b] = initial_at(s, b);
  for (const auto& u : s.plan)
    if (owner[u.bin] != u.worker) return true;
  return false;
}

}  // namespace

TEST(MegaphoneBinary, RandomPlansAtRandomTimesMatchThePlainLoopExactlyOnce) {
  std::mt19937_64 rng(17);
  int moved = 0, with_timers = 0;
  const int iters = snailtrail::testing::random_inputs(100, 50);
  for (int iter = 0; iter < iters; ++iter) {
    const Scenario s = random_scenario(rng, true);
    SCOPED_TRACE(::testing::Message()
                 << "iteration " << iter << ": " << s.workers << " workers, 2^" << s.log_bins
                 << " bins, " << s.plan.size() << " updates, delay " << s.delay);
    uint64_t a = 0, b = 0;
    for (const auto& in : s.input)
      for (const auto& r : in) (std::get<2>(r) ? a : b) += 1;
    const Outcome got = run(s);
    EXPECT_EQ(got.answers, oracle(s));
    EXPECT_EQ(got.a_folded, a);  // exactly once
    EXPECT_EQ(got.b_folded, b);
    EXPECT_EQ(got.order_violations, 0u);
    EXPECT_EQ(got.misplaced, 0u);
    EXPECT_EQ(got.early_records, 0u);
    EXPECT_EQ(got.frontier_regressions, 0u);
    if (plan_moves_something(s)) {
      EXPECT_GT(got.bins_sent, 0u);
      ++moved;
    }
    if (s.delay && b > 0) ++with_timers;
    Scenario still = s;
    still.plan.clear();
    const Outcome base = run(still);
    EXPECT_EQ(base.answers, got.answers);
    EXPECT_EQ(base.bins_sent, 0u);
    EXPECT_EQ(base.done_folds, got.done_folds);  // one fold per (time, bin), wherever it is
  }
  EXPECT_GT(moved, iters * 2 / 5);
  EXPECT_GT(with_timers, iters * 2 / 5);
}

TEST(MegaphoneBinary, AnInitialConfigurationPlacesTheBins) {
  // Options::initial (the closed loop starts on a subset of the workers): every (time,
  // bin) folded on the worker it names until a migration moves the bin, with migrations
  // and without.
  std::mt19937_64 rng(29);
  int differs = 0;
  for (int iter = 0; iter < 30; ++iter) {
    Scenario s = random_scenario(rng, iter % 2 == 0);
    s.initial.resize(size_t{1} << s.log_bins);
    for (auto& w : s.initial) w = static_cast<uint32_t>(rng() % s.workers);
    for (uint32_t b = 0; b < s.initial.size(); ++b)
      differs += s.initial[b] != mp::initial_owner(b, s.workers);
    SCOPED_TRACE(::testing::Message() << "iteration " << iter << ": " << s.workers << " workers, 2^"
                                      << s.log_bins << " bins");
    const Outcome got = run(s);
    EXPECT_EQ(got.answers, oracle(s));
    EXPECT_EQ(got.misplaced, 0u);
    EXPECT_EQ(got.order_violations, 0u);
  }
  EXPECT_GT(differs, 20);  // the configurations are not the default one
}

TEST(MegaphoneBinary, WakeUpsTravelWithTheirBin) {
  // One bin moved back and forth between two workers while every b record has set a timer
  // far in the future: the wake-ups are pending at each migration.
  Scenario s;
  s.workers = 2;
  s.log_bins = 0;
  s.delay = 100;
  s.input.resize(2);
  for (Time t = 0; t < 60; ++t) s.input[t % 2].emplace_back(t, t % 7, t % 3 == 0 ? 0 : t + 1);
  s.plan = {{10, 0, 1}, {30, 0, 0}, {50, 0, 1}, {120, 0, 0}};
  s.per_round = {3, 5};
  const Outcome got = run(s);
  EXPECT_EQ(got.answers, oracle(s));
  size_t timers = 0;
  for (const Answer& a : got.answers) timers += a.kind == 2;
  EXPECT_EQ(timers, 20u);  // b records at t = 0, 3, ..., 57: timers at 100 ... 157
  EXPECT_EQ(got.bins_sent, 4u);
  EXPECT_EQ(got.order_violations, 0u);
  EXPECT_EQ(got.misplaced, 0u);
}

TEST(MegaphoneBinary, EitherKeepsBothRecordTypes) {
  using E = mp::Either<ARec, BRec>;
  static_assert(std::is_trivially_copyable_v<E>);
  const E a = E::of_a(ARec{7, 9});
  const E b = E::of_b(BRec{11});
  EXPECT_EQ(a.which, 0);
  EXPECT_EQ(a.a().key, 7u);
  EXPECT_EQ(a.a().value, 9u);
  EXPECT_EQ(b.which, 1);
  EXPECT_EQ(b.b().key, 11u);
}

TEST(MegaphoneBinary, ContainerCodecsRoundTripAndRejectTruncation) {
  BinState st;
  st.sums = {{1, 10}, {5, 50}, {~uint64_t{0}, 1}};
  st.timers = {{3, {1, 2, 3}}, {9, {}}, {100, {4}}};
  st.last = 42;
  st.folds = 7;
  std::vector<char> buf;
  mp::Codec<BinState>::encode(st, buf);
  std::deque<uint64_t> dq = {4, 5, 6};
  std::set<uint64_t> set = {3, 1, 2};
  std::vector<std::vector<uint64_t>> vv = {{1}, {}, {2, 3}};
  mp::Codec<std::deque<uint64_t>>::encode(dq, buf);
  mp::Codec<std::set<uint64_t>>::encode(set, buf);
  mp::Codec<std::vector<std::vector<uint64_t>>>::encode(vv, buf);
  const char* p = buf.data();
  const char* end = buf.data() + buf.size();
  BinState st2;
  std::deque<uint64_t> dq2;
  std::set<uint64_t> set2;
  std::vector<std::vector<uint64_t>> vv2;
  mp::Codec<BinState>::decode(p, end, st2);
  mp::Codec<std::deque<uint64_t>>::decode(p, end, dq2);
  mp::Codec<std::set<uint64_t>>::decode(p, end, set2);
  mp::Codec<std::vector<std::vector<uint64_t>>>::decode(p, end, vv2);
  EXPECT_EQ(p, end);
  EXPECT_EQ(st2.sums, st.sums);
  EXPECT_EQ(st2.timers, st.timers);
  EXPECT_EQ(st2.last, 42u);
  EXPECT_EQ(st2.folds, 7u);
  EXPECT_EQ(dq2, dq);
  EXPECT_EQ(set2, set);
  EXPECT_EQ(vv2, vv);
  // Every truncation of the state's encoding is rejected.
  std::vector<char> one;
  mp::Codec<BinState>::encode(st, one);
  for (size_t cut = 0; cut < one.size(); ++cut) {
    const char* q = one.data();
    BinState bad;
    EXPECT_THROW(mp::Codec<BinState>::decode(q, one.data() + cut, bad), std::runtime_error)
        << "cut at " << cut;
  }
}
