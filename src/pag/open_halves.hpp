// The half messages waiting for their partner when correlators are known unique per
// (sender, receiver) and side (StreamingPag::assume_unique_correlators): at most the
// messages in flight, so one small flat open-addressing table (linear probing,
// backward-shift deletion) instead of a node per half in a std::unordered_map.
#pragma once

#include <cstdint>
#include <vector>

#include "pag/correlator_table.hpp"

namespace snailtrail {

class OpenHalves {
 public:
  using Key = CorrelatorTable::Key;
  using Half = CorrelatorTable::Half;

  // If the partner of (key, is_send) waits, moves it into `partner` (it leaves the table)
  // and returns true; else the half waits and false is returned.
  bool match_or_wait(const Key& key, bool is_send, const Half& half, Half& partner) {
    if (slots_.empty()) rehash(16);
    const size_t mask = slots_.size() - 1;
    size_t i = hash(key, !is_send) & mask;
    for (; slots_[i].used; i = (i + 1) & mask) {
      if (slots_[i].is_send != is_send && slots_[i].key == key) {
        partner = slots_[i].half;
        erase_at(i);
        return true;
      }
    }
    if ((size_ + 1) * 2 > slots_.size()) {
      rehash(slots_.size() * 2);
      insert(key, is_send, half);
    } else {
      place(hash(key, is_send) & mask, key, is_send, half);
    }
    return false;
  }

  // Removes every waiting half for which `gone(half, is_send)` is true, calling it once
  // per half.
  template <typename F>
  void remove_if(F&& gone) {
    if (size_ == 0) return;
    keep_.clear();
    for (const Slot& s : slots_)
      if (s.used && !gone(s.half, s.is_send)) keep_.push_back(s);
    for (Slot& s : slots_) s.used = false;
    size_ = 0;
    for (const Slot& s : keep_) insert(s.key, s.is_send, s.half);
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    Key key{};
    Half half{};
    bool is_send = false;
    bool used = false;
  };

  static size_t hash(const Key& k, bool is_send) {
    uint64_t h = (uint64_t{k.sender} << 32 | k.receiver) * 0x9e3779b97f4a7c15ULL;
    h ^= (static_cast<uint64_t>(k.correlator) * 2 + is_send) * 0xc2b2ae3d27d4eb4fULL;
    h ^= h >> 31;
    return static_cast<size_t>(h * 0x165667b19e3779f9ULL >> 7);
  }

  void insert(const Key& key, bool is_send, const Half& half) {
    place(hash(key, is_send) & (slots_.size() - 1), key, is_send, half);
  }

  void place(size_t i, const Key& key, bool is_send, const Half& half) {
    const size_t mask = slots_.size() - 1;
    while (slots_[i].used) i = (i + 1) & mask;
    slots_[i] = Slot{key, half, is_send, true};
    ++size_;
  }

  // Backward-shift deletion: later entries of the probe run move up so that no lookup
  // stops early at the emptied slot.
  void erase_at(size_t i) {
    const size_t mask = slots_.size() - 1;
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (!slots_[j].used) break;
      const size_t home = hash(slots_[j].key, slots_[j].is_send) & mask;
      // Move j to i when its home is not in the cyclic range (i, j].
      const bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!in_range) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].used = false;
    --size_;
  }

  void rehash(size_t capacity) {
    keep_.clear();
    for (const Slot& s : slots_)
      if (s.used) keep_.push_back(s);
    slots_.assign(capacity, Slot{});
    size_ = 0;
    for (const Slot& s : keep_) insert(s.key, s.is_send, s.half);
  }

  std::vector<Slot> slots_;  // capacity a power of two, at most half full
  std::vector<Slot> keep_;   // scratch for rehash and remove_if
  size_t size_ = 0;
};

}  // namespace snailtrail
