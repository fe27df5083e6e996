// The identifier census's compact tables (issue 34, `flows` within 500 MB at 8 M lines):
// texts by 4-byte handle (OffsetArena), the value table over them (ValueTable) and the
// records' (value, slot) pairs without record numbers (RecordPairs), each against a plain
// oracle (std::string copies, std::unordered_map, (record, value, slot) triples).
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "logs/log_set.hpp"
#include "logs/request_groups.hpp"
#include "logs/varint.hpp"

namespace snailtrail::logs::test_logs_census {
namespace {

std::string random_text(std::mt19937_64& rng, size_t n) {
  std::string s(n, 'a');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

// Lengths around the varint's 1/2/3-byte bounds, a block's size, and beyond a block.
size_t random_length(std::mt19937_64& rng) {
  switch (rng() % 40) {
    case 0:
      return 127 + rng() % 3;
    case 1:
      return 16383 + rng() % 3;
    case 2:
      return (size_t{1} << 20) - 3 + rng() % 6;
    case 3:
      return (size_t{5} << 19) + rng() % 100;  // 2.5 MiB: three blocks
    case 4:
      return 0;
    default:
      return 1 + rng() % 40;
  }
}

// The logs stage's one varint (src/logs/varint.hpp), shared by the arena, the packed
// records and the miner: the protobuf encoding's known bytes (300 = AC 02), every length
// boundary, and random values read back in sequence from one buffer.
TEST(LogCensus, VarintsHaveTheKnownBytesAndReadBackInSequence) {
  uint8_t buf[kMaxVarintBytes * 200];
  uint8_t* end = put_varint(buf, 300);
  ASSERT_EQ(end - buf, 2);
  EXPECT_EQ(buf[0], 0xAC);
  EXPECT_EQ(buf[1], 0x02);
  end = put_varint(buf, UINT64_MAX);
  ASSERT_EQ(end - buf, 10);
  EXPECT_EQ(buf[9], 0x01);
  std::vector<uint64_t> values{0, 1, 127, 128, 16383, 16384, UINT64_MAX, uint64_t{1} << 63};
  for (int k = 1; k < 64; ++k) values.push_back((uint64_t{1} << k) - 1);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) values.push_back(rng() >> (rng() % 64));
  ASSERT_LE(values.size(), 200u);
  uint8_t* at = buf;
  for (uint64_t v : values) {
    uint8_t* next = put_varint(at, v);
    // Its size: one byte per started 7 bits, counted independently.
    size_t bits = 1;
    while (bits < 64 && (v >> bits) != 0) ++bits;
    EXPECT_EQ(static_cast<size_t>(next - at), (bits + 6) / 7) << v;
    EXPECT_EQ(varint_size(v), static_cast<size_t>(next - at)) << v;
    at = next;
  }
  const uint8_t* read = buf;
  for (uint64_t v : values) EXPECT_EQ(get_varint(read), v);
  EXPECT_EQ(read, at);
}

TEST(LogCensus, OffsetArenaKeepsEveryTextAtItsHandle) {
  std::mt19937_64 rng(7);
  OffsetArena arena;
  std::vector<std::string> want;
  std::vector<uint32_t> handles;
  size_t bytes = 0;
  for (int i = 0; i < 4000; ++i) {
    want.push_back(random_text(rng, random_length(rng)));
    bytes += want.back().size();
    handles.push_back(arena.add(want.back()));
    // The newest and a random earlier one: texts never move.
    ASSERT_EQ(arena.text(handles.back()), want.back()) << i;
    const size_t j = rng() % want.size();
    ASSERT_EQ(arena.text(handles[j]), want[j]) << i << " " << j;
  }
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(arena.text(handles[i]), want[i]) << i;
  EXPECT_GT(bytes, size_t{200} << 20);   // many blocks, and large texts among them
  OffsetArena moved = std::move(arena);  // the flows keep it: the views stay valid
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(moved.text(handles[i]), want[i]) << i;
}

struct Hash {
  bool weak = false;
  size_t operator()(std::string_view v) const {
    const size_t h = std::hash<std::string_view>{}(v);
    return weak ? h % 65521 : h;
  }
};

// A table interns and finds exactly as a map from text to first-seen index, through its
// growth, keep_if (the census's sampling levels: drop by a hash bit, renumbered in order)
// and drop_lookup; copied (handles) or viewed texts. A weak hash (few distinct values)
// makes probes meet other texts of the same hash bits.
TEST(LogCensus, ValueTableInternsAndFindsAsAMap) {
  for (const bool copy : {true, false}) {
    for (const bool weak : {false, true}) {
      SCOPED_TRACE(std::string(copy ? "copy" : "view") + (weak ? " weak hash" : ""));
      std::mt19937_64 rng(copy * 2 + weak);
      std::deque<std::string> pool;  // views stay valid
      for (int i = 0; i < 30000; ++i)
        pool.push_back(rng() % 50 == 0 ? random_text(rng, 200 + rng() % 400)
                                       : "req-" + std::to_string(rng() % 40000));
      // Weak: many texts share a hash (65 521 values), so probes meet other texts.
      const Hash hash{weak};
      detail::ValueTable<Hash> table(copy, hash);
      std::unordered_map<std::string, uint32_t> oracle;
      std::vector<std::string> by_id;
      for (int level = 0; level < 4; ++level) {
        for (int i = 0; i < 20000; ++i) {
          const std::string& v = pool[rng() % pool.size()];
          if (rng() % 3 == 0) {  // a lookup, found or not
            const std::string probe = rng() % 2 ? v : v + "x";
            auto it = oracle.find(probe);
            ASSERT_EQ(table.find(probe, hash(probe)),
                      it == oracle.end() ? detail::kNone : it->second);
            continue;
          }
          bool fresh = false;
          const uint32_t id = table.intern(v, hash(v), fresh);
          auto [it, want_fresh] = oracle.try_emplace(v, static_cast<uint32_t>(by_id.size()));
          if (want_fresh) by_id.push_back(v);
          ASSERT_EQ(fresh, want_fresh);
          ASSERT_EQ(id, it->second);
          ASSERT_EQ(table.size(), by_id.size());
        }
        for (size_t id = 0; id < by_id.size(); ++id) ASSERT_EQ(table.text(id), by_id[id]);
        // A sampling level: keep the texts whose hash has bit `level` clear.
        auto keep = [&](std::string_view v) {
          return ((std::hash<std::string_view>{}(v) >> (40 + level)) & 1) == 0;
        };
        const std::vector<uint32_t> to = table.keep_if([&](size_t id) { return keep(by_id[id]); });
        std::vector<std::string> kept;
        oracle.clear();
        ASSERT_EQ(to.size(), by_id.size());
        for (size_t id = 0; id < by_id.size(); ++id)
          if (keep(by_id[id])) {
            ASSERT_EQ(to[id], kept.size());
            oracle.emplace(by_id[id], static_cast<uint32_t>(kept.size()));
            kept.push_back(by_id[id]);
          } else {
            ASSERT_EQ(to[id], detail::kNone);
          }
        by_id.swap(kept);
        ASSERT_EQ(table.size(), by_id.size());
        for (const auto& [v, id] : oracle) ASSERT_EQ(table.find(v, hash(v)), id) << v;
      }
      EXPECT_GT(by_id.size(), 1000u);  // grown several times
      table.drop_lookup();
      for (size_t id = 0; id < by_id.size(); ++id) ASSERT_EQ(table.text(id), by_id[id]);
      if (copy) {  // the texts move with the arena (the flows' group names view into it)
        std::vector<std::string_view> views;
        for (size_t id = 0; id < by_id.size(); ++id) views.push_back(table.text(id));
        const OffsetArena arena = table.take_arena();
        for (size_t id = 0; id < by_id.size(); ++id) ASSERT_EQ(views[id], by_id[id]);
      }
    }
  }
}

// The records' pairs read back per record equal the (record, value, slot) triples they
// were given: records without pairs (most), with one, with several (a value twice), slots
// up to 2^31 - 1; a slot of 2^31 does not fit.
TEST(LogCensus, RecordPairsGiveBackEachRecordsTriples) {
  struct Triple {
    uint32_t record, value, slot;
    bool operator==(const Triple&) const = default;
  };
  std::mt19937_64 rng(11);
  detail::RecordPairs pairs;
  std::vector<Triple> want;
  uint32_t r = 0;
  for (int i = 0; i < 200000; ++i) {
    r += static_cast<uint32_t>(rng() % 4 == 0 ? rng() % 1000 : rng() % 2);
    const int n = rng() % 8 == 0 ? static_cast<int>(rng() % 6) + 1 : 1;
    for (int k = 0; k < n; ++k) {
      const uint32_t value = static_cast<uint32_t>(rng() % 5000);
      const uint32_t slot = rng() % 10 == 0
                                ? (uint32_t{1} << 31) - 1 - static_cast<uint32_t>(rng() % 3)
                                : static_cast<uint32_t>(rng() % 300);
      pairs.push(r, value, slot);
      want.push_back({r, value, slot});
    }
  }
  std::vector<Triple> got;
  uint32_t last = 0;
  bool first = true;
  pairs.each_record([&](uint32_t record, std::span<const detail::RecordPair> ps) {
    EXPECT_FALSE(ps.empty());
    EXPECT_TRUE(first || record > last);  // each record once, in order
    first = false, last = record;
    for (const detail::RecordPair& p : ps) got.push_back({record, p.value, p.slot()});
  });
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  ASSERT_EQ(pairs.pairs().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(pairs.pairs()[i].value, want[i].value);
    ASSERT_EQ(pairs.pairs()[i].slot(), want[i].slot);
  }
  EXPECT_THROW(pairs.push(r + 1, 0, uint32_t{1} << 31), std::length_error);
  pairs.clear();
  size_t visited = 0;
  pairs.each_record([&](uint32_t, std::span<const detail::RecordPair>) { ++visited; });
  EXPECT_EQ(visited, 0u);
}

}  // namespace
}  // namespace snailtrail::logs::test_logs_census
