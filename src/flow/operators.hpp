// Operators built on the generic ones (stream.hpp): stateless per-record operators,
// probe, per-key state applied in timestamp order, tumbling windows.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "flow/flat_map.hpp"
#include "flow/stream.hpp"

namespace snailtrail::flow {

// map, flat_map and filter only read their input (the Read pact): they share each batch
// with the stream's other readers instead of getting a copy of it (Output::flush).
template <class Out, class T, class F>
Stream<Out> map(const Stream<T>& s, std::string name, F f) {
  return s.template unary<Out>(Read{}, std::move(name), [f](ReadInput<T>& in, Output<Out>& out) {
    in.for_each([&](const InputCapability& cap, std::span<const T> data) {
      Session<Out> session = out.session(cap);
      for (const T& r : data) session.give(f(r));
    });
  });
}

// f(record, emit) calls emit(out_record) any number of times.
template <class Out, class T, class F>
Stream<Out> flat_map(const Stream<T>& s, std::string name, F f) {
  return s.template unary<Out>(Read{}, std::move(name), [f](ReadInput<T>& in, Output<Out>& out) {
    in.for_each([&](const InputCapability& cap, std::span<const T> data) {
      Session<Out> session = out.session(cap);
      for (const T& r : data) f(r, [&](Out o) { session.give(std::move(o)); });
    });
  });
}

// Kept records are copied to the output (a reader cannot move them).
template <class T, class F>
Stream<T> filter(const Stream<T>& s, std::string name, F keep) {
  return s.template unary<T>(Read{}, std::move(name), [keep](ReadInput<T>& in, Output<T>& out) {
    in.for_each([&](const InputCapability& cap, std::span<const T> data) {
      Session<T> session = out.session(cap);
      for (const T& r : data)
        if (keep(r)) session.give(r);
    });
  });
}

// Routes records to worker_of(key(record)) and passes them on unchanged.
template <class T, class KeyFn>
Stream<T> exchange_by(const Stream<T>& s, std::string name, KeyFn key) {
  return s.template unary<T>(exchange(std::move(key)), std::move(name),
                             [](Input<T>& in, Output<T>& out) {
                               in.for_each([&](const InputCapability& cap, std::vector<T>& data) {
                                 Session<T> session = out.session(cap);
                                 for (T& r : data) session.give(std::move(r));
                               });
                             });
}

// Consumes a stream; fn(time, record) sees every record; returns nothing downstream.
template <class T, class F>
void sink(const Stream<T>& s, std::string name, F fn) {
  s.template unary<char>(Pipeline{}, std::move(name), [fn](Input<T>& in, Output<char>&) mutable {
    in.for_each([&](Time t, std::vector<T>& data) {
      for (T& r : data) fn(t, r);
    });
  });
}

// The frontier of a stream as seen by this worker (readable from the worker's thread).
struct ProbeState {
  Time frontier = 0;
};
using ProbeHandle = std::shared_ptr<const ProbeState>;

// on_advance(old, new) is called whenever the stream's frontier moves (new may be
// kTimeMax: the stream is complete). A frontier-only connection: the probe holds each
// time records were sent at until it has run, as a consumer of the records would, and
// copies none of them.
template <class T, class F>
ProbeHandle probe(const Stream<T>& s, std::string name, F on_advance) {
  auto state = std::make_shared<ProbeState>();
  s.template frontier_unary<char>(std::move(name),
                                  [state, on_advance](FrontierInput& in, Output<char>&) mutable {
                                    const Time f = in.frontier();
                                    if (f != state->frontier) {
                                      on_advance(state->frontier, f);
                                      state->frontier = f;
                                    }
                                  });
  return state;
}

// A stream of no records whose frontier follows s's: for an input an operator ignores
// but whose progress it must see (no record of s is copied for it).
template <class Out, class T>
Stream<Out> frontier_stream(const Stream<T>& s, std::string name) {
  return s.template frontier_unary<Out>(std::move(name), [](FrontierInput&, Output<Out>&) {});
}

// An operator's input held per time until the input frontier passes it, for operators
// that apply records in timestamp order:
//   held.hold(in);                                         // each activation
//   held.release(in, [&](const Capability& cap, std::vector<T>& records) { ... });
//   if (held.complete(in)) done(...);                      // once
template <class T>
class HeldByTime {
 public:
  // Holds the input's new records under their times (in arrival order).
  void hold(Input<T>& in) {
    in.for_each([&](const InputCapability& cap, std::vector<T>& data) {
      auto [it, inserted] = pending_.try_emplace(cap.time());
      if (inserted) notes_.notify_at(cap.retain());
      if (it->second.empty()) {
        // Keeps the message's records and gives it an emptied buffer in exchange, so
        // that its sender reuses it (Input::for_each).
        if (it->second.capacity() == 0 && !spare_.empty()) {
          it->second.swap(spare_.back());
          spare_.pop_back();
        }
        it->second.swap(data);
      } else {
        it->second.insert(it->second.end(), std::make_move_iterator(data.begin()),
                          std::make_move_iterator(data.end()));
      }
    });
  }
  // Calls f(cap, records) for every held time cap.time() the frontier has passed, in
  // time order (cap: to give output at that time with), and forgets them.
  template <class F>
  void release(Input<T>& in, F&& f) {
    notes_.for_each(in.frontier(), [&](Capability& cap) {
      auto it = pending_.find(cap.time());
      if (it == pending_.end()) return;
      f(static_cast<const Capability&>(cap), it->second);
      it->second.clear();
      if (keep_buffer(it->second) && spare_.size() < 16) spare_.push_back(std::move(it->second));
      pending_.erase(it);
    });
  }
  // True once: at the first call after the input is complete and all is released.
  bool complete(const Input<T>& in) {
    if (finished_ || !pending_.empty() || in.frontier() != kTimeMax) return false;
    finished_ = true;
    return true;
  }

 private:
  std::map<Time, std::vector<T>> pending_;
  std::vector<std::vector<T>> spare_;  // emptied buffers of released times
  Notificator notes_;
  bool finished_ = false;
};

// Per-key state, records applied in timestamp order (Megaphone's S, without bins):
// records are exchanged by key(record); those of time t wait until the input frontier
// passes t, then fold(t, key, record, state_of_key, session) runs for each in arrival
// order and may give output at t (session: a Session<Out> at t). done(states) runs once,
// when the input is complete (states: a FlatMap<State>, flat_map.hpp). `expected_keys`:
// room for that many keys in this worker's table from the start (0: it grows as keys come).
template <class Out, class State, class T, class KeyFn, class Fold, class Done>
Stream<Out> stateful_unary(const Stream<T>& s, std::string name, KeyFn key, Fold fold, Done done,
                           size_t expected_keys = 0) {
  struct Logic {
    KeyFn key;
    Fold fold;
    Done done;
    HeldByTime<T> held;
    FlatMap<State> states;  // flat: one lookup per record (issue 35)
    void operator()(Input<T>& in, Output<Out>& out) {
      held.hold(in);
      held.release(in, [&](const Capability& cap, std::vector<T>& records) {
        Session<Out> session = out.session(cap);
        for (T& r : records) {
          const uint64_t k = key(r);
          fold(cap.time(), k, r, states[k], session);
        }
      });
      if (held.complete(in)) done(states);
    }
  };
  auto k = key;
  Logic logic{std::move(key), std::move(fold), std::move(done), {}, {}};
  if (expected_keys > 0) logic.states.reserve(expected_keys);
  return s.template unary<Out>(exchange(std::move(k)), std::move(name), std::move(logic));
}

// Windows (by end time) whose end the frontier has passed: every key's aggregate is given
// as (key, acc) at the window's end, and the window is forgotten.
template <class In, class Out, class Windows>
void give_closed_windows(In& in, Output<Out>& out, Notificator& notes, Windows& windows) {
  notes.for_each(in.frontier(), [&](Capability& cap) {
    auto it = windows.find(cap.time());
    if (it == windows.end()) return;
    Session<Out> session = out.session(cap);
    for (auto& [k, acc] : it->second) session.give(Out(k, std::move(acc)));
    windows.erase(it);
  });
}

// Sliding windows of `size` time units every `slide` units: window j covers times
// [j * slide, j * slide + size) and ends at e_j = j * slide + size - 1 (j >= 0). A record
// of time t is added to every window that covers it (ceil(size / slide) of them at most;
// none when slide > size leaves t in a gap); when the frontier passes e_j, every key seen
// in window j is given as (key, acc) at time e_j. size == slide is tumbling_window.
// add(acc, record) folds a record in. Throws std::invalid_argument if size or slide is 0.
template <class Acc, class T, class KeyFn, class Add>
Stream<std::pair<uint64_t, Acc>> sliding_window(const Stream<T>& s, std::string name, Time size,
                                                Time slide, KeyFn key, Add add) {
  if (size == 0 || slide == 0)
    throw std::invalid_argument("sliding_window: size and slide must be positive");
  using Out = std::pair<uint64_t, Acc>;
  struct Logic {
    Time size, slide;
    KeyFn key;
    Add add;
    std::map<Time, std::unordered_map<uint64_t, Acc>> windows;  // by end time
    Notificator notes;
    void operator()(Input<T>& in, Output<Out>& out) {
      in.for_each([&](const InputCapability& cap, std::vector<T>& data) {
        const Time t = cap.time();
        const Time first = t + 1 >= size ? (t + 1 - size + slide - 1) / slide : 0;
        for (Time j = first; j * slide <= t; ++j) {
          const Time end = j * slide + size - 1;
          auto [it, inserted] = windows.try_emplace(end);
          if (inserted) notes.notify_at(cap.delayed(end));
          for (T& r : data) add(it->second[key(r)], r);
        }
      });
      give_closed_windows(in, out, notes, windows);
    }
  };
  auto k = key;
  return s.template unary<Out>(exchange(std::move(k)), std::move(name),
                               Logic{size, slide, std::move(key), std::move(add), {}, {}});
}

// Tumbling windows of `width` time units: records of time t count toward the window
// ending at e = (t / width + 1) * width - 1; when the frontier passes e, every key's
// aggregate is given as (key, acc) at time e. add(acc, record) folds a record in. The
// sliding windows whose slide is their size. Throws std::invalid_argument if width is 0.
template <class Acc, class T, class KeyFn, class Add>
Stream<std::pair<uint64_t, Acc>> tumbling_window(const Stream<T>& s, std::string name, Time width,
                                                 KeyFn key, Add add) {
  return sliding_window<Acc>(s, std::move(name), width, width, std::move(key), std::move(add));
}

}  // namespace snailtrail::flow
