// Results must not depend on the number of threads: the parallel window pipeline and
// the parallel .snail reader against their single-threaded paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "bench/synthetic.hpp"
#include "output/writers.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_parallel {
namespace {

// Asserts that two PAGs are equal, array by array.
void expect_same_pag(const Pag& p, const Pag& one, unsigned threads) {
  ASSERT_EQ(p.worker_ids, one.worker_ids);
  ASSERT_EQ(p.worker_begin, one.worker_begin);
  ASSERT_EQ(p.event_begin, one.event_begin);
  ASSERT_EQ(p.operator_ids, one.operator_ids);
  ASSERT_EQ(p.first_ts, one.first_ts);
  ASSERT_EQ(p.last_ts, one.last_ts);
  ASSERT_TRUE(
      std::equal(p.node_ts.begin(), p.node_ts.end(), one.node_ts.begin(), one.node_ts.end()));
  ASSERT_TRUE(std::equal(p.edge_type.begin(), p.edge_type.end(), one.edge_type.begin(),
                         one.edge_type.end()));
  ASSERT_TRUE(
      std::equal(p.edge_op.begin(), p.edge_op.end(), one.edge_op.begin(), one.edge_op.end()));
  ASSERT_TRUE(std::equal(p.edge_instance.begin(), p.edge_instance.end(), one.edge_instance.begin(),
                         one.edge_instance.end()));
  ASSERT_TRUE(
      std::equal(p.event_ts.begin(), p.event_ts.end(), one.event_ts.begin(), one.event_ts.end()));
  ASSERT_EQ(p.messages.size(), one.messages.size());
  for (size_t i = 0; i < p.messages.size(); ++i) {  // field by field: structs have padding
    const Message &a = p.messages[i], &b = one.messages[i];
    ASSERT_TRUE(a.src_node == b.src_node && a.dst_node == b.dst_node && a.src_ts == b.src_ts &&
                a.dst_ts == b.dst_ts && a.src_worker == b.src_worker &&
                a.dst_worker == b.dst_worker && a.type == b.type)
        << "message " << i << ", " << threads << " threads";
  }
  ASSERT_EQ(p.issues.size(), one.issues.size());
  for (size_t i = 0; i < p.issues.size(); ++i) {
    ASSERT_EQ(p.issues[i].ts, one.issues[i].ts);
    ASSERT_EQ(p.issues[i].issue, one.issues[i].issue);
  }
}

// Every window rendered as JSONL plus its edge dump, concatenated in window order.
std::string render_all(const Trace& trace, const AnalysisOptions& opt, unsigned threads) {
  Pag pag = build_pag(trace, opt.pag);
  Names names(trace, pag);
  SummarySelection sel;
  std::string all;
  analyze_pag_parallel(
      pag, opt, threads,
      [&](const WindowView& v, RenderedWindow& r) {
        fmt::memory_buffer b;
        write_window_json(b, v.summary, names, sel);
        b.push_back('\n');
        write_edges_jsonl(b, v);
        r.text.assign(b.data(), b.size());
      },
      [&](RenderedWindow& r) { all += r.text; });
  return all;
}

std::string render_sequential(const Trace& trace, const AnalysisOptions& opt) {
  Pag pag = build_pag(trace, opt.pag);
  Names names(trace, pag);
  SummarySelection sel;
  std::string all;
  analyze_pag(pag, opt, [&](const WindowView& v) {
    fmt::memory_buffer b;
    write_window_json(b, v.summary, names, sel);
    b.push_back('\n');
    write_edges_jsonl(b, v);
    all.append(b.data(), b.size());
  });
  return all;
}

TEST(Parallel, WindowPipelineIsBitIdenticalForAnyThreadCount) {
  bench::SyntheticOptions so;
  so.duration_ns = 2'000'000'000;
  so.workers = 12;
  Trace trace = bench::make_synthetic_trace(so);
  for (int64_t width : {int64_t{0}, int64_t{1'000'000}, int64_t{7'300'000}, int64_t{250'000'000}}) {
    AnalysisOptions opt;
    opt.windows.width_ns = width;
    const std::string want = render_sequential(trace, opt);
    ASSERT_FALSE(want.empty());
    for (unsigned threads : {1u, 2u, 3u, 5u})
      ASSERT_EQ(render_all(trace, opt, threads), want)
          << "width " << width << ", threads " << threads;
    // Large windows compute edge CPs, top-k and Property 2 on a second thread: force it.
    AnalysisOptions split = opt;
    split.summary.split_min_nodes = 0;
    ASSERT_EQ(render_sequential(trace, split), want) << "width " << width << ", split";
  }
}

// AnalysisOptions::path_counts off (analyze without --dump-edges) leaves the combined
// path counts of segmented windows empty and changes no summary: the same JSON as on.
TEST(Parallel, PathCountsOffChangeNoSummary) {
  bench::SyntheticOptions so;
  so.duration_ns = 2'000'000'000;
  so.workers = 12;
  Trace trace = bench::make_synthetic_trace(so);
  const Pag pag = build_pag(trace, {});
  const Names names(trace, pag);
  for (int64_t width : {int64_t{0}, int64_t{7'300'000}, int64_t{250'000'000}}) {
    std::string with_counts, without;
    size_t segmented = 0, left_empty = 0;
    for (bool counts : {true, false}) {
      AnalysisOptions opt;
      opt.windows.width_ns = width;
      opt.path_counts = counts;
      analyze_pag(pag, opt, [&](const WindowView& v) {
        fmt::memory_buffer b;
        write_window_json(b, v.summary, names, SummarySelection{});
        (counts ? with_counts : without).append(b.data(), b.size());
        if (counts || v.cp.segments < 2) return;
        ++segmented;
        left_empty += v.cp.forward.empty() && v.cp.backward.empty();
      });
    }
    ASSERT_FALSE(with_counts.empty());
    EXPECT_EQ(without, with_counts) << "width " << width;
    EXPECT_GT(segmented, 0u) << "width " << width;  // the case this is about occurs
    EXPECT_EQ(left_empty, segmented) << "width " << width;
  }
}

TEST(Parallel, SnailReaderFastPathMatchesAndNamesTheBadRecord) {
  bench::SyntheticOptions so;
  so.duration_ns = 40'000'000'000;  // > 1 M events: the multi-threaded path
  so.workers = 48;
  Trace trace = bench::make_synthetic_trace(so);
  ASSERT_GT(trace.events.size(), size_t{1} << 20);
  SnailWriteOptions v1;
  v1.version = 1;  // events up to the end of the file (no index block after them)
  std::string bytes = to_snail(trace, v1);
  auto span = [](const std::string& s) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  Trace back = parse_snail(span(bytes), "big.snail");
  ASSERT_EQ(back.events.size(), trace.events.size());
  ASSERT_EQ(
      std::memcmp(back.events.data(), trace.events.data(), trace.events.size() * sizeof(Event)), 0);
  EXPECT_EQ(back.worker_names, trace.worker_names);
  EXPECT_EQ(back.operator_names, trace.operator_names);
  EXPECT_EQ(to_jsonl(back), to_jsonl(trace));
  // The reader counted workers and operators on the fly, as the PAG builder would, and
  // the PAG built from its census is the PAG built without one.
  ASSERT_TRUE(back.census.has_value());
  ASSERT_FALSE(trace.census.has_value());
  CensusBuilder counter;
  for (const Event& e : trace.events) counter.add(e);
  const TraceCensus want = counter.finish();
  EXPECT_EQ(back.census->events, want.events);
  EXPECT_EQ(back.census->operators, want.operators);
  ASSERT_EQ(back.census->workers.size(), want.workers.size());
  for (size_t i = 0; i < want.workers.size(); ++i) {
    EXPECT_EQ(back.census->workers[i].first, want.workers[i].first);
    EXPECT_EQ(back.census->workers[i].second.events, want.workers[i].second.events);
    EXPECT_EQ(back.census->workers[i].second.sends, want.workers[i].second.sends);
    EXPECT_EQ(back.census->workers[i].second.recvs, want.workers[i].second.recvs);
  }
  expect_same_pag(build_pag(back), build_pag(trace), 0);

  // Corrupt two records; the error names the first in file order, whichever thread saw it.
  const size_t bad1 = trace.events.size() * 3 / 4, bad2 = trace.events.size() / 3;
  auto offset_of = [&](size_t record) {
    // Records are in blocks of 65536 after a 16-byte header, a metadata block and block headers.
    const size_t per_block = 1u << 16;
    const size_t meta_end = bytes.size() - trace.events.size() * sizeof(Event) -
                            ((trace.events.size() + per_block - 1) / per_block) * 16;
    return meta_end + (record / per_block + 1) * 16 + record * sizeof(Event);
  };
  std::string broken = bytes;
  broken[offset_of(bad1) + 32] = 99;  // activity out of range
  broken[offset_of(bad2) + 33] = 7;   // event kind out of range
  try {
    parse_snail(span(broken), "big.snail");
    FAIL() << "expected TraceError";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("byte " + std::to_string(offset_of(bad2))), std::string::npos) << what;
    EXPECT_NE(what.find("event record " + std::to_string(bad2)), std::string::npos) << what;
  }
}

// Hand-counted: small and large worker ids, operators, merged from two halves.
TEST(Parallel, CensusCountsWorkersMessagesAndOperators) {
  auto event = [](uint32_t worker, EventKind kind, std::optional<uint32_t> op) {
    Event e;
    e.worker = worker;
    e.kind = kind;
    if (op) {
      e.op = *op;
      e.flags |= kHasOperator;
    }
    return e;
  };
  const std::vector<Event> events = {
      event(7, EventKind::start, 3),        event(4'000'000'000u, EventKind::send, {}),
      event(7, EventKind::end, 3),          event(2, EventKind::recv, {}),
      event(7, EventKind::send, {}),        event(4'000'000'000u, EventKind::start, 1u << 30),
      event(2, EventKind::start, 1u << 30), event(2, EventKind::recv, {}),
  };
  CensusBuilder first, second;
  for (size_t i = 0; i < events.size(); ++i) (i < 3 ? first : second).add(events[i]);
  first.merge(second);
  const TraceCensus c = first.finish();
  EXPECT_EQ(c.events, 8u);
  EXPECT_EQ(c.operators, (std::vector<uint32_t>{3, 1u << 30}));
  ASSERT_EQ(c.workers.size(), 3u);
  EXPECT_EQ(c.workers[0].first, 2u);
  EXPECT_EQ(c.workers[0].second.events, 3u);
  EXPECT_EQ(c.workers[0].second.sends, 0u);
  EXPECT_EQ(c.workers[0].second.recvs, 2u);
  EXPECT_EQ(c.workers[1].first, 7u);
  EXPECT_EQ(c.workers[1].second.events, 3u);
  EXPECT_EQ(c.workers[1].second.sends, 1u);
  EXPECT_EQ(c.workers[2].first, 4'000'000'000u);
  EXPECT_EQ(c.workers[2].second.events, 2u);
  EXPECT_EQ(c.workers[2].second.sends, 1u);
}

// The PAG built by several threads (each scanning its share of the workers) is the one
// built by one; so is the error for a worker going back in time.
TEST(Parallel, PagBuildIsIdenticalForAnyThreadCount) {
  bench::SyntheticOptions so;
  so.duration_ns = 3'000'000'000;
  so.workers = 24;
  Trace trace = bench::make_synthetic_trace(so);
  auto build = [&](unsigned threads) {
    PagOptions o;
    o.threads = threads;
    return build_pag(trace, o);
  };
  const Pag one = build(1);
  for (unsigned threads : {2u, 3u, 7u}) {
    const Pag p = build(threads);
    expect_same_pag(p, one, threads);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Two workers go back in time; the error names the first offending event in the file.
  Trace bad = trace;
  size_t first = 0, second = 0;
  for (size_t i = bad.events.size() / 2, found = 0; i < bad.events.size() && found < 2; ++i)
    if (bad.events[i].worker == (found == 0 ? 20u : 3u) && !bad.events[i].is_message()) {
      bad.events[i].ts -= 50'000'000;
      (found == 0 ? first : second) = i;
      ++found;
    }
  ASSERT_LT(first, second);
  std::string want;
  for (unsigned threads : {1u, 2u, 4u}) {
    PagOptions o;
    o.threads = threads;
    try {
      build_pag(bad, o);
      FAIL() << "expected TraceError";
    } catch (const TraceError& e) {
      if (want.empty()) want = e.what();
      EXPECT_EQ(std::string(e.what()), want) << threads << " threads";
    }
  }
  EXPECT_NE(want.find("record " + std::to_string(first)), std::string::npos) << want;
}

// A messy trace for the message join: workers with activities and gaps, messages between
// any two (itself included) with correlators out of order, some used twice, some halves
// missing or without correlator, receipts before their send; in time order.
Trace messy_trace(std::mt19937_64& rng) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const uint32_t W = static_cast<uint32_t>(uni(2, 9));
  std::vector<Event> ev;
  auto event = [&](uint32_t w, int64_t ts, ActivityType a, EventKind k) {
    Event e;
    e.ts = ts;
    e.worker = w * 3 + 1;
    e.activity = a;
    e.kind = k;
    return e;
  };
  for (uint32_t w = 0; w < W; ++w)
    for (int64_t t = uni(0, 100); t < 200'000;) {
      const int64_t len = uni(1, 3'000);
      const auto a = static_cast<ActivityType>(uni(0, 3));
      ev.push_back(event(w, t, a, EventKind::start));
      ev.push_back(event(w, t + len, a, EventKind::end));
      t += len + (uni(0, 3) == 0 ? uni(0, 5'000) : 0);
    }
  const int64_t messages = uni(50, 2'000);
  std::vector<int64_t> corr(static_cast<size_t>(messages));
  for (int64_t k = 0; k < messages; ++k) corr[static_cast<size_t>(k)] = k;
  for (size_t b = 0; b < corr.size(); b += 30)  // reordered in blocks of 30
    std::shuffle(corr.begin() + static_cast<std::ptrdiff_t>(b),
                 corr.begin() + static_cast<std::ptrdiff_t>(std::min(b + 30, corr.size())), rng);
  for (int64_t k = 0; k < messages; ++k) {
    const uint32_t s = static_cast<uint32_t>(uni(0, W - 1)),
                   r = static_cast<uint32_t>(uni(0, W - 1));
    const int64_t ts = uni(0, 200'000), tr = uni(0, 9) == 0 ? ts - uni(0, 500) : ts + uni(0, 4'000);
    const int64_t c =
        uni(0, 20) == 0 ? corr[static_cast<size_t>(uni(0, k))] : corr[static_cast<size_t>(k)];
    Event se = event(s, ts, ActivityType::data_message, EventKind::send);
    Event re = event(r, tr, ActivityType::data_message, EventKind::recv);
    se.remote = r * 3 + 1;
    re.remote = s * 3 + 1;
    se.flags = re.flags = kHasRemote;
    if (uni(0, 40) != 0) {
      se.correlator = re.correlator = c;
      se.flags |= kHasCorrelator;
      re.flags |= kHasCorrelator;
    }
    if (uni(0, 15) != 0) ev.push_back(se);
    if (uni(0, 15) != 0) ev.push_back(re);
  }
  std::stable_sort(ev.begin(), ev.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  Trace t;
  t.events.resize(ev.size());
  std::copy(ev.begin(), ev.end(), t.events.begin());
  return t;
}

// The PAG of messy traces (reordered and repeated correlators, unmatched halves) is the
// same for 1, 2, 3 and 4 threads (asked for, so every stage splits however small the
// trace: worker scan, scatter, partitioned join, message sort), and its messages are
// those of a brute-force join: per (sender, receiver, correlator) the k-th send in time
// order with the k-th receive, less receipts before their send and self-loops.
TEST(Parallel, PagOfMessyTracesIsIdenticalForAnyThreadCountAndMatchesABruteForceJoin) {
  std::mt19937_64 rng(39);
  for (int round = 0; round < 12; ++round) {
    const Trace trace = messy_trace(rng);
    PagOptions o;
    o.threads = 1;
    const Pag one = build_pag(trace, o);
    for (unsigned threads : {2u, 3u, 4u}) {
      o.threads = threads;
      expect_same_pag(build_pag(trace, o), one, threads);
      if (::testing::Test::HasFatalFailure()) return;
    }
    // Brute force: the halves per key in file (= time) order, paired in order.
    using Key = std::tuple<uint32_t, uint32_t, int64_t>;
    std::map<Key, std::pair<std::vector<const Event*>, std::vector<const Event*>>> keys;
    for (const Event& e : trace.events) {
      if (!e.is_message() || !e.has(kHasCorrelator)) continue;
      if (e.kind == EventKind::send)
        keys[{e.worker, e.remote, e.correlator}].first.push_back(&e);
      else
        keys[{e.remote, e.worker, e.correlator}].second.push_back(&e);
    }
    std::vector<std::tuple<int64_t, int64_t, uint32_t, uint32_t>> want, got;
    for (const auto& [key, halves] : keys)
      for (size_t k = 0; k < std::min(halves.first.size(), halves.second.size()); ++k) {
        const Event &s = *halves.first[k], &r = *halves.second[k];
        if (r.ts < s.ts || (s.worker == r.worker && s.ts == r.ts)) continue;
        want.emplace_back(s.ts, r.ts, s.worker, r.worker);
      }
    for (const Message& m : one.messages)
      got.emplace_back(m.src_ts, m.dst_ts, one.worker_ids[m.src_worker],
                       one.worker_ids[m.dst_worker]);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << "round " << round;
    EXPECT_FALSE(want.empty());
  }
}

// The first failure, in a worker (render) or on the consuming thread, stops every thread
// and reaches the caller; the windows consumed before it came in order.
TEST(Parallel, WindowPipelineStopsAtTheFirstFailure) {
  bench::SyntheticOptions so;
  so.duration_ns = 500'000'000;
  so.workers = 4;
  const Trace trace = bench::make_synthetic_trace(so);
  AnalysisOptions opt;
  opt.windows.width_ns = 5'000'000;  // 100 windows
  const Pag pag = build_pag(trace, opt.pag);
  for (unsigned threads : {1u, 3u}) {
    std::vector<uint64_t> consumed;
    EXPECT_THROW(analyze_pag_parallel(
                     pag, opt, threads, [](const WindowView&, RenderedWindow&) {},
                     [&](RenderedWindow& r) {
                       if (consumed.size() == 40) throw std::runtime_error("consumer");
                       consumed.push_back(r.summary.index);
                     }),
                 std::runtime_error)
        << threads;
    ASSERT_EQ(consumed.size(), 40u) << threads;
    for (size_t i = 0; i < consumed.size(); ++i) EXPECT_EQ(consumed[i], i) << threads;
    try {
      analyze_pag_parallel(
          pag, opt, threads,
          [](const WindowView& v, RenderedWindow&) {
            if (v.summary.index == 70) throw std::invalid_argument("render");
          },
          [](RenderedWindow&) {});
      ADD_FAILURE() << "no exception, threads " << threads;
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), "render");
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_parallel
