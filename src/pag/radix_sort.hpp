// LSD radix sort of (key, value) pairs by 64-bit key: O(n) passes over 11-bit digits,
// skipping digits that are equal in every key. Stable, so equal keys keep their order.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace snailtrail {

template <typename Value>
struct KeyValue {
  uint64_t key;
  Value value;
};

template <typename Value, typename Alloc>
void radix_sort(std::vector<KeyValue<Value>, Alloc>& items,
                std::vector<KeyValue<Value>, Alloc>& scratch) {
  const size_t n = items.size();
  if (n < 2) return;
  if (n < 256) {
    std::stable_sort(items.begin(), items.end(),
                     [](const auto& a, const auto& b) { return a.key < b.key; });
    return;
  }
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (const auto& kv : items) all_or |= kv.key, all_and &= kv.key;
  const uint64_t varying = all_or ^ all_and;  // bits that differ somewhere
  scratch.resize(n);
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::array<size_t, kBuckets> count;
  for (int shift = 0; shift < 64; shift += kBits) {
    if (((varying >> shift) & (kBuckets - 1)) == 0) continue;
    count.fill(0);
    for (const auto& kv : items) ++count[(kv.key >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      size_t t = c;
      c = sum;
      sum += t;
    }
    for (const auto& kv : items) scratch[count[(kv.key >> shift) & (kBuckets - 1)]++] = kv;
    items.swap(scratch);
  }
}

}  // namespace snailtrail
