#include "pag/correlator_table.hpp"

namespace snailtrail {
namespace {

size_t hash(const CorrelatorTable::Key& k) {
  uint64_t h = (uint64_t{k.sender} << 32 | k.receiver) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(k.correlator) * 0xc2b2ae3d27d4eb4fULL;
  h ^= h >> 29;
  return static_cast<size_t>(h * 0x165667b19e3779f9ULL);
}

}  // namespace

void CorrelatorTable::push(Chain& c, const Half& h) {
  uint32_t n = free_;
  if (n != kEnd) {
    free_ = pool_[n].next;
    pool_[n] = {h, kEnd};
  } else {
    n = static_cast<uint32_t>(pool_.size());
    pool_.push_back({h, kEnd});
  }
  if (c.empty())
    c.head = n;
  else
    pool_[c.tail].next = n;
  c.tail = n;
}

CorrelatorTable::Half CorrelatorTable::pop(Chain& c) {
  const uint32_t n = c.head;
  const Half h = pool_[n].half;
  c.head = pool_[n].next;
  if (c.head == kEnd) c.tail = kEnd;
  pool_[n].next = free_;
  free_ = n;
  return h;
}

void CorrelatorTable::release(Chain& c) {
  while (!c.empty()) pop(c);
}

void CorrelatorTable::rebuild() {
  size_t live = 0;
  for (Entry& e : slots_) {
    if (!e.used()) continue;
    if (dead(e)) {
      release(e.early);
      e.n_send = e.n_recv = 0;
    } else {
      ++live;
    }
  }
  // At most a quarter full afterwards, so that rebuilds stay rare (amortized O(1) per key);
  // never smaller than before (a steady stream keeps its size).
  size_t cap = std::max<size_t>(64, slots_.size());
  while (cap < 4 * live) cap <<= 1;
  spare_.assign(cap, Entry{});
  spare_.swap(slots_);
  const size_t mask = cap - 1;
  for (const Entry& e : spare_) {
    if (!e.used()) continue;
    size_t i = hash(e.key) & mask;
    while (slots_[i].used()) i = (i + 1) & mask;
    slots_[i] = e;
  }
  size_ = live;
}

CorrelatorTable::Entry& CorrelatorTable::find_or_insert(const Key& key) {
  if (2 * (size_ + 1) > slots_.size()) rebuild();
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
    Entry& e = slots_[i];
    if (!e.used()) {
      ++size_;
      e = Entry{};
      e.key = key;
      return e;  // the caller counts the half: the slot is used from then on
    }
    if (e.key == key) {
      if (dead(e)) {  // retired: a fresh key
        release(e.early);
        e = Entry{};
        e.key = key;
      }
      return e;
    }
  }
}

size_t CorrelatorTable::keys() const {
  size_t n = 0;
  for (const Entry& e : slots_) n += e.used() && !dead(e);
  return n;
}

bool CorrelatorTable::add(const Key& key, bool is_send, const Half& half,
                          std::vector<IssueAt>& issues, Half& partner) {
  Entry& k = find_or_insert(key);
  k.last_ts = std::max(k.last_ts, half.ts);
  // As in the batch join, every half of a key used by more than one send (or receive) is
  // a duplicate: the earlier ones are reported when the second one shows up.
  auto count_duplicates = [&](uint32_t n, int64_t& first_ts) {
    if (n == 1) first_ts = half.ts;
    if (n == 2) issues.push_back({first_ts, Issue::duplicate_correlator});
    if (n >= 2) issues.push_back({half.ts, Issue::duplicate_correlator});
  };
  if (is_send) {
    count_duplicates(++k.n_send, k.first_send_ts);
    if (k.n_send == 1 && k.n_recv >= 2) {
      issues.push_back({k.first_recv_ts, Issue::duplicate_correlator});
      while (!k.early.empty()) issues.push_back({pop(k.early).ts, Issue::duplicate_correlator});
    }
    release(k.early);
    if (!k.recvs.empty()) {
      partner = pop(k.recvs);
      --open_;
      return true;
    }
    push(k.sends, half);
  } else {
    if (k.n_send == 0) {
      if (++k.n_recv == 1)
        k.first_recv_ts = half.ts;
      else
        push(k.early, half);
    } else {
      count_duplicates(++k.n_recv, k.first_recv_ts);
    }
    if (!k.sends.empty()) {
      partner = pop(k.sends);
      --open_;
      return true;
    }
    push(k.recvs, half);
  }
  ++open_;
  return false;
}

void CorrelatorTable::expire(int64_t end, bool closed_end, std::vector<IssueAt>& issues) {
  if (open_ == 0) return;
  auto before_end = [&](int64_t t) { return t < end || (closed_end && t == end); };
  auto declare = [&](Chain& c, Issue issue) {
    while (!c.empty() && before_end(pool_[c.head].half.ts)) {
      issues.push_back({pop(c).ts, issue});
      --open_;
    }
  };
  for (Entry& e : slots_) {
    if (!e.used()) continue;
    declare(e.sends, Issue::unmatched_send);
    declare(e.recvs, Issue::unmatched_recv);
  }
}

}  // namespace snailtrail
