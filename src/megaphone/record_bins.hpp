// stateful_unary's bins (megaphone.hpp, core.hpp): a bin's pending work is records, each
// folded on its own at its time; the fold schedules records for later times (Later).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "megaphone/core.hpp"

namespace snailtrail::megaphone {

// Pending records of a bin (the extended notificator): fold schedules them.
template <class T>
class Later {
 public:
  // Folds `rec` into the current record's bin at time t2 > the current time.
  void schedule(Time t2, T rec) {
    if (t2 <= now_) throw std::logic_error("megaphone: Later::schedule needs a later time");
    items_.push_back({t2, Routed<T>{std::move(rec), bin_, 0}});
  }
  Time now() const { return now_; }
  uint32_t bin() const { return bin_; }

  // Runtime side.
  void reset(Time now, uint32_t bin) {
    now_ = now;
    bin_ = bin;
  }
  std::vector<std::pair<Time, Routed<T>>>& items() { return items_; }

 private:
  Time now_ = 0;
  uint32_t bin_ = 0;
  std::vector<std::pair<Time, Routed<T>>> items_;
};

namespace detail {

// The bins of one worker: per time, the records not yet folded (received, migrated in,
// or scheduled through Later).
template <class State, class T>
struct RecordBins : BinsBase<State> {
  using Rec = T;
  std::map<Time, std::vector<Routed<T>>> pending;

  bool idle() const { return pending.empty(); }
  // The records pending at t, asking for a notification at t if none are.
  template <class Retain>
  std::vector<Routed<T>>& at(Time t, Retain retain) {
    auto [it, fresh] = pending.try_emplace(t);
    if (fresh || it->second.empty()) this->notes.notify_at(retain());
    return it->second;
  }
  template <class Retain>
  void add(Time t, std::vector<Routed<T>>& recs, Retain retain) {
    auto& v = at(t, retain);
    if (v.empty())
      v.swap(recs);
    else
      v.insert(v.end(), recs.begin(), recs.end());
  }
  // Moves the bin's pending records (all at times >= t: those before t are folded) to buf.
  void extract(Time t, uint32_t bin, std::vector<char>& buf) {
    std::vector<std::pair<Time, T>> items;
    for (auto it = pending.lower_bound(t); it != pending.end(); ++it) {
      auto& v = it->second;
      auto keep =
          std::partition(v.begin(), v.end(), [bin](const Routed<T>& r) { return r.bin != bin; });
      for (auto i = keep; i != v.end(); ++i) items.emplace_back(it->first, i->rec);
      v.erase(keep, v.end());
    }
    encode_pending(items, buf);
  }
  void install(const InputCapability& cap, uint32_t bin, const char*& p, const char* end) {
    decode_pending<T>(cap.time(), p, end, [&](Time ti, const T& r) {
      at(ti, [&] { return cap.delayed(ti); }).push_back(Routed<T>{r, bin, 0});
    });
  }
};

// Folds the records of one time, each with the state of its bin, in arrival order.
template <class T, class Fold>
struct FoldRecords {
  Fold fold;
  Later<T> later;
  template <class State, class Out>
  void operator()(RecordBins<State, T>& s, Capability& cap, Output<Out>& out) {
    const Time t = cap.time();
    auto it = s.pending.find(t);
    if (it == s.pending.end()) return;
    std::vector<Routed<T>> recs = std::move(it->second);
    s.pending.erase(it);
    Session<Out> session = out.session(cap);
    for (Routed<T>& r : recs) {
      if (!s.owned[r.bin])
        throw std::logic_error("megaphone: a record of bin " + std::to_string(r.bin) +
                               " reached a worker without the bin");
      later.reset(t, r.bin);
      fold(t, r.rec, s.states[r.bin], later, session);
      for (auto& [t2, item] : later.items())
        s.at(t2, [&] { return cap.delayed(t2); }).push_back(item);
      later.items().clear();
    }
  }
};

}  // namespace detail
}  // namespace snailtrail::megaphone
