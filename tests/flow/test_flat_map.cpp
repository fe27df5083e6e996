// FlatMap (src/flow/flat_map.hpp, issue 35) against std::unordered_map: random increments
// and lookups through many growths, over key sets that stress it: keys 0 and UINT64_MAX,
// keys that share a home slot at every capacity up to 2^12, keys whose home is the last
// slot (runs wrap around), a small domain (repeats) and any u64. After every step the size
// agrees; every so often the whole contents (by iteration, mutable and const) agree, and a
// clear() or a copy is checked the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "flow/flat_map.hpp"

namespace snailtrail::flow {
namespace flat_map_test {

using Map = FlatMap<uint64_t>;
using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;

Pairs sorted(Pairs p) {
  std::sort(p.begin(), p.end());
  return p;
}
Pairs contents(Map& m) {
  Pairs p;
  for (auto& [k, v] : m) p.emplace_back(k, v);
  return sorted(p);
}
Pairs contents(const Map& m) {
  Pairs p(m.begin(), m.end());
  return sorted(p);
}
Pairs contents(const std::unordered_map<uint64_t, uint64_t>& m) {
  return sorted(Pairs(m.begin(), m.end()));
}

// n keys whose hashes share their top `bits` bits (one home slot at every capacity up to
// 2^bits), the last home slot when `last`.
std::vector<uint64_t> colliding(std::mt19937_64& rng, int bits, bool last, size_t n) {
  const uint64_t want = last ? (uint64_t{1} << bits) - 1 : Map::hash(rng()) >> (64 - bits);
  std::vector<uint64_t> keys;
  while (keys.size() < n) {
    const uint64_t k = rng();
    if (Map::hash(k) >> (64 - bits) == want) keys.push_back(k);
  }
  return keys;
}

TEST(FlowFlatMap, AgreesWithUnorderedMapThroughGrowths) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> special = {0, ~uint64_t{0}, 1, ~uint64_t{0} - 1};
    for (uint64_t k : colliding(rng, 12, false, 300)) special.push_back(k);
    for (uint64_t k : colliding(rng, 4, true, 40)) special.push_back(k);
    Map m;
    std::unordered_map<uint64_t, uint64_t> want;
    EXPECT_EQ(m.capacity(), 0u);
    EXPECT_TRUE(m.empty());
    EXPECT_EQ(m.find(0), nullptr);
    EXPECT_EQ(m.begin(), m.end());
    size_t growths = 0, last_capacity = 0;
    const int steps = 120000;
    for (int step = 0; step < steps; ++step) {
      uint64_t k;
      switch (rng() % 4) {
        case 0:
          k = special[rng() % special.size()];
          break;
        case 1:
          k = rng() % 5000;
          break;
        case 2:
          k = rng();
          break;
        default:
          k = rng() % 100000;
          break;
      }
      if (rng() % 3 == 0) {  // a lookup, present or not
        const uint64_t* got = std::as_const(m).find(k);
        auto it = want.find(k);
        ASSERT_EQ(got != nullptr, it != want.end()) << k;
        if (got) {
          ASSERT_EQ(*got, it->second) << k;
        }
        ASSERT_EQ(m.contains(k), it != want.end());
      } else {
        const uint64_t add = rng() % 7;
        m[k] += add;
        want[k] += add;
      }
      ASSERT_EQ(m.size(), want.size()) << step;
      if (m.capacity() != last_capacity) ++growths, last_capacity = m.capacity();
      if (step % 9973 == 0 || step == steps - 1) {
        ASSERT_EQ(contents(m), contents(want)) << step;
        ASSERT_EQ(contents(std::as_const(m)), contents(want)) << step;
        Map copy = m;
        ASSERT_EQ(contents(copy), contents(want)) << step;
      }
      if (step == steps / 2 && seed == 2) {  // clear keeps the table, forgets every key
        const size_t cap = m.capacity();
        m.clear();
        want.clear();
        ASSERT_EQ(m.capacity(), cap);
        ASSERT_TRUE(m.empty());
        ASSERT_EQ(m.find(0), nullptr);
        ASSERT_EQ(m.begin(), m.end());
      }
    }
    EXPECT_GE(growths, 10u) << seed;                // 16 .. 2^14 slots at least
    EXPECT_LE(m.size() * 4, m.capacity() * 3 + 4);  // load <= 3/4 (+ key 0's own slot)
  }
}

TEST(FlowFlatMap, ReserveHoldsThatManyKeysWithoutGrowing) {
  for (size_t n : {0u, 1u, 12u, 13u, 1000u, 49152u, 49153u}) {
    Map m;
    m.reserve(n);
    const size_t cap = m.capacity();
    for (uint64_t k = 0; k < n; ++k) m[k * 0x9e3779b97f4a7c15ull] = k;
    EXPECT_EQ(m.capacity(), cap) << n;
    EXPECT_EQ(m.size(), n);
    for (uint64_t k = 0; k < n; ++k) ASSERT_EQ(*m.find(k * 0x9e3779b97f4a7c15ull), k) << n;
  }
}

// The "THPeligible:" value of the mapping that holds p in /proc/self/smaps (-1: not found).
int thp_eligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' '))
      inside = lo <= at && at < hi;
    else if (inside && line.rfind("THPeligible:", 0) == 0)
      return std::stoi(line.substr(12));
  }
  return -1;
}

// Blocks of 2 MiB and more: aligned to 2 MiB, every byte usable, and advised as huge pages
// (where transparent huge pages are not off); smaller ones from operator new.
TEST(FlowFlatMap, LargeTablesAreAlignedAndAdvisedAsHugePages) {
  using Slot = std::pair<uint64_t, uint64_t>;
  LargePages<Slot> alloc;
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  for (size_t n : {size_t{1} << 17, (size_t{1} << 17) + 1, size_t{3} << 18}) {
    Slot* p = alloc.allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % LargePages<Slot>::kHuge, 0u) << n;
    for (size_t i = 0; i < n; ++i) p[i] = {i, ~i};
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], Slot(i, ~i)) << n;
    if (!mode.empty() && mode.find("[never]") == std::string::npos) {
      EXPECT_EQ(thp_eligible(p), 1) << n << " (" << mode << ")";
    }
    alloc.deallocate(p, n);
  }
  Slot* small = alloc.allocate(1000);
  small[999] = {1, 2};
  alloc.deallocate(small, 1000);
}

// Growing through the 2 MiB boundary (2^17 slots) into huge-page tables keeps every key.
TEST(FlowFlatMap, GrowsIntoLargeTables) {
  Map m;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> keys(300'000);
  for (auto& k : keys) k = rng();
  for (size_t i = 0; i < keys.size(); ++i) m[keys[i]] += i + 1;
  EXPECT_GE(m.capacity() * sizeof(Map::value_type), LargePages<Map::value_type>::kHuge * 2);
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(*m.find(keys[i]), i + 1);
  Map copy = m;  // copying a large table: its own mapping
  EXPECT_EQ(contents(copy), contents(m));
}

}  // namespace flat_map_test
}  // namespace snailtrail::flow
