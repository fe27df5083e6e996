// The message matching of a live stream (StreamingPag): half messages by (sender,
// receiver, correlator) in one flat open-addressing table, without an allocation per key.
// The k-th send of a key pairs with its k-th receive, as in the batch join
// (message_join.cpp); a key stays until the horizon passes it, so that a correlator used
// again while its windows are open is reported as a duplicate, as the batch join does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pag/pag.hpp"

namespace snailtrail {

class CorrelatorTable {
 public:
  struct Key {
    uint32_t sender, receiver;
    int64_t correlator;
    bool operator==(const Key&) const = default;
  };
  struct Half {  // a send or receive waiting for its partner
    int64_t ts;
    uint32_t worker;  // the caller's worker index
    uint64_t node;    // absolute node number within the worker
    ActivityType type;
  };

  // Takes one half. When its partner was waiting, returns true and sets `partner` (the
  // waiting half leaves the table). Duplicate correlators are reported into `issues`.
  bool add(const Key& key, bool is_send, const Half& half, std::vector<IssueAt>& issues,
           Half& partner);
  // Halves at or before `end` (before it unless `closed_end`) are reported unmatched and
  // leave the table: their partner can no longer come once those windows are cut.
  void expire(int64_t end, bool closed_end, std::vector<IssueAt>& issues);
  // Forgets the keys without a waiting half whose last half lies before `horizon`. Those
  // are only marked (O(1)): a dead key found again starts afresh, and the dead ones leave
  // when the table is rebuilt to grow. The same as erasing them at once, given what
  // StreamingPag guarantees: halves come at or after the horizon, and every retire(h)
  // follows an expire() up to h or later (so no waiting half is left before h).
  void retire(int64_t horizon) { horizon_ = std::max(horizon_, horizon); }

  size_t keys() const;  // retained (not dead); O(table size)
  size_t open_halves() const { return open_; }

 private:
  static constexpr uint32_t kEnd = UINT32_MAX;
  struct Chain {  // a FIFO list of pool nodes
    uint32_t head = kEnd, tail = kEnd;
    bool empty() const { return head == kEnd; }
  };
  struct Entry {
    Key key{};
    uint32_t n_send = 0, n_recv = 0;               // both 0: a free slot
    int64_t last_ts = INT64_MIN;                   // latest half seen
    int64_t first_send_ts = 0, first_recv_ts = 0;  // reported too once a duplicate shows up
    Chain sends, recvs;                            // waiting, in time order
    // Receives after the first one, all before any send: the batch join reports repeated
    // receives only for a key that has a send, so they are reported when it comes.
    Chain early;
    bool used() const { return n_send != 0 || n_recv != 0; }
  };
  bool dead(const Entry& e) const {
    return e.sends.empty() && e.recvs.empty() && e.last_ts < horizon_;
  }
  struct Node {
    Half half;
    uint32_t next;
  };

  Entry& find_or_insert(const Key& key);
  void push(Chain& c, const Half& h);
  Half pop(Chain& c);
  void release(Chain& c);
  void rebuild();  // without the dead keys; larger if they were not enough

  std::vector<Entry> slots_;  // capacity a power of two, at most half full
  std::vector<Entry> spare_;  // reused by rebuild()
  size_t size_ = 0;           // used slots, dead keys included
  int64_t horizon_ = INT64_MIN;
  size_t open_ = 0;         // halves in sends and recvs chains
  std::vector<Node> pool_;  // chain nodes; free ones chained from free_
  uint32_t free_ = kEnd;
};

}  // namespace snailtrail
