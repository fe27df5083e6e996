// FlatMap<V>: a hash map from u64 keys to V in one flat array, for the keyed counts' per-key
// state (issue 35). std::unordered_map spent a malloc and a pointer chase per key (a node
// each, ~57 % of keycount's samples in operator[], and 2 workers competing for the memory
// bus); here a lookup is a short run of adjacent slots, and inserts allocate only when the
// table doubles.
//
// Open addressing with linear probing over a power-of-two table, filled to at most 3/4.
// A slot holds (key, value) inline; key 0 marks an empty slot, so key 0 itself lives in one
// extra slot past the table (every u64 key, 0 and UINT64_MAX included, can be stored). The
// home slot is the top bits of a hash of the key, so slot order follows hash order at every
// capacity: copying one map into another in iteration order (a growth, a Megaphone bin
// arriving) inserts in probe order and never piles up. The hash is not mix64 (stream.hpp):
// the exchange already picked this worker's keys by mix64's top bits, and a table indexed
// by those bits would use a fraction of its slots.
//
// No erase (no count needs one). Iteration order is unspecified; references and iterators
// are invalidated by an insert that grows the table.
//
// Tables of 2 MiB and more live in their own mapping, aligned to 2 MiB and advised as
// transparent huge pages (LargePages below). Every lookup of a large table is a random
// access: with 4 KiB pages a 32 MiB table (keycount's 1 M keys) spans 8192 pages, so
// nearly every lookup missed the TLB too, and growing the table took a page fault per
// 4 KiB (each an exit to the hypervisor in this VM). docs/RUNTIME.md "Scaling and idle
// workers" has the measurements.
#pragma once

#include <sys/mman.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace snailtrail::flow {

// An allocator that gives blocks of kHuge bytes or more from their own anonymous mapping,
// aligned to kHuge and advised MADV_HUGEPAGE (where transparent huge pages are off or the
// advice fails, they are ordinary pages: only slower); smaller blocks from operator new.
template <class T>
struct LargePages {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;  // x86-64's huge page

  LargePages() = default;
  template <class U>
  LargePages(const LargePages<U>&) {}  // NOLINT: rebinding converts implicitly

  static bool large(size_t n) { return n * sizeof(T) >= kHuge; }
  static size_t mapped(size_t n) { return (n * sizeof(T) + kHuge - 1) / kHuge * kHuge; }

  T* allocate(size_t n) {
    if (!large(n)) return std::allocator<T>().allocate(n);
    // Map one huge page more than needed and give back the unaligned ends.
    const size_t len = mapped(n);
    void* p =
        mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto base = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (base + kHuge - 1) / kHuge * kHuge;
    if (aligned > base) munmap(p, aligned - base);
    if (const size_t tail = base + kHuge - aligned; tail > 0)
      munmap(reinterpret_cast<void*>(aligned + len), tail);
    madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);
    return reinterpret_cast<T*>(aligned);
  }
  void deallocate(T* p, size_t n) {
    if (!large(n)) return std::allocator<T>().deallocate(p, n);
    munmap(p, mapped(n));
  }
  template <class U>
  bool operator==(const LargePages<U>&) const {
    return true;
  }
};

template <class V>
class FlatMap {
 public:
  using key_type = uint64_t;
  using mapped_type = V;
  using value_type = std::pair<uint64_t, V>;  // the key must not be changed through it

  template <bool Const>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::pair<uint64_t, V>;
    using difference_type = std::ptrdiff_t;
    using reference = std::conditional_t<Const, const value_type&, value_type&>;
    using pointer = std::conditional_t<Const, const value_type*, value_type*>;
    using Map = std::conditional_t<Const, const FlatMap, FlatMap>;

    Iter() = default;
    Iter(Map* m, size_t i) : m_(m), i_(i) { skip(); }
    operator Iter<true>() const requires(!Const) { return Iter<true>(m_, i_); }
    reference operator*() const { return m_->slots_[i_]; }
    pointer operator->() const { return &m_->slots_[i_]; }
    Iter& operator++() {
      ++i_;
      skip();
      return *this;
    }
    Iter operator++(int) {
      Iter old = *this;
      ++*this;
      return old;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }

   private:
    void skip() {
      while (i_ < m_->slots_.size() && !m_->occupied(i_)) ++i_;
    }
    Map* m_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Slots in the table (key 0's extra slot not counted); 0 until the first insert.
  size_t capacity() const { return mask_ + (slots_.empty() ? 0 : 1); }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, slots_.size()); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, slots_.size()); }

  // The value of key k, value-initialized (V{}) if k was not there.
  V& operator[](uint64_t k) {
    if (slots_.empty()) rehash(kMinCapacity);
    if (k == kEmpty) {
      if (!has_zero_) {
        has_zero_ = true;
        ++size_;
      }
      return slots_.back().second;
    }
    size_t i = probe(k);
    if (slots_[i].first == k) return slots_[i].second;
    if ((used_ + 1) * 4 > capacity() * 3) {  // keep probe runs short: load <= 3/4
      rehash(capacity() * 2);
      i = probe(k);
    }
    slots_[i].first = k;
    ++used_;
    ++size_;
    return slots_[i].second;
  }

  // The value of key k, or null.
  V* find(uint64_t k) { return const_cast<V*>(std::as_const(*this).find(k)); }
  const V* find(uint64_t k) const {
    if (slots_.empty()) return nullptr;
    if (k == kEmpty) return has_zero_ ? &slots_.back().second : nullptr;
    const size_t i = probe(k);
    return slots_[i].first == k ? &slots_[i].second : nullptr;
  }
  bool contains(uint64_t k) const { return find(k) != nullptr; }

  // Two multiply-xorshift rounds (not mix64: see above); public so tests can make keys
  // that collide.
  static uint64_t hash(uint64_t k) {
    k = (k ^ (k >> 32)) * 0xd6e8feb86659fd93ull;
    k = (k ^ (k >> 32)) * 0xd6e8feb86659fd93ull;
    return k ^ (k >> 32);
  }

  // Room for n keys without growing.
  void reserve(size_t n) {
    size_t cap = kMinCapacity;
    while (cap * 3 < n * 4) cap *= 2;
    if (cap > capacity()) rehash(cap);
  }
  // Empty, keeping the table (its slots reset to (0, V{})).
  void clear() {
    for (auto& s : slots_) s = value_type{};
    used_ = size_ = 0;
    has_zero_ = false;
  }

 private:
  static constexpr uint64_t kEmpty = 0;
  static constexpr size_t kMinCapacity = 16;

  // Key k's slot, or the empty slot that ends its run (k != 0; the table has an empty slot).
  size_t probe(uint64_t k) const {
    size_t i = static_cast<size_t>(hash(k) >> shift_);
    while (slots_[i].first != k && slots_[i].first != kEmpty) i = (i + 1) & mask_;
    return i;
  }
  bool occupied(size_t i) const { return i == mask_ + 1 ? has_zero_ : slots_[i].first != kEmpty; }
  void rehash(size_t cap) {  // cap: a power of two >= kMinCapacity
    Slots old(cap + 1);
    old.swap(slots_);
    mask_ = cap - 1;
    shift_ = 64 - std::countr_zero(cap);
    if (old.empty()) return;
    slots_.back() = std::move(old.back());  // key 0's
    for (size_t i = 0; i + 1 < old.size(); ++i)
      if (old[i].first != kEmpty) slots_[probe(old[i].first)] = std::move(old[i]);
  }

  using Slots = std::vector<value_type, LargePages<value_type>>;
  Slots slots_;      // capacity() slots, then key 0's
  size_t mask_ = 0;  // capacity() - 1
  int shift_ = 64;   // home slot = hash >> shift_
  size_t used_ = 0;  // non-zero keys
  size_t size_ = 0;  // used_ + has_zero_
  bool has_zero_ = false;
};

}  // namespace snailtrail::flow
