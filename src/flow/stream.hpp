// Streams, ports and the generic operators every other operator is made of:
// source, unary and binary (docs/RUNTIME.md "API").
//
//   Stream<uint64_t> keys = source<uint64_t>(w, "source",
//       [](Capability& cap, Output<uint64_t>& out) { out.give(cap, 7); ... });
//   auto counted = keys.unary<uint64_t>(exchange(key_of), "count",
//       [](Input<uint64_t>& in, Output<uint64_t>& out) {
//         in.for_each([&](const InputCapability& cap, auto& data) { out.give(cap, ...); });
//       });
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "flow/worker.hpp"

namespace snailtrail::flow {

// splitmix64's finalizer: a well-mixed hash of a key.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// The worker that owns `key` on an exchange among `workers`: the high bits of its hash.
inline uint32_t worker_of(uint64_t key, uint32_t workers) {
  return static_cast<uint32_t>((static_cast<unsigned __int128>(mix64(key)) * workers) >> 64);
}

inline constexpr size_t kBatch = 1024;  // records per message at most

// Records a fresh batch buffer is reserved for: kBatch, but at most ~128 KiB (Megaphone's
// 4 KiB state chunks grow as needed instead of reserving 4 MiB per message). An emptied
// buffer goes back to its sender only up to this size; a larger one is freed.
template <class T>
inline constexpr size_t kReserve = std::clamp<size_t>((size_t{128} << 10) / sizeof(T), 1, kBatch);
// A buffer worth keeping for a next batch: about a fresh one's size (a grown one, e.g. a
// time's records gathered by HeldByTime, would keep its memory for the run's rest).
template <class T>
bool keep_buffer(const std::vector<T>& v) {
  return v.capacity() >= kReserve<T> && v.capacity() <= 2 * kReserve<T>;
}

// A buffer for a batch: `spare` if it has room (a recycled one), else a fresh reservation,
// counted in WorkerCounters::fresh_buffers.
template <class T>
void ready_buffer(Worker& w, std::vector<T>& v) {
  if (v.capacity() >= kReserve<T>) return;
  ++w.counters().fresh_buffers;
  v.reserve(kReserve<T>);
}
// An empty message for `pusher`: one its receiver gave back, else a new one (counted).
template <class T>
std::unique_ptr<Message<T>> message_for(Worker& w, Pusher<T>& pusher) {
  if (auto m = pusher.reuse()) return m;
  ++w.counters().fresh_buffers;
  return std::make_unique<Message<T>>();
}

// Records of one time into a channel; implemented by pipeline and exchange edges.
template <class T>
class Target {
 public:
  virtual ~Target() = default;
  // May take the batch's contents; leaves `batch` empty, holding a recycled buffer or none.
  virtual void send(Time t, std::vector<T>& batch) = 0;
};

// Same-worker queue (a pipeline edge): no synchronization, same interfaces. Emptied
// messages come back to `free` (Puller::recycle) for the next send.
template <class T>
struct LocalQueue {
  std::deque<std::unique_ptr<Message<T>>> q;
  std::vector<std::unique_ptr<Message<T>>> free;
};
template <class T>
class LocalPuller final : public Puller<T> {
 public:
  explicit LocalPuller(std::shared_ptr<LocalQueue<T>> q) : q_(std::move(q)) {}
  std::unique_ptr<Message<T>> pull() override {
    if (q_->q.empty()) return nullptr;
    auto m = std::move(q_->q.front());
    q_->q.pop_front();
    return m;
  }
  void recycle(std::unique_ptr<Message<T>> m) override {
    if (q_->free.size() < 64) q_->free.push_back(std::move(m));
  }

 private:
  std::shared_ptr<LocalQueue<T>> q_;
};

// Queues a message at time t on a same-worker edge, recycling one the consumer gave back;
// `fill` sets its records.
template <class T, class Fill>
void push_local(Worker& w, uint32_t edge, LocalQueue<T>& q, Time t, Fill&& fill) {
  if (t < w.frontier(edge)) ++w.counters().early_records;
  std::unique_ptr<Message<T>> m;
  if (!q.free.empty()) {
    m = std::move(q.free.back());
    q.free.pop_back();
  } else {
    ++w.counters().fresh_buffers;
    m = std::make_unique<Message<T>>();
  }
  m->time = t;
  m->from = w.index();
  m->correlator = 0;
  m->arrived_ns = -1;
  fill(*m);
  w.change(edge_location(edge), t, +1);
  q.q.push_back(std::move(m));
}

template <class T>
class PipelineTarget final : public Target<T> {
 public:
  PipelineTarget(Worker& w, uint32_t edge, std::shared_ptr<LocalQueue<T>> q)
      : w_(w), edge_(edge), q_(std::move(q)) {}
  void send(Time t, std::vector<T>& batch) override {
    // The sender keeps the message's old (emptied) buffer.
    push_local(w_, edge_, *q_, t, [&](Message<T>& m) { m.data.swap(batch); });
  }

 private:
  Worker& w_;
  uint32_t edge_;
  std::shared_ptr<LocalQueue<T>> q_;
};

// A pipeline edge whose consumer only reads its records (the Read pact, ReadInput): it is
// given a batch shared with the other readers of the output (Output::flush), by reference
// count, not a copy of its own. The message holds a reference until the consumer has read it.
template <class T>
class ReadTarget {
 public:
  ReadTarget(Worker& w, uint32_t edge, std::shared_ptr<LocalQueue<T>> q)
      : w_(w), edge_(edge), q_(std::move(q)) {}
  void share(Time t, const SharedBatch<T>& batch) {
    push_local(w_, edge_, *q_, t, [&](Message<T>& m) { m.shared = batch; });
  }

 private:
  Worker& w_;
  uint32_t edge_;
  std::shared_ptr<LocalQueue<T>> q_;
};

// A frontier-only edge (same worker): the consumer needs the times records were sent
// at (for progress), not the records, so none is copied. Each entry holds one pointstamp
// on the edge, like a message, until the consumer takes it (FrontierInput::stage), so
// the consumer's frontier is the one a pipeline edge carrying the records would have.
struct FrontierQueue {
  std::vector<std::pair<Time, uint64_t>> sent;  // (time, records)
};
class FrontierTarget {
 public:
  FrontierTarget(Worker& w, uint32_t edge, std::shared_ptr<FrontierQueue> q)
      : w_(w), edge_(edge), q_(std::move(q)) {}
  void note(Time t, uint64_t records) {
    if (t < w_.frontier(edge_)) ++w_.counters().early_records;
    auto& s = q_->sent;
    if (!s.empty() && s.back().first == t) {  // already held at t
      s.back().second += records;
      return;
    }
    w_.change(edge_location(edge_), t, +1);
    s.emplace_back(t, records);
  }

 private:
  Worker& w_;
  uint32_t edge_;
  std::shared_ptr<FrontierQueue> q_;
};

// Routes each record to worker_of(key(record)); one message per destination and batch.
// Instrumented as serialization (the partitioning) and one data message per remote batch.
template <class T, class KeyFn>
class ExchangeTarget final : public Target<T> {
 public:
  ExchangeTarget(Worker& w, uint32_t op, uint32_t edge, KeyFn key, uint64_t channel)
      : w_(w), op_(op), edge_(edge), key_(std::move(key)), bufs_(w.peers()) {
    pushers_ = w.fabric().pushers<T>(channel, w.index());
    for (uint32_t d = 0; d < pushers_.size(); ++d)
      if (d != w.index() && w.recorder().on())
        pushers_[d]->on_enter = [this, d](Message<T>& m) { w_.trace_send(m, d); };
    w.add_flusher([this] {
      bool all = true;
      for (auto& p : pushers_) all = p->flush() && all;
      return all;
    });
  }
  void send(Time t, std::vector<T>& batch) override {
    if (t < w_.frontier(edge_)) ++w_.counters().early_records;
    Recorder& rec = w_.recorder();
    const uint32_t W = w_.peers();
    const int64_t t0 = rec.on() ? rec.now() : 0;
    const size_t n = batch.size();
    // A batch whose records all go to one worker moves as it is (Megaphone's state
    // chunks: megabytes not copied again); the scan stops at the first other worker.
    uint32_t one = batch.empty() ? 0 : worker_of(key_(batch.front()), W);
    for (size_t i = 1; W > 1 && i < n && one < W; ++i)
      if (worker_of(key_(batch[i]), W) != one) one = W;
    if (one < W && bufs_[one].empty()) {
      bufs_[one].swap(batch);  // the sender keeps bufs_[one]'s old (empty) buffer
    } else {
      for (auto& r : batch) {
        auto& b = bufs_[worker_of(key_(r), W)];
        if (b.empty()) ready_buffer(w_, b);
        b.push_back(std::move(r));
      }
      batch.clear();
    }
    if (rec.on()) {
      rec.activity(t0, ActivityType::serialization, EventKind::start, op_, true);
      rec.activity(rec.now(), ActivityType::serialization, EventKind::end, op_, true,
                   static_cast<int64_t>(n));
    }
    for (uint32_t d = 0; d < W; ++d) {
      if (bufs_[d].empty()) continue;
      auto m = message_for(w_, *pushers_[d]);
      m->time = t;
      m->from = w_.index();
      m->correlator = 0;
      m->arrived_ns = -1;
      m->data.swap(bufs_[d]);  // bufs_[d]: the returned message's buffer (or none)
      w_.change(edge_location(edge_), t, +1);
      pushers_[d]->push(std::move(m));
    }
  }

 private:
  Worker& w_;
  uint32_t op_, edge_;
  KeyFn key_;
  std::vector<std::vector<T>> bufs_;
  std::vector<std::unique_ptr<Pusher<T>>> pushers_;
};

template <class T>
class Output;

// Records at one capability's time into an operator's output (timely's Session): made by
// Output::session, which checks the capability once. Neither copyable nor movable, so it
// lives no longer than the scope that holds the capability.
template <class T>
class Session {
 public:
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  void give(T rec) { out_->give_at(time_, std::move(rec)); }
  Time time() const { return time_; }

 private:
  friend class Output<T>;
  Session(Output<T>& out, Time t) : out_(&out), time_(t) {}
  Output<T>* out_;
  Time time_;
};

// An operator's output: buffers records of one time, hands full batches to every edge.
// Records are given with a capability of this operator (Capability, or the
// InputCapability of a message being processed), at its time: giving without one does not
// compile, giving with another operator's (or a dropped one) throws std::logic_error.
template <class T>
class Output {
 public:
  Output(Worker& w, uint32_t op) : w_(w), op_(op) {}
  void give(const Capability& cap, T rec) { give_at(checked(cap), std::move(rec)); }
  void give(const InputCapability& cap, T rec) { give_at(checked(cap), std::move(rec)); }
  Session<T> session(const Capability& cap) { return Session<T>(*this, checked(cap)); }
  Session<T> session(const InputCapability& cap) { return Session<T>(*this, checked(cap)); }
  // Sends every batch given since the last flush (after the operator's activity, so
  // that exchange work is traced apart from processing).
  // Frontier-only targets get the batch's time and size. Read-only targets (ReadTarget)
  // share one batch by reference count: the batch itself if no target takes ownership,
  // else one copy. Owning targets (Target: pipeline and exchange edges) get a copy each,
  // but the last, which gets the batch. Copies per batch: (owners - 1) + (readers > 0 and
  // owners > 0), at most; before rt49 every target but the last got one.
  void flush() {
    seal();
    for (auto& [t, batch] : ready_) {
      for (auto& f : frontier_targets_) f->note(t, batch.size());
      if (!readers_.empty()) {
        SharedBatch<T> shared = take_shared();
        if (targets_.empty())
          shared.mutable_data().swap(batch);  // batch: the shared one's emptied buffer
        else
          shared.mutable_data().assign(batch.begin(), batch.end());
        for (auto& r : readers_) r->share(t, shared);
        give_shared(std::move(shared));
      }
      for (size_t i = 0; i < targets_.size(); ++i) {
        if (i + 1 == targets_.size()) {
          targets_[i]->send(t, batch);
        } else {
          std::vector<T> copy = take_spare();
          copy.assign(batch.begin(), batch.end());
          targets_[i]->send(t, copy);
          give_spare(copy);
        }
      }
      give_spare(batch);
    }
    ready_.clear();
  }
  uint64_t take_given() {
    uint64_t g = given_;
    given_ = 0;
    return g;
  }
  uint32_t op() const { return op_; }
  Worker& worker() { return w_; }
  void add_target(std::unique_ptr<Target<T>> t) { targets_.push_back(std::move(t)); }
  void add_frontier_target(std::unique_ptr<FrontierTarget> t) {
    frontier_targets_.push_back(std::move(t));
  }
  void add_read_target(std::unique_ptr<ReadTarget<T>> t) { readers_.push_back(std::move(t)); }

 private:
  friend class Session<T>;
  Worker& w_;
  uint32_t op_;
  void give_at(Time t, T rec) {
    if (t != time_ && !buf_.empty()) seal();
    time_ = t;
    buf_.push_back(std::move(rec));
    ++given_;
    if (buf_.size() >= kBatch) seal();
  }
  template <class Cap>
  Time checked(const Cap& cap) const {
    if constexpr (std::is_same_v<Cap, Capability>)
      if (!cap.valid()) [[unlikely]]
        throw std::logic_error("give: a dropped capability");
    if (cap.op() != op_) [[unlikely]]
      throw std::logic_error("give: a capability of operator " + std::to_string(cap.op()) +
                             " used on operator " + std::to_string(op_) + "'s output");
    return cap.time();
  }
  void seal() {
    if (buf_.empty()) return;
    ready_.emplace_back(time_, std::move(buf_));
    buf_ = take_spare();
  }
  // Buffers the targets handed back (their receivers' emptied messages), for the next
  // batches: in steady state no batch allocates.
  std::vector<T> take_spare() {
    std::vector<T> v;
    if (!spare_.empty()) {
      v.swap(spare_.back());
      spare_.pop_back();
    }
    ready_buffer(w_, v);
    return v;
  }
  void give_spare(std::vector<T>& v) {
    v.clear();
    if (keep_buffer(v) && spare_.size() < 8) spare_.push_back(std::move(v));
    v = {};
  }
  // A shared batch to fill: one of the pool whose readers have all let go (they run on
  // this worker, so in steady state one is), else a new one (counted as a fresh buffer).
  SharedBatch<T> take_shared() {
    for (auto& b : shared_pool_)
      if (b.unique()) {
        SharedBatch<T> mine = std::move(b);
        std::swap(b, shared_pool_.back());
        shared_pool_.pop_back();
        mine.mutable_data().clear();
        return mine;
      }
    ++w_.counters().fresh_buffers;
    SharedBatch<T> b = SharedBatch<T>::make();
    b.mutable_data().reserve(kReserve<T>);
    return b;
  }
  // Keeps a reference for refilling once its readers have let go.
  void give_shared(SharedBatch<T> b) {
    if (keep_buffer(b.data()) && shared_pool_.size() < 16) shared_pool_.push_back(std::move(b));
  }
  Time time_ = 0;
  std::vector<T> buf_;
  std::vector<std::pair<Time, std::vector<T>>> ready_;
  std::vector<std::vector<T>> spare_;
  std::vector<std::unique_ptr<Target<T>>> targets_;
  std::vector<std::unique_ptr<FrontierTarget>> frontier_targets_;
  std::vector<std::unique_ptr<ReadTarget<T>>> readers_;
  std::vector<SharedBatch<T>> shared_pool_;
  uint64_t given_ = 0;
};

// An operator's input: the messages of one edge. Input<T> (pipeline and exchange edges)
// owns its records: for_each hands each batch as a std::vector<T>& that may be moved
// from. ReadInput<T> (the Read pact) only reads them: for_each hands a
// std::span<const T>, possibly a batch shared with other readers of the same output.
template <class T, bool Owned>
class BasicInput {
 public:
  using Records = std::conditional_t<Owned, std::vector<T>&, std::span<const T>>;
  BasicInput(Worker& w, uint32_t op, uint32_t edge, std::unique_ptr<Puller<T>> puller)
      : w_(w), op_(op), edge_(edge), puller_(std::move(puller)) {
    w_.add_inbound(puller_.get());
  }
  // Least time that may still arrive (kTimeMax: the input is complete).
  Time frontier() const { return w_.frontier(edge_); }
  // Calls fn(cap, data) (an InputCapability at the message's time, to give output with
  // or retain) or fn(time, data) (an operator that gives no output at that time) for every
  // message taken this activation; data (Records) may be moved from if Owned. A message
  // counts as consumed (its time no longer held) only once fn has seen it.
  template <class F>
  void for_each(F&& fn) {
    while (!staged_.empty()) {
      auto m = std::move(staged_.front());
      staged_.pop_front();
      w_.change(edge_location(edge_), m->time, -1);
      w_.note_change();
      if constexpr (Owned) {
        call(fn, m->time, m->data);
      } else {
        call(fn, m->time, m->records());
        m->shared.reset();  // this reader lets go of a shared batch
      }
      // Back to its sender, emptied here (the records die on this thread).
      m->data.clear();
      if (!keep_buffer(m->data)) m->data = {};
      puller_->recycle(std::move(m));
    }
  }
  // Runtime side: takes up to `limit` messages, counts them consumed. Receipts are traced
  // at each message's arrival (Recorder::receipt), not here.
  uint64_t stage(size_t limit = 256) {
    uint64_t records = 0;
    Recorder& rec = w_.recorder();
    const Time f = frontier();
    for (size_t i = 0; i < limit; ++i) {
      auto m = puller_->pull();
      if (!m) break;
      const size_t n = m->records().size();
      if (m->time < f || m->time < seen_) ++w_.counters().early_records;
      if (rec.on() && m->correlator != 0)
        rec.receipt(m->arrived_ns, ActivityType::data_message, m->from, m->correlator,
                    static_cast<int64_t>(n));
      records += n;
      staged_.push_back(std::move(m));
    }
    seen_ = std::max(seen_, f);
    return records;
  }
  bool has_staged() const { return !staged_.empty(); }

 private:
  template <class F, class D>
  void call(F& fn, Time t, D&& data) {
    if constexpr (std::is_invocable_v<F&, const InputCapability&, D>) {
      const InputCapability cap(&w_, op_, t);
      fn(cap, std::forward<D>(data));
    } else {
      fn(t, std::forward<D>(data));
    }
  }
  Worker& w_;
  uint32_t op_, edge_;
  std::unique_ptr<Puller<T>> puller_;
  std::deque<std::unique_ptr<Message<T>>> staged_;
  Time seen_ = 0;  // the greatest frontier observed (records below it are early)
};
template <class T>
using Input = BasicInput<T, true>;
template <class T>
using ReadInput = BasicInput<T, false>;

// A frontier-only input (Stream::frontier_unary): the times of the records sent on the
// edge, without the records.
class FrontierInput {
 public:
  FrontierInput(Worker& w, uint32_t edge, std::shared_ptr<FrontierQueue> q)
      : w_(w), edge_(edge), q_(std::move(q)) {}
  // Least time that may still arrive (kTimeMax: the input is complete).
  Time frontier() const { return w_.frontier(edge_); }
  // Runtime side: takes what was sent; returns the number of records.
  uint64_t stage() {
    uint64_t records = 0;
    for (auto [t, n] : q_->sent) {
      w_.change(edge_location(edge_), t, -1);
      w_.note_change();
      records += n;
    }
    q_->sent.clear();
    return records;
  }

 private:
  Worker& w_;
  uint32_t edge_;
  std::shared_ptr<FrontierQueue> q_;
};

// Delivers requested times once every input's frontier has passed them.
class Notificator {
 public:
  void notify_at(Capability cap) {
    const Time t = cap.time();
    auto it = pending_.find(t);
    if (it == pending_.end()) pending_.emplace(t, std::move(cap));
  }
  // fn(cap) for each requested t < frontier, in time order; the capability is dropped
  // after fn returns unless fn moved it away.
  template <class F>
  bool for_each(Time frontier, F&& fn) {
    bool any = false;
    while (!pending_.empty() && pending_.begin()->first < frontier) {
      Capability cap = std::move(pending_.begin()->second);
      pending_.erase(pending_.begin());
      fn(cap);
      any = true;
    }
    return any;
  }
  bool empty() const { return pending_.empty(); }
  size_t size() const { return pending_.size(); }

 private:
  std::map<Time, Capability> pending_;
};

struct Pipeline {};
// A pipeline edge whose consumer only reads the records (a ReadInput): shares batches with
// the output's other readers instead of getting a copy (Output::flush).
struct Read {};
template <class KeyFn>
struct Exchange {
  KeyFn key;
};
template <class KeyFn>
Exchange<KeyFn> exchange(KeyFn key) {
  return Exchange<KeyFn>{std::move(key)};
}

template <class T>
class Stream {
 public:
  Stream(Worker& w, uint32_t op, Output<T>* out) : w_(&w), op_(op), out_(out) {}
  Worker& worker() const { return *w_; }
  uint32_t op() const { return op_; }

  // Connects this stream to operator `to_op`; returns its input.
  std::unique_ptr<Input<T>> connect(uint32_t to_op, Pipeline) const {
    const uint32_t edge = w_->add_edge(op_, to_op);
    auto q = std::make_shared<LocalQueue<T>>();
    out_->add_target(std::make_unique<PipelineTarget<T>>(*w_, edge, q));
    return std::make_unique<Input<T>>(*w_, to_op, edge, std::make_unique<LocalPuller<T>>(q));
  }
  std::unique_ptr<ReadInput<T>> connect(uint32_t to_op, Read) const {
    const uint32_t edge = w_->add_edge(op_, to_op);
    auto q = std::make_shared<LocalQueue<T>>();
    out_->add_read_target(std::make_unique<ReadTarget<T>>(*w_, edge, q));
    return std::make_unique<ReadInput<T>>(*w_, to_op, edge, std::make_unique<LocalPuller<T>>(q));
  }
  template <class KeyFn>
  std::unique_ptr<Input<T>> connect(uint32_t to_op, Exchange<KeyFn> ex) const {
    const uint32_t edge = w_->add_edge(op_, to_op);
    const uint64_t channel = w_->new_channel();
    out_->add_target(
        std::make_unique<ExchangeTarget<T, KeyFn>>(*w_, op_, edge, std::move(ex.key), channel));
    return std::make_unique<Input<T>>(*w_, to_op, edge,
                                      w_->fabric().puller<T>(channel, w_->index()));
  }

  // A frontier-only connection (same worker): no record is copied for it.
  std::unique_ptr<FrontierInput> connect_frontier(uint32_t to_op) const {
    const uint32_t edge = w_->add_edge(op_, to_op);
    auto q = std::make_shared<FrontierQueue>();
    out_->add_frontier_target(std::make_unique<FrontierTarget>(*w_, edge, q));
    return std::make_unique<FrontierInput>(*w_, edge, q);
  }

  // The generic single-input operator: logic(Input<T>&, Output<Out>&) runs every round.
  template <class Out, class Pact, class Logic>
  Stream<Out> unary(Pact pact, std::string name, Logic logic) const;
  // An operator that sees only this stream's frontier: logic(FrontierInput&, Output<Out>&)
  // runs every round (probes, an input an operator ignores).
  template <class Out, class Logic>
  Stream<Out> frontier_unary(std::string name, Logic logic) const;

 private:
  Worker* w_;
  uint32_t op_;
  Output<T>* out_;
};

namespace detail {

// The operator's activation as processing, minus the parts it carved out as other
// activities (Recorder::carve), which appear in between.
inline void trace_processing(Recorder& rec, int64_t t0, uint32_t op, uint64_t records) {
  rec.activity(t0, ActivityType::processing, EventKind::start, op, true);
  for (const auto& c : rec.carved()) {
    rec.activity(c.t0, ActivityType::processing, EventKind::end, op, true);
    rec.activity(c.t0, c.a, EventKind::start, op, true);
    rec.activity(c.t1, c.a, EventKind::end, op, true, c.records);
    rec.activity(c.t1, ActivityType::processing, EventKind::start, op, true);
  }
  rec.carved().clear();
  rec.activity(rec.now(), ActivityType::processing, EventKind::end, op, true,
               static_cast<int64_t>(records));
}

// One activation of an operator with inputs: `n` records staged, `logic()` run, traced as
// processing if it did work (took records or changed the progress state), output sent.
template <class Out, class Logic>
bool run_activation(Worker& w, uint32_t op, uint64_t n, Output<Out>& out, Logic&& logic) {
  Recorder& rec = w.recorder();
  const int64_t t0 = rec.on() ? rec.now() : 0;
  const size_t before = w.pending_changes();
  logic();
  const bool work = n > 0 || w.pending_changes() != before;
  if (rec.on() && work) trace_processing(rec, t0, op, n);
  out.flush();
  out.take_given();
  return work;
}

template <class T, class Logic>
class SourceOp final : public OperatorBase {
 public:
  SourceOp(Worker& w, uint32_t op, Logic logic)
      : w_(w), op_(op), out_(w, op), cap_(w.initial_capability(op)), logic_(std::move(logic)) {}
  bool schedule() override {
    if (!cap_.valid()) return false;
    Recorder& rec = w_.recorder();
    const int64_t t0 = rec.on() ? rec.now() : 0;
    const size_t before = w_.pending_changes();
    logic_(cap_, out_);
    const uint64_t n = out_.take_given();
    if (rec.on() && n > 0) {
      rec.activity(t0, ActivityType::input, EventKind::start, op_, true);
      rec.activity(rec.now(), ActivityType::input, EventKind::end, op_, true,
                   static_cast<int64_t>(n));
    }
    out_.flush();
    return n > 0 || w_.pending_changes() != before;
  }
  Output<T>& output() { return out_; }

 private:
  Worker& w_;
  uint32_t op_;
  Output<T> out_;
  Capability cap_;
  Logic logic_;
};

// One input (an Input<T>, or a FrontierInput that carries no records), one output.
template <class InputT, class Out, class Logic>
class UnaryOp final : public OperatorBase {
 public:
  UnaryOp(Worker& w, uint32_t op, std::unique_ptr<InputT> in, Logic logic)
      : w_(w), op_(op), in_(std::move(in)), out_(w, op), logic_(std::move(logic)) {}
  bool schedule() override {
    return run_activation(w_, op_, in_->stage(), out_, [&] { logic_(*in_, out_); });
  }
  Output<Out>& output() { return out_; }

 private:
  Worker& w_;
  uint32_t op_;
  std::unique_ptr<InputT> in_;
  Output<Out> out_;
  Logic logic_;
};

// In1, In2: Input<A> or ReadInput<A> (the pacts decide).
template <class In1, class In2, class Out, class Logic>
class BinaryOp final : public OperatorBase {
 public:
  BinaryOp(Worker& w, uint32_t op, std::unique_ptr<In1> in1, std::unique_ptr<In2> in2, Logic logic)
      : w_(w),
        op_(op),
        in1_(std::move(in1)),
        in2_(std::move(in2)),
        out_(w, op),
        logic_(std::move(logic)) {}
  bool schedule() override {
    const uint64_t n = in1_->stage() + in2_->stage();
    return run_activation(w_, op_, n, out_, [&] { logic_(*in1_, *in2_, out_); });
  }
  Output<Out>& output() { return out_; }

 private:
  Worker& w_;
  uint32_t op_;
  std::unique_ptr<In1> in1_;
  std::unique_ptr<In2> in2_;
  Output<Out> out_;
  Logic logic_;
};

}  // namespace detail

// A source: logic(Capability& cap, Output<T>& out) runs every round until it drops cap
// (it starts at time 0; downgrade it as time advances, drop it when done).
template <class T, class Logic>
Stream<T> source(Worker& w, std::string name, Logic logic) {
  const uint32_t op = w.add_operator(std::move(name));
  auto impl = std::make_unique<detail::SourceOp<T, Logic>>(w, op, std::move(logic));
  Output<T>* out = &impl->output();
  w.set_operator(op, std::move(impl));
  return Stream<T>(w, op, out);
}

template <class T>
template <class Out, class Pact, class Logic>
Stream<Out> Stream<T>::unary(Pact pact, std::string name, Logic logic) const {
  const uint32_t op = w_->add_operator(std::move(name));
  auto in = connect(op, std::move(pact));
  using In = typename decltype(in)::element_type;  // Input<T>, or ReadInput<T> (Read)
  auto impl =
      std::make_unique<detail::UnaryOp<In, Out, Logic>>(*w_, op, std::move(in), std::move(logic));
  Output<Out>* out = &impl->output();
  w_->set_operator(op, std::move(impl));
  return Stream<Out>(*w_, op, out);
}

template <class T>
template <class Out, class Logic>
Stream<Out> Stream<T>::frontier_unary(std::string name, Logic logic) const {
  const uint32_t op = w_->add_operator(std::move(name));
  auto in = connect_frontier(op);
  auto impl = std::make_unique<detail::UnaryOp<FrontierInput, Out, Logic>>(*w_, op, std::move(in),
                                                                           std::move(logic));
  Output<Out>* out = &impl->output();
  w_->set_operator(op, std::move(impl));
  return Stream<Out>(*w_, op, out);
}

// The generic two-input operator: logic(Input<A>&, Input<B>&, Output<Out>&).
template <class Out, class A, class B, class PactA, class PactB, class Logic>
Stream<Out> binary(const Stream<A>& a, PactA pa, const Stream<B>& b, PactB pb, std::string name,
                   Logic logic) {
  Worker& w = a.worker();
  const uint32_t op = w.add_operator(std::move(name));
  auto in1 = a.connect(op, std::move(pa));
  auto in2 = b.connect(op, std::move(pb));
  using In1 = typename decltype(in1)::element_type;
  using In2 = typename decltype(in2)::element_type;
  auto impl = std::make_unique<detail::BinaryOp<In1, In2, Out, Logic>>(
      w, op, std::move(in1), std::move(in2), std::move(logic));
  Output<Out>* out = &impl->output();
  w.set_operator(op, std::move(impl));
  return Stream<Out>(w, op, out);
}

}  // namespace snailtrail::flow
