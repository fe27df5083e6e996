// Megaphone: latency-conscious state migration on the dataflow runtime (thesis ch. 5,
// docs/MEGAPHONE.md). A stateful operator whose state is split into 2^k bins; which
// worker holds which bin is a configuration that changes over (logical) time through a
// control stream of (time, bin, worker) updates, and moving a bin moves its state and
// its pending records through the runtime's exchange channels (also between processes).
//
//   auto control = ...;  // Stream<ControlUpdate>, e.g. make_controller(...) (jobs.hpp)
//   auto out = megaphone::stateful_unary<State, Out>(
//       records, control, "count", Options{.log_bins = 12},
//       [](const T& r) { return hash_of(r); },                      // exchange value
//       [](Time t, T& r, State& s, Later<T>& later, Session<Out>& out) {...},  // fold
//       [](uint32_t bin, State& s) {...});                          // done (input complete)
//
// * The bin of a record is the high log_bins bits of its exchange value (thesis §5.2.2),
//   so a hash spreads keys evenly; a dense key space can use rotr(key, k) instead.
// * Initially bin b is on worker b % W (W: all workers of all processes).
// * fold runs for each record once the frontier has passed its time, in timestamp order,
//   with the state of the record's bin; `later.schedule(t2, r2)` (t2 > t) queues a
//   record of the same bin for time t2 (the extended notificator of §5.2.3.2): it is
//   folded at t2 on whichever worker holds the bin then, migrations included.
// * State is serialized with Codec<State> (trivially copyable types, std::vector and
//   std::unordered_map and flow::FlatMap of those are provided; specialize it for others), and
//   pending records must be trivially copyable (they cross processes as bytes).
//
// The operators F (routing), M (migration) and S (state) are the core of both variants
// (core.hpp); the bins' pending work is the variant's (record_bins.hpp, batch_bins.hpp);
// State codecs (strings, pairs, ordered and unordered containers) are in codec.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "flow/operators.hpp"
#include "megaphone/batch_bins.hpp"
#include "megaphone/codec.hpp"
#include "megaphone/core.hpp"
#include "megaphone/record_bins.hpp"

namespace snailtrail::megaphone {

template <class State, class Out, class T, class ExchFn, class Fold, class Done>
Stream<Out> stateful_unary(const Stream<T>& input, const Stream<ControlUpdate>& control,
                           const std::string& name, Options opts, ExchFn exch, Fold fold,
                           Done done) {
  static_assert(std::is_trivially_copyable_v<T>, "Megaphone's records must be trivially copyable");
  return detail::migratable<detail::RecordBins<State, T>, Out>(
      input, control, name, opts, std::move(exch),
      detail::FoldRecords<T, Fold>{std::move(fold), {}}, std::move(done));
}

// The same computation on a plain, non-migratable operator (the overhead baseline,
// `--native`): records go to worker dest(record, W) and are folded in timestamp order
// into the worker's one State; done(state) when the input is complete.
template <class State, class Out, class T, class DestFn, class Fold, class Done>
Stream<Out> native_unary(const Stream<T>& input, const std::string& name, DestFn dest, Fold fold,
                         Done done) {
  Worker& w = input.worker();
  const uint32_t W = w.peers();
  const std::vector<uint64_t> rkeys = route_keys(W);
  struct Logic {
    Fold fold;
    Done done;
    State state{};
    flow::HeldByTime<T> held;
    void operator()(Input<T>& in, Output<Out>& out) {
      held.hold(in);
      held.release(in, [&](const Capability& cap, std::vector<T>& records) {
        Session<Out> session = out.session(cap);
        for (T& r : records) fold(cap.time(), r, state, session);
      });
      if (held.complete(in)) done(state);
    }
  };
  auto key = [rkeys, dest, W](const T& r) { return rkeys[dest(r, W)]; };
  return input.template unary<Out>(flow::exchange(key), name,
                                   Logic{std::move(fold), std::move(done), {}, {}});
}

// ---- the binary operator ----
//
//   auto out = megaphone::stateful_binary<State, Out>(
//       a, b, control, "join", Options{.log_bins = 8},
//       [](const A& r) { return hash_of(r.key); },   // exchange value of an A record
//       [](const B& r) { return hash_of(r.key); },   // ... of a B record (same bins)
//       [](Time t, uint32_t bin, std::vector<A>& as, std::vector<B>& bs, State& s,
//          Wake& wake, Session<Out>& out) {...},       // fold: one (time, bin) at a time
//       [](uint32_t bin, State& s) {...});             // done (both inputs complete)
//
// Two record inputs share one set of bins and one State per bin (a join keeps both
// sides of a key in one bin). The fold is called once per (time, bin) that has records
// of either input at that time, or a wake-up for it — with all of them at once (the
// bin's records of the time, in arrival order; sort them if the order matters), in
// timestamp order per bin, on the worker the configuration names for (time, bin).
// `wake.at(t2)` (t2 > t) calls the fold for the bin at t2 even without records (a timer:
// the State says what is due); pending records and wake-ups travel with their bin. F, M
// and S are the unary operator's (above); the two inputs are first merged into one
// stream of Either<A, B> (a pipeline operator NAME-in), routed by one F.

template <class State, class Out, class A, class B, class ExchA, class ExchB, class Fold,
          class Done>
Stream<Out> stateful_binary(const Stream<A>& a, const Stream<B>& b,
                            const Stream<ControlUpdate>& control, const std::string& name,
                            Options opts, ExchA exch_a, ExchB exch_b, Fold fold, Done done) {
  static_assert(std::is_trivially_copyable_v<A> && std::is_trivially_copyable_v<B>,
                "Megaphone's records must be trivially copyable");
  using E = Either<A, B>;
  // Both inputs as one stream (no exchange: F routes).
  auto merged = flow::binary<E>(a, flow::Pipeline{}, b, flow::Pipeline{}, name + "-in",
                                [](Input<A>& ia, Input<B>& ib, Output<E>& out) {
                                  ia.for_each([&](const InputCapability& cap, std::vector<A>& v) {
                                    Session<E> session = out.session(cap);
                                    for (const A& r : v) session.give(E::of_a(r));
                                  });
                                  ib.for_each([&](const InputCapability& cap, std::vector<B>& v) {
                                    Session<E> session = out.session(cap);
                                    for (const B& r : v) session.give(E::of_b(r));
                                  });
                                });
  auto exch = [exch_a, exch_b](const E& e) -> uint64_t {
    return e.which == 0 ? exch_a(e.a()) : exch_b(e.b());
  };
  return detail::migratable<detail::BatchBins<State, E>, Out>(
      merged, control, name, opts, exch,
      detail::FoldBatches<A, B, Fold>{std::move(fold), {}, {}, {}}, std::move(done));
}

}  // namespace snailtrail::megaphone
