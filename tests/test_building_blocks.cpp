// Unit tests of building blocks that the end-to-end tests only reach indirectly: the radix
// sort, BigVector's mapped-memory cache, the lane packing of slices and the CSV/JSON writers.
// Each is checked against an independent oracle (std::stable_sort, invariants of the
// packing, a CSV reader and simdjson).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "csv_reader.hpp"
#include "importers/common/slices.hpp"
#include "output/writers.hpp"
#include "pag/radix_sort.hpp"
#include "trace/big_vector.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_building_blocks {
namespace {

// ---- radix sort -------------------------------------------------------------------------

std::vector<KeyValue<uint32_t>> keyed(const std::vector<uint64_t>& keys) {
  std::vector<KeyValue<uint32_t>> items(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) items[i] = {keys[i], static_cast<uint32_t>(i)};
  return items;
}

void expect_sorted_like_stable_sort(const std::vector<uint64_t>& keys) {
  auto items = keyed(keys);
  auto oracle = items;
  std::stable_sort(oracle.begin(), oracle.end(),
                   [](const auto& a, const auto& b) { return a.key < b.key; });
  std::vector<KeyValue<uint32_t>> scratch;
  radix_sort(items, scratch);
  ASSERT_EQ(items.size(), oracle.size());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_EQ(items[i].key, oracle[i].key) << "at " << i << " of " << keys.size();
    ASSERT_EQ(items[i].value, oracle[i].value) << "equal keys must keep their order, at " << i;
  }
}

TEST(RadixSort, MatchesStableSortForEverySizeAndKeyShape) {
  std::mt19937_64 rng(7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{255}, size_t{256}, size_t{257},
                   size_t{5000}, size_t{100000}}) {
    std::vector<uint64_t> full(n), few(n), high(n), same(n, 42), descending(n);
    for (size_t i = 0; i < n; ++i) {
      full[i] = rng();
      few[i] = rng() % 7;                 // many equal keys: stability matters
      high[i] = (rng() % 5) << 60 | 123;  // only the top digit varies
      descending[i] = n - i;
    }
    SCOPED_TRACE(n);
    expect_sorted_like_stable_sort(full);
    expect_sorted_like_stable_sort(few);
    expect_sorted_like_stable_sort(high);
    expect_sorted_like_stable_sort(same);
    expect_sorted_like_stable_sort(descending);
  }
}

TEST(RadixSort, TimestampsLikeKeysWithTheSignBitClear) {
  // Keys are nanosecond timestamps of a long trace: large, close together, with runs of
  // equal values.
  std::mt19937_64 rng(11);
  std::vector<uint64_t> keys(20000);
  uint64_t t = uint64_t{1} << 61;
  for (auto& k : keys) {
    if (rng() % 4) t += rng() % 1000;
    k = t - (rng() % 3000);
  }
  expect_sorted_like_stable_sort(keys);
}

// ---- BigVector ----------------------------------------------------------------------------

TEST(BigVector, LargeBlocksAreCachedWhenFreedAndHandedOutAgain) {
  constexpr size_t kElements = (size_t{4} << 20) / sizeof(uint64_t);  // 4 MiB
  const size_t before = big_memory::cached_bytes();
  {
    BigVector<uint64_t> v(kElements);
    for (size_t i = 0; i < kElements; ++i) v[i] = i * 3;
    EXPECT_EQ(v[kElements - 1], (kElements - 1) * 3);
  }
  const size_t after_free = big_memory::cached_bytes();
  EXPECT_GE(after_free, before + (size_t{4} << 20)) << "a freed 4 MiB block is kept";
  {
    BigVector<uint64_t> again(kElements);
    EXPECT_LE(big_memory::cached_bytes(), after_free - (size_t{4} << 20))
        << "the cached block is handed out again instead of mapping new memory";
    // Whatever the block held before, the vector is fully writable and readable.
    for (size_t i = 0; i < kElements; ++i) again[i] = ~i;
    for (size_t i = 0; i < kElements; i += 4099) ASSERT_EQ(again[i], ~i);
  }
}

TEST(BigVector, SmallVectorsDoNotTouchTheCache) {
  const size_t before = big_memory::cached_bytes();
  { BigVector<uint32_t> v(1000, 7u); }
  EXPECT_EQ(big_memory::cached_bytes(), before);
}

TEST(BigVector, GrowingKeepsTheContentsAcrossTheMappedThreshold) {
  BigVector<uint32_t> v;
  std::vector<uint32_t> oracle;
  std::mt19937 rng(3);
  for (size_t i = 0; i < (size_t{3} << 20) / sizeof(uint32_t); ++i) {
    const uint32_t x = rng();
    v.push_back(x);
    oracle.push_back(x);
  }
  ASSERT_EQ(v.size(), oracle.size());
  EXPECT_TRUE(std::equal(v.begin(), v.end(), oracle.begin()));
  // resize() of a trivially copyable type leaves new elements for the caller to write,
  // but must keep the old ones.
  v.resize(v.size() * 2);
  EXPECT_TRUE(std::equal(oracle.begin(), oracle.end(), v.begin()));
}

// Pages of [p, p + bytes) resident in memory, by mincore() (p page-aligned).
size_t resident_pages(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (mincore(const_cast<void*>(p), bytes, in.data()) != 0) return SIZE_MAX;
  return static_cast<size_t>(
      std::count_if(in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; }));
}

TEST(BigVector, ReleasedSpareCapacityLeavesTheMemoryButKeepsTheContents) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (const size_t keep : {size_t{0}, size_t{1}, size_t{511}, size_t{512}, size_t{513},
                            size_t{100'003}, size_t{262'143}}) {
    constexpr size_t kCapacity = (size_t{2} << 20) / sizeof(uint64_t);  // 2 MiB: mapped
    BigVector<uint64_t> v(kCapacity);
    std::vector<uint64_t> oracle(kCapacity);
    std::mt19937_64 rng(keep);
    for (size_t i = 0; i < kCapacity; ++i) v[i] = oracle[i] = rng() | 1;  // never 0
    ASSERT_EQ(resident_pages(v.data(), kCapacity * sizeof(uint64_t)),
              kCapacity * sizeof(uint64_t) / page);
    v.resize(keep);
    big_memory::release_spare_capacity(v);
    ASSERT_EQ(v.size(), keep);
    ASSERT_EQ(v.capacity(), kCapacity);
    EXPECT_TRUE(std::equal(v.begin(), v.end(), oracle.begin())) << "kept " << keep;
    // Every page holding a kept element stays; every page wholly past them is given back.
    const size_t kept_pages = (keep * sizeof(uint64_t) + page - 1) / page;
    EXPECT_EQ(resident_pages(v.data(), kCapacity * sizeof(uint64_t)), kept_pages)
        << "kept " << keep;
    // The vector may grow into its capacity again: the released part reads as written.
    v.resize(kCapacity);
    for (size_t i = keep; i < kCapacity; ++i) v[i] = oracle[i];
    EXPECT_TRUE(std::equal(v.begin(), v.end(), oracle.begin())) << "kept " << keep;
  }
}

TEST(BigVector, SmallVectorsKeepTheirSpareCapacity) {
  BigVector<uint32_t> v(1000, 7u);
  v.resize(10);
  big_memory::release_spare_capacity(v);  // malloc'd memory: nothing to give back
  EXPECT_EQ(v.size(), 10u);
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](uint32_t x) { return x == 7u; }));
}

// ---- lane packing -------------------------------------------------------------------------

using importers::kNoSlice;
using importers::Lanes;
using importers::Slice;

bool nested_or_disjoint(const Slice& a, const Slice& b) {
  const bool disjoint = a.end <= b.start || b.end <= a.start;
  const bool a_in_b = b.start <= a.start && a.end <= b.end;
  const bool b_in_a = a.start <= b.start && b.end <= a.end;
  return disjoint || a_in_b || b_in_a;
}

// Invariants any packing must keep: every slice on a lane of its own group, the slices of
// a lane nest or are disjoint (a lane is one worker's call stack), Lanes::slices agrees
// with lane_of.
void expect_valid_packing(const std::vector<Slice>& s, const Lanes& lanes, uint32_t groups) {
  ASSERT_EQ(lanes.lane_of.size(), s.size());
  std::vector<std::vector<uint32_t>> on_lane(lanes.group_of.size());
  for (uint32_t i = 0; i < s.size(); ++i) {
    const uint32_t lane = lanes.lane_of[i];
    ASSERT_LT(lane, lanes.group_of.size()) << "slice " << i << " has no lane";
    EXPECT_EQ(lanes.group_of[lane], s[i].group) << "slice " << i;
    on_lane[lane].push_back(i);
  }
  for (uint32_t lane = 0; lane < on_lane.size(); ++lane) {
    for (size_t x = 0; x < on_lane[lane].size(); ++x)
      for (size_t y = x + 1; y < on_lane[lane].size(); ++y)
        EXPECT_TRUE(nested_or_disjoint(s[on_lane[lane][x]], s[on_lane[lane][y]]))
            << "slices " << on_lane[lane][x] << " and " << on_lane[lane][y] << " on lane " << lane
            << " overlap without nesting";
    auto listed = lanes.slices[lane];
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, on_lane[lane]) << "Lanes::slices of lane " << lane;
  }
  for (uint32_t g = 0; g < groups; ++g) {
    if (lanes.group_first[g] == kNoSlice) continue;
    EXPECT_EQ(lanes.group_of[lanes.group_first[g]], g);
    EXPECT_EQ(lanes.index_in_group[lanes.group_first[g]], 0u);
  }
}

// Properly nested call stacks (what one Chrome thread records) need one lane per group.
TEST(LanePacking, NestedCallStacksTakeOneLanePerGroup) {
  std::mt19937 rng(5);
  std::vector<Slice> s;
  constexpr uint32_t kGroups = 3;
  for (uint32_t g = 0; g < kGroups; ++g) {
    int64_t t = 0;
    for (int root = 0; root < 40; ++root) {
      // A random tree inside [t, t + 1000): children split their parent's interval.
      std::vector<std::pair<int64_t, int64_t>> todo{{t, t + 1000}};
      while (!todo.empty()) {
        auto [a, b] = todo.back();
        todo.pop_back();
        s.push_back({a, b, g, kNoSlice, 0, ActivityType::processing, importers::kNoOperator});
        if (b - a >= 8 && rng() % 3) {
          const int64_t m = a + 1 + static_cast<int64_t>(rng() % (b - a - 2));
          todo.push_back({a + 1, m});
          todo.push_back({m, b - 1});
        }
      }
      t += 1000 + static_cast<int64_t>(rng() % 50);
    }
  }
  std::shuffle(s.begin(), s.end(), rng);
  const Lanes lanes = importers::assign_lanes(s, kGroups, /*require_parent=*/false);
  expect_valid_packing(s, lanes, kGroups);
  EXPECT_EQ(lanes.group_of.size(), kGroups);
  EXPECT_EQ(lanes.moved, 0u);
}

// Overlapping slices (async work, concurrent requests): a slice goes to a higher lane only
// when every lower lane of its group is busy at its start; otherwise it would have nested
// or taken the lowest free lane.
TEST(LanePacking, OverlappingSlicesGoHigherOnlyWhenLowerLanesAreBusy) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<Slice> s;
    constexpr uint32_t kGroups = 2;
    std::vector<int64_t> starts(60);
    for (size_t i = 0; i < starts.size(); ++i) starts[i] = static_cast<int64_t>(i) * 10;
    std::shuffle(starts.begin(), starts.end(), rng);
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t a = starts[i];  // distinct starts: the placement order is by start
      s.push_back({a, a + 1 + static_cast<int64_t>(rng() % 80), static_cast<uint32_t>(i % kGroups),
                   kNoSlice, 0, ActivityType::processing, importers::kNoOperator});
    }
    const Lanes lanes = importers::assign_lanes(s, kGroups, /*require_parent=*/false);
    SCOPED_TRACE(seed);
    expect_valid_packing(s, lanes, kGroups);
    EXPECT_GT(lanes.group_of.size(), kGroups) << "the input overlaps: some slices go higher";
    for (uint32_t i = 0; i < s.size(); ++i) {
      const uint32_t lane = lanes.lane_of[i];
      bool nested = false;  // inside an earlier slice of its lane?
      for (uint32_t j = 0; j < s.size(); ++j)
        if (j != i && lanes.lane_of[j] == lane && s[j].start < s[i].start && s[i].end <= s[j].end)
          nested = true;
      if (nested) continue;
      // A root of its lane: each lower lane of the group must be busy at its start.
      for (uint32_t k = 0; k < lanes.index_in_group[lane]; ++k) {
        bool busy = false;
        for (uint32_t j = 0; j < s.size(); ++j)
          if (s[j].group == s[i].group && lanes.index_in_group[lanes.lane_of[j]] == k &&
              s[j].start < s[i].start && s[i].start < s[j].end)
            busy = true;
        EXPECT_TRUE(busy) << "slice " << i << " took lane index " << lanes.index_in_group[lane]
                          << " though lane index " << k << " was free";
      }
    }
  }
}

// Spans (require_parent): a span nests on a lane only directly on its parent.
TEST(LanePacking, SpansNestOnlyOnTheirParent) {
  std::mt19937 rng(9);
  std::vector<Slice> s;
  // Roots, then children inside a random earlier slice, sometimes overlapping a sibling.
  for (int r = 0; r < 10; ++r)
    s.push_back({r * 1000, r * 1000 + 900, 0, kNoSlice, 0, ActivityType::processing,
                 importers::kNoOperator});
  for (int c = 0; c < 150; ++c) {
    const uint32_t p = static_cast<uint32_t>(rng() % s.size());
    const int64_t len = s[p].end - s[p].start;
    if (len < 4) continue;
    const int64_t a = s[p].start + 1 + static_cast<int64_t>(rng() % (len / 2));
    const int64_t b = a + 1 + static_cast<int64_t>(rng() % (s[p].end - a - 1));
    s.push_back({a, b, 0, p, s[p].depth + 1, ActivityType::processing, importers::kNoOperator});
  }
  const Lanes lanes = importers::assign_lanes(s, 1, /*require_parent=*/true);
  expect_valid_packing(s, lanes, 1);
  size_t off_parent = 0, on_parent = 0;
  for (uint32_t i = 0; i < s.size(); ++i)
    if (s[i].parent != kNoSlice)
      ++(lanes.lane_of[i] == lanes.lane_of[s[i].parent] ? on_parent : off_parent);
  EXPECT_GT(on_parent, 0u);
  EXPECT_GT(off_parent, 0u) << "siblings overlap: some spans cannot nest on their parent";
  for (uint32_t i = 0; i < s.size(); ++i) {
    // The innermost slice containing i on i's lane (if any) must be i's parent.
    uint32_t innermost = kNoSlice;
    for (uint32_t j = 0; j < s.size(); ++j) {
      if (j == i || lanes.lane_of[j] != lanes.lane_of[i]) continue;
      const bool contains = s[j].start <= s[i].start && s[i].end <= s[j].end &&
                            (s[j].start < s[i].start || s[j].end > s[i].end || j < i);
      if (contains &&
          (innermost == kNoSlice || s[j].end - s[j].start < s[innermost].end - s[innermost].start))
        innermost = j;
    }
    if (innermost != kNoSlice) {
      EXPECT_EQ(innermost, s[i].parent) << "span " << i;
    }
  }
}

// ---- writers ------------------------------------------------------------------------------

struct TwoWorkers {
  Trace trace;
  Pag pag;
  TwoWorkers() {
    testing::TraceBuilder b;
    b.activity(0, ActivityType::processing, 0, 100, 5);
    b.activity(1, ActivityType::processing, 0, 100, 5);
    trace = b.build();
    trace.worker_names[0] = "map, \"hot\"\nline";
    trace.worker_names[1] = "sink \xC3\xA9";
    trace.operator_names[5] = "Window(\"a\",b)";
    pag = build_pag(trace);
  }
};

WindowSummary two_worker_window() {
  WindowSummary w;
  w.index = 3;
  w.window = {1000, 2000};
  w.has_paths = true;
  w.cp.worker = {0.75, 0.25};
  w.conventional.worker = {0.5, 0.5};
  w.single_path.worker = {1, 0};
  w.cp.op = {{5, 1.0}};
  w.conventional.op = {{5, 1.0}};
  w.single_path.op = {{5, 1.0}};
  w.cp.op_per_worker = {{5, 0.5}};
  w.conventional.op_per_worker = {{5, 0.5}};
  w.single_path.op_per_worker = {{5, 0.5}};
  w.cp.activity[static_cast<int>(ActivityType::processing)] = 1;
  w.conventional.activity[static_cast<int>(ActivityType::processing)] = 1;
  w.single_path.activity[static_cast<int>(ActivityType::processing)] = 1;
  return w;
}

TEST(Writers, CsvQuotesNamesSoThatAReaderGetsThemBack) {
  TwoWorkers t;
  const Names names(t.trace, t.pag);
  const WindowSummary w = two_worker_window();
  fmt::memory_buffer out;
  write_csv_header(out);
  write_window_csv(out, w, names, SummarySelection{});
  const auto rows = testing::read_csv(fmt::to_string(out));
  ASSERT_GE(rows.size(), 2u);
  const size_t columns = rows[0].size();
  EXPECT_EQ(columns, 8u);
  bool saw_hot = false, saw_sink = false, saw_op = false;
  for (size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), columns) << "row " << r;
    EXPECT_EQ(rows[r][0], "3");
    EXPECT_EQ(rows[r][1], "1000");
    EXPECT_EQ(rows[r][2], "2000");
    if (rows[r][3] == "worker" && rows[r][4] == "map, \"hot\"\nline") {
      saw_hot = true;
      EXPECT_DOUBLE_EQ(std::stod(rows[r][5]), 0.75);
      EXPECT_DOUBLE_EQ(std::stod(rows[r][6]), 0.5);
      EXPECT_DOUBLE_EQ(std::stod(rows[r][7]), 1);
    }
    if (rows[r][3] == "worker" && rows[r][4] == "sink \xC3\xA9") saw_sink = true;
    if (rows[r][3] == "operator" && rows[r][4] == "Window(\"a\",b)") saw_op = true;
  }
  EXPECT_TRUE(saw_hot && saw_sink && saw_op);
}

TEST(Writers, WindowJsonParsesAndCarriesTheValues) {
  TwoWorkers t;
  const Names names(t.trace, t.pag);
  WindowSummary w = two_worker_window();
  w.diagnostics.add_input("late events", 4);
  fmt::memory_buffer out;
  write_window_json(out, w, names, SummarySelection{});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.data(), out.size()).get(doc), simdjson::SUCCESS)
      << fmt::to_string(out);
  EXPECT_EQ(int64_t(doc["window"]["index"]), 3);
  EXPECT_EQ(int64_t(doc["window"]["start_ns"]), 1000);
  EXPECT_DOUBLE_EQ(double(doc["worker"]["map, \"hot\"\nline"]), 0.75);
  EXPECT_DOUBLE_EQ(double(doc["worker"]["sink \xC3\xA9"]), 0.25);
  EXPECT_DOUBLE_EQ(double(doc["operator"]["Window(\"a\",b)"]), 1.0);
  EXPECT_DOUBLE_EQ(double(doc["conventional"]["worker"]["sink \xC3\xA9"]), 0.5);
}

TEST(Writers, DiagnosticsKeepEveryDigitOrRoundAsAsked) {
  Diagnostics d;
  d.unknown_share = 0.123456789012345;
  d.segments = 7;
  d.add_input("late events", 2);
  fmt::memory_buffer full, rounded;
  put_diagnostics(full, d);
  put_diagnostics(rounded, d, DiagnosticsJson{false, 3});
  simdjson::dom::parser p1, p2;
  simdjson::dom::element a, b;
  ASSERT_EQ(p1.parse(full.data(), full.size()).get(a), simdjson::SUCCESS) << fmt::to_string(full);
  ASSERT_EQ(p2.parse(rounded.data(), rounded.size()).get(b), simdjson::SUCCESS)
      << fmt::to_string(rounded);
  EXPECT_DOUBLE_EQ(double(a["unknown_share"]), 0.123456789012345);
  EXPECT_DOUBLE_EQ(double(b["unknown_share"]), 0.123);
  EXPECT_EQ(uint64_t(a["segments"]), 7u);
  EXPECT_TRUE(b["segments"].error() == simdjson::NO_SUCH_FIELD) << "the report leaves them out";
}

}  // namespace
}  // namespace snailtrail::test_building_blocks
