// A worker: one thread running its copy of the whole dataflow (docs/RUNTIME.md).
//
// Every worker builds the same dataflow (the job's builder runs once per worker), so
// operator, edge and channel numbers agree across workers. step() runs one round:
// apply the progress batches that arrived, schedule every operator once in creation
// (topological) order, retry undelivered messages, broadcast this round's progress.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flow/channel.hpp"
#include "flow/progress.hpp"
#include "flow/recorder.hpp"

namespace snailtrail::flow {

class Worker;
template <class T, bool Owned>
class BasicInput;

// A right to produce records at `time` (and later) from operator `op`'s output (timely's
// Capability): Output::give and Output::session take one, so an operator cannot give
// output without it. Copies and drops are counted as progress changes (+1/-1 at
// (output, time)): dropping the last one at a time releases that time downstream.
// delayed(t) and downgrade(t) with t < time() throw std::logic_error (timely panics).
// The timestamp type is flow::Time throughout the runtime, so the class is not a template.
class Capability {
 public:
  Capability() = default;
  Capability(const Capability& o);
  Capability(Capability&& o) noexcept;
  Capability& operator=(const Capability& o);
  Capability& operator=(Capability&& o) noexcept;
  ~Capability() { drop(); }

  bool valid() const { return w_ != nullptr; }
  Time time() const { return time_; }
  uint32_t op() const { return op_; }
  // A new capability at t >= time().
  Capability delayed(Time t) const;
  // Moves this capability to t >= time().
  void downgrade(Time t);
  void drop();

 private:
  friend class Worker;
  Capability(Worker* w, uint32_t op, Time t) : w_(w), op_(op), time_(t) {}
  Worker* w_ = nullptr;
  uint32_t op_ = 0;
  Time time_ = 0;
};

// The right to give output at the time of the message an operator is processing, handed
// to Input::for_each's callback (timely's InputCapability): the message holds the
// pointstamp until the callback returns, so giving with it costs no progress change.
// retain() and delayed(t) (t >= time(), else std::logic_error) mint a Capability that
// outlives the message. Neither copyable nor movable: it is valid inside the callback.
class InputCapability {
 public:
  InputCapability(const InputCapability&) = delete;
  InputCapability& operator=(const InputCapability&) = delete;
  Time time() const { return time_; }
  uint32_t op() const { return op_; }
  Capability retain() const;
  Capability retain(Time t) const { return delayed(t); }  // timely's older name
  Capability delayed(Time t) const;

 private:
  template <class T, bool Owned>
  friend class BasicInput;
  InputCapability(Worker* w, uint32_t op, Time t) : w_(w), op_(op), time_(t) {}
  Worker* w_;
  uint32_t op_;
  Time time_;
};

class OperatorBase {
 public:
  virtual ~OperatorBase() = default;
  // Runs once per round; returns true if it did anything (records, notifications).
  virtual bool schedule() = 0;
};

struct WorkerCounters {
  uint64_t frontier_regressions = 0;  // a frontier moved backwards (must stay 0)
  uint64_t early_records = 0;         // a record arrived at a time its frontier had passed
  uint64_t steps = 0, idle_steps = 0;
  // Traced receipts stamped later than their arrival (a live sink's flush held events back
  // for RunConfig::trace_hold_ns and no longer: Recorder::clamped()).
  uint64_t clamped_receipts = 0;
  // Batch buffers and messages allocated anew rather than reused from what receivers gave
  // back (stream.hpp's ready_buffer, message_for): bounded in steady state.
  uint64_t fresh_buffers = 0;
  // Progress batches allocated anew rather than refilled (Worker::take_batch): bounded.
  uint64_t fresh_progress_batches = 0;
};

// Progress batches a worker keeps for refilling (Worker::take_batch), as many as the
// messages a ring gives back (kReturnCapacity): a peer that lags further holds batches
// that its last reader frees.
inline constexpr size_t kProgressPool = 64;

class Worker {
 public:
  Worker(uint32_t index, Fabric& fabric, Recorder& recorder);
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker();

  uint32_t index() const { return index_; }
  uint32_t peers() const { return fabric_.workers(); }
  Fabric& fabric() { return fabric_; }
  Recorder& recorder() { return rec_; }
  // Tracing, on this (sending) worker's thread as `m` enters worker `to`'s ring
  // (Pusher::on_enter): its correlator, the send, and the arrival its receipt is stamped
  // at (another process's delivery restamps it).
  // Into a local ring, the arrival is published as entering first (Fabric::entering; the
  // ring's pusher clears it after the push).
  template <class T>
  void trace_send(Message<T>& m, uint32_t to, ActivityType a = ActivityType::data_message) {
    m.correlator = rec_.next_correlator();
    const int64_t now = rec_.now();
    rec_.message(now, a, EventKind::send, to, m.correlator,
                 static_cast<int64_t>(m.records().size()));
    if (fabric_.local(to)) fabric_.entering(index_).store(now);  // seq_cst
    m.arrived_ns = rec_.next_arrival();                          // >= now
  }
  // An input whose waiting messages hold back this worker's trace flush (Input, progress).
  void add_inbound(Inbound* in) { inbound_.push_back(in); }
  // The earliest arrival a receipt of this worker may still be recorded at (INT64_MAX:
  // none known): the local senders' entering stamps, then the inputs' waiting messages.
  // A caller reads its clock before (runtime.cpp's trace flush).
  int64_t earliest_arrival() {
    int64_t t = INT64_MAX;
    for (uint32_t s = fabric_.base(); s < fabric_.base() + fabric_.local_workers(); ++s)
      if (s != index_) t = std::min(t, fabric_.entering(s).load());
    for (Inbound* in : inbound_) t = std::min(t, in->earliest_arrival());
    return t;
  }
  WorkerCounters& counters() { return counters_; }

  // --- building (the same calls in the same order on every worker) ---
  uint32_t add_operator(std::string name);  // returns the operator id
  void set_operator(uint32_t op, std::unique_ptr<OperatorBase> impl);
  uint32_t add_edge(uint32_t from_op, uint32_t to_op);
  uint64_t new_channel() { return next_channel_++; }
  // The capability at time 0 every worker's copy of a source starts with.
  Capability initial_capability(uint32_t op);
  // Called for work that must be retried each round (undelivered messages).
  void add_flusher(std::function<bool()> f) { flushers_.push_back(std::move(f)); }
  // Ends building: sets up progress tracking.
  void finish_build();

  const std::vector<std::string>& operator_names() const { return names_; }

  // --- running ---
  bool step();
  // Nothing held anywhere (every operator is complete) and nothing left at this sender:
  // a worker that stopped with its last progress in a pusher's overflow (a full ring)
  // would leave its peers waiting for it forever.
  bool done() const { return built_ && flushed_ && tracker_.all_empty() && changes_.empty(); }
  Time frontier(uint32_t edge) const { return tracker_.frontier(edge); }
  const ProgressTracker& tracker() const { return tracker_; }
  void change(uint32_t loc, Time t, int64_t delta) { changes_.add(loc, t, delta); }
  size_t pending_changes() const { return pending_count_; }
  void note_change() { ++pending_count_; }
  // Sources that wait for their next record to be due (set by such sources every
  // round): an idle worker with one waits on its input, not on the dataflow.
  void set_source_active(bool active) {
    if (!active) return;
    if (active_sources_++ == 0) input_op_ = scheduling_;
  }
  bool awaiting_input() const { return last_active_sources_ > 0; }
  // The operator of the first source that waited in the last round (valid if
  // awaiting_input()): an idle wait on input is that source's.
  uint32_t input_operator() const { return last_input_op_; }

 private:
  friend class Capability;
  friend class InputCapability;
  // A progress batch no peer reads any more, or a new one.
  SharedBatch<ProgressUpdate> take_batch();
  // A capability justified by a capability or a message at time <= t (the callers check).
  Capability mint(uint32_t op, Time t) {
    change(output_location(op), t, +1);
    ++pending_count_;
    return Capability(this, op, t);
  }
  uint32_t index_;
  Fabric& fabric_;
  Recorder& rec_;
  WorkerCounters counters_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<OperatorBase>> ops_;
  std::vector<EdgeSpec> edges_;
  std::vector<uint32_t> initial_caps_;
  std::vector<std::function<bool()>> flushers_;
  uint64_t next_channel_ = 1;  // channel 0 carries progress
  ChangeBatch changes_;
  // This round's compacted batch, one for every peer; the batches sent lately, refilled
  // once every peer let go (take_batch()).
  SharedBatch<ProgressUpdate> round_updates_;
  std::vector<SharedBatch<ProgressUpdate>> batch_pool_;
  size_t pool_next_ = 0;
  size_t pending_count_ = 0;
  uint32_t active_sources_ = 0, last_active_sources_ = 0;
  uint32_t scheduling_ = 0;  // the operator step() is running
  uint32_t input_op_ = 0, last_input_op_ = 0;
  ProgressTracker tracker_;
  std::vector<std::unique_ptr<Pusher<ProgressUpdate>>> progress_out_;
  std::unique_ptr<Puller<ProgressUpdate>> progress_in_;
  std::vector<Inbound*> inbound_;  // owned by the operators' inputs and progress_in_
  bool built_ = false;
  bool flushed_ = true;  // the last round left nothing at the sender (its pushers' overflow)
};

}  // namespace snailtrail::flow
