#include "flow/worker.hpp"

#include <span>
#include <stdexcept>
#include <string>

namespace snailtrail::flow {

Capability::Capability(const Capability& o) : w_(o.w_), op_(o.op_), time_(o.time_) {
  if (w_) w_->change(output_location(op_), time_, +1), w_->note_change();
}
Capability::Capability(Capability&& o) noexcept : w_(o.w_), op_(o.op_), time_(o.time_) {
  o.w_ = nullptr;
}
Capability& Capability::operator=(const Capability& o) {
  if (this != &o) {
    Capability copy(o);
    *this = std::move(copy);
  }
  return *this;
}
Capability& Capability::operator=(Capability&& o) noexcept {
  if (this != &o) {
    drop();
    w_ = o.w_;
    op_ = o.op_;
    time_ = o.time_;
    o.w_ = nullptr;
  }
  return *this;
}
namespace {
[[noreturn]] void earlier(const char* what, Time t, Time held) {
  throw std::logic_error(std::string(what) + "(" + std::to_string(t) +
                         "): earlier than the capability's time " + std::to_string(held) +
                         " (a capability only moves forward)");
}
}  // namespace

Capability Capability::delayed(Time t) const {
  if (!w_) throw std::logic_error("Capability::delayed() on a dropped capability");
  if (t < time_) earlier("Capability::delayed", t, time_);
  return w_->mint(op_, t);
}
void Capability::downgrade(Time t) {
  if (!w_) throw std::logic_error("Capability::downgrade() on a dropped capability");
  if (t < time_) earlier("Capability::downgrade", t, time_);
  if (t == time_) return;
  w_->change(output_location(op_), t, +1);
  w_->change(output_location(op_), time_, -1);
  w_->note_change();
  time_ = t;
}
Capability InputCapability::retain() const {
  return w_->mint(op_, time_);
}
Capability InputCapability::delayed(Time t) const {
  if (t < time_) earlier("InputCapability::delayed", t, time_);
  return w_->mint(op_, t);
}
void Capability::drop() {
  if (!w_) return;
  w_->change(output_location(op_), time_, -1);
  w_->note_change();
  w_ = nullptr;
}

Worker::Worker(uint32_t index, Fabric& fabric, Recorder& recorder)
    : index_(index), fabric_(fabric), rec_(recorder) {
  progress_out_ = fabric_.pushers<ProgressUpdate>(0, index_);
  progress_in_ = fabric_.puller<ProgressUpdate>(0, index_);
  add_inbound(progress_in_.get());
  if (rec_.on())
    for (uint32_t to = 0; to < progress_out_.size(); ++to)
      if (to != index_)
        progress_out_[to]->on_enter = [this, to](Message<ProgressUpdate>& m) {
          trace_send(m, to, ActivityType::control_message);
        };
}

Worker::~Worker() {
  // Operators (and the capabilities they hold) go first, while the worker is alive.
  ops_.clear();
}

uint32_t Worker::add_operator(std::string name) {
  if (built_) throw std::logic_error("dataflow already built");
  names_.push_back(std::move(name));
  ops_.emplace_back();
  return static_cast<uint32_t>(names_.size() - 1);
}

void Worker::set_operator(uint32_t op, std::unique_ptr<OperatorBase> impl) {
  ops_.at(op) = std::move(impl);
}

uint32_t Worker::add_edge(uint32_t from_op, uint32_t to_op) {
  if (from_op >= to_op) throw std::logic_error("edges must go from an earlier operator");
  edges_.push_back({from_op, to_op});
  return static_cast<uint32_t>(edges_.size() - 1);
}

Capability Worker::initial_capability(uint32_t op) {
  initial_caps_.push_back(op);
  return Capability(this, op, 0);
}

void Worker::finish_build() {
  tracker_.init(static_cast<uint32_t>(ops_.size()), edges_);
  // Every worker's copy of every source starts with a capability at time 0.
  std::vector<ProgressUpdate> seed;
  for (uint32_t op : initial_caps_) seed.push_back({output_location(op), 0, int64_t{peers()}});
  tracker_.apply(seed.data(), seed.size());
  tracker_.recompute();
  built_ = true;
}

// A batch no peer holds any more (its capacity kept), else a new one. The pool holds
// the batches of the last rounds; a peer that lags keeps its batches, not the others'.
SharedBatch<ProgressUpdate> Worker::take_batch() {
  round_updates_.reset();
  // From the oldest on: peers let go of batches in the order they were sent.
  for (size_t k = 0; k < batch_pool_.size(); ++k) {
    const size_t i = (pool_next_ + k) % batch_pool_.size();
    if (batch_pool_[i].unique()) {  // refilled: the pool's reference and the caller's
      pool_next_ = i + 1;
      return batch_pool_[i];
    }
  }
  ++counters_.fresh_progress_batches;
  auto b = SharedBatch<ProgressUpdate>::make();
  if (batch_pool_.size() < kProgressPool) batch_pool_.push_back(b);
  return b;
}

bool Worker::step() {
  ++counters_.steps;
  bool worked = false;
  // 1. Progress from every worker (own batches included), in each sender's order.
  bool changed = false;
  while (auto m = progress_in_->pull()) {
    if (rec_.on() && m->from != index_)
      rec_.receipt(m->arrived_ns, ActivityType::control_message, m->from, m->correlator);
    const std::span<const ProgressUpdate> updates = m->records();
    tracker_.apply(updates.data(), updates.size());
    changed = true;
    m->data.clear();
    m->shared.reset();  // now, not when the sender reuses the message: it refills the batch
    progress_in_->recycle(std::move(m));
  }
  // Applying progress is not work by itself: the operators run after it in this round,
  // and if none has anything to do the worker is still waiting. (Counted as work, such a
  // round ended the worker's wait and recorded nothing: an `unknown` gap in the trace.)
  if (changed) counters_.frontier_regressions += tracker_.recompute();
  // 2. Every operator once.
  active_sources_ = 0;
  for (uint32_t i = 0; i < ops_.size(); ++i) {
    scheduling_ = i;
    if (ops_[i]->schedule()) worked = true;
  }
  last_active_sources_ = active_sources_;
  last_input_op_ = input_op_;
  // 3. Messages that found a full ring.
  bool flushed = true;
  for (auto& f : flushers_) flushed = f() && flushed;
  // 4. This round's progress to everyone: one batch, shared by every peer's message.
  if (!changes_.empty()) {
    round_updates_ = take_batch();
    changes_.drain_into(round_updates_.mutable_data());
    pending_count_ = 0;
    if (!round_updates_.data().empty()) {
      for (uint32_t to = 0; to < peers(); ++to) {
        auto m = progress_out_[to]->reuse();  // an emptied one this peer gave back
        if (!m) m = std::make_unique<Message<ProgressUpdate>>();
        m->from = index_;
        m->correlator = 0;
        m->arrived_ns = -1;
        m->data.clear();
        m->shared = round_updates_;
        progress_out_[to]->push(std::move(m));  // traced as it enters the ring (on_enter)
      }
      worked = true;
    }
  }
  for (auto& p : progress_out_) flushed = p->flush() && flushed;
  flushed_ = flushed;  // else done() waits: the next rounds retry
  if (!worked) ++counters_.idle_steps;
  return worked;
}

}  // namespace snailtrail::flow
