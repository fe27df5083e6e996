// The pipelined engine's deployment class and its state (pipelined.cpp defines it; the
// reconfiguration session, session.cpp, drives it). Internal to src/sim.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine_core.hpp"
#include "sim/engines.hpp"
#include "sim/network.hpp"
#include "sim/source_curve.hpp"

namespace snailtrail::sim::pipelined_engine {

enum SimKind : uint32_t { kWake = 0, kArrival = 1 };

// A FIFO of plain values without per-element allocation.
template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  void push(const T& x) { v_.push_back(x); }
  T& front() { return v_[head_]; }
  T pop() {
    T x = v_[head_++];
    if (head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    } else if (head_ > 4096 && head_ * 2 > v_.size()) {
      v_.erase(v_.begin(), v_.begin() + static_cast<ptrdiff_t>(head_));
      head_ = 0;
    }
    return x;
  }

 private:
  std::vector<T> v_;
  size_t head_ = 0;
};

// What a buffer (message) carries: records, or an in-band control event.
enum class Ctl : uint8_t { data, watermark, checkpoint };

// A buffer cut from a channel and not yet sent.
struct PendingBuffer {
  uint32_t records;
  Ctl kind;
  int64_t value;  // watermark time or checkpoint id
};

struct OutChannel {
  uint32_t target;   // receiving worker
  uint32_t in_slot;  // index of this channel among the receiver's inputs
  uint32_t credits;
  uint32_t credit_msgs_in_flight = 0;
  uint32_t partial = 0;  // records in the buffer being filled
  int64_t partial_since = 0;
  uint32_t pending_data = 0;  // data buffers among `pending`
  Fifo<PendingBuffer> pending;
};

struct InChannel {
  uint32_t sender;
  uint32_t out_slot;
  int64_t watermark = INT64_MIN;
  int64_t checkpoint = 0;
};

struct OutEdge {
  Partitioning partitioning;
  double skew;
  uint32_t hot;      // channel (relative to first) that owns the hot key
  uint32_t first;    // first channel of this edge in Instance::out
  uint32_t targets;  // number of channels
  uint32_t rr = 0;   // round-robin cursor
};

enum class State : uint8_t { busy, idle, blocked, stopped };

struct Instance {
  uint32_t op = 0;
  bool source = false;
  State state = State::idle;
  std::vector<OutChannel> out;
  std::vector<OutEdge> edges;
  std::vector<InChannel> in;
  Fifo<uint32_t> queue;            // arrived buffers (message slots), in arrival order
  int64_t forward_wm = INT64_MIN;  // watermark to forward when the running step ends
  int64_t forward_cp = 0;          // checkpoint barrier to forward when the step ends
  int64_t watermark = INT64_MIN;
  int64_t checkpoint = 0;  // last checkpoint taken
  int64_t next_watermark = 0;
  int64_t next_checkpoint = 0;
  double read = 0;  // source: records read so far
  Rng rng;
  double speed = 1;  // every cost this instance draws is divided by it (simulate --speed-up)
  InstanceTruth stats;
  int64_t blocked_since = 0;  // when the current wait for credit began
  int64_t blocked_ns = 0;     // time spent waiting for credit (backpressure)
};

// A message between its send and its arrival (buffers: until the receiver takes them
// from its input queue).
struct Msg {
  int64_t correlator;
  int64_t value;  // watermark time or checkpoint id
  uint32_t from, to;
  uint32_t channel;  // the producer's output channel
  uint32_t records;
  bool is_credit;
  Ctl kind;
};

// One deployment of a pipelined job: from `start_ns` until the run ends or the job is
// halted for a redeployment (session.cpp). A plain run is one deployment from 0.
class Pipelined {
 public:
  // `source_read[op]`: records the source operator's earlier deployments read in total
  // (what this deployment's instances start from; the rest that arrived is backlog).
  // `generation` > 0 gives every worker a fresh random stream.
  Pipelined(const Scenario& s, Recorder& rec, int64_t start_ns = 0,
            std::vector<double> source_read = {}, uint64_t generation = 0)
      : s_(s),
        rec_(rec),
        net_(s.network, worker_count(s)),
        start_ns_(start_ns),
        initial_read_(std::move(source_read)),
        generation_(generation) {}

  void start();

  // Handles every event before `t`.
  void run_until(int64_t t);

  void run(Truth& truth);

  // Stops the deployment at `t` (a savepoint, then the job halts): records in flight are
  // dropped, the trace ends cleanly there (Recorder::halt). Call after run_until(t).
  void halt(int64_t t);

  size_t instance_count() const { return inst_.size(); }
  uint32_t worker_of(size_t i) const { return worker_ids_[i]; }
  const InstanceTruth& stats(size_t i) const { return inst_[i].stats; }
  // Credit waiting up to `now`, including a wait still in progress.
  int64_t blocked_ns(size_t i, int64_t now) const;
  uint32_t op_of(size_t i) const { return inst_[i].op; }
  // Records read by this deployment's instances of source `op` plus the initial count.
  double source_read(uint32_t op) const;

 private:
  void build();

  uint32_t id(uint32_t w) const { return worker_ids_[w]; }  // recorder worker of instance w
  const OperatorSpec& spec(const Instance& x) const { return s_.operators[x.op]; }
  static int64_t ns(double v) { return static_cast<int64_t>(std::llround(v)); }
  // A cost drawn by instance `x`: divided by its speed.
  static int64_t ns(const Instance& x, double v) { return ns(v / x.speed); }
  bool ended(int64_t t) const { return t >= s_.duration_ns; }

  // ---- output buffers (the producer's side) ------------------------------------

  void cut(OutChannel& ch, uint32_t records);

  void flush(OutChannel& ch);

  void place(OutChannel& ch, uint64_t n, int64_t t);

  void place_control(OutChannel& ch, Ctl kind, int64_t value);

  // Splits `n` output records over every outgoing edge's channels; returns the number
  // of buffers that filled up.
  uint64_t partition(Instance& x, uint64_t n, int64_t t);

  // Sends the channel's cut buffers as far as credits allow.
  void transmit(uint32_t w, uint32_t c, int64_t t);

  // Sends what credits allow on every channel; true if nothing is left waiting.
  bool transmit_all(uint32_t w, int64_t t);

  bool has_pending_data(const Instance& x) const;

  // ---- worker life cycle -------------------------------------------------------

  // Waiting (for input when idle, for credit when blocked) is written when it begins:
  // a blocked worker still sends buffers as credits trickle in.
  void go_idle(uint32_t w, int64_t t);

  void block(uint32_t w, int64_t t);

  // Ends the current waiting at `t`, where this worker receives a message.
  void end_wait(uint32_t w, int64_t t) { rec_.close(id(w), t); }

  void schedule_wake(uint32_t w, int64_t t);

  // The running step ended at `t`: its outputs go into buffers and out.
  void on_wake(uint32_t w, int64_t t);

  void on_arrival(uint32_t m, int64_t t);

  // The consumer took a data buffer at `t`: its slot goes back to the producer, with a
  // control message when the producer is blocked with buffers for this channel, else
  // at once.
  void return_credit(uint32_t w, const Msg& msg, int64_t t);

  void next_step(uint32_t w, int64_t t);

  // Hands the step's full output buffers to the network (`buffer`), from `t` on.
  int64_t buffers(Instance& x, uint32_t w, uint64_t cut, int64_t t);

  // Cuts every partly filled buffer at `t`. With a buffer cost this is a step of its
  // own (the buffers go out when it ends; returns true), else they are just cut.
  bool flush_all(uint32_t w, int64_t t);

  // Processes `n` records from `t` on; the outputs go into buffers when serialized and
  // are sent when the step ends.
  void data_step(uint32_t w, uint32_t n, int64_t t);

  // A watermark or checkpoint barrier taken from the input queue. When the minimum over
  // all inputs advances, the instance does barrier processing (watermark) or snapshots
  // its state (checkpoint) and forwards the event when done; returns true if a step
  // was scheduled.
  bool control_step(uint32_t w, const Msg& msg, int64_t t);

  void source_step(uint32_t w, int64_t t);

  const Scenario& s_;
  Recorder& rec_;
  Network net_;
  int64_t start_ns_ = 0;
  std::vector<double> initial_read_;
  uint64_t generation_ = 0;
  std::vector<uint32_t> worker_ids_;  // recorder worker of each instance
  EventQueue q_;
  std::vector<Instance> inst_;  // index = instance (worker id in a plain run)
  std::vector<SourceCurve> curves_;
  std::vector<uint32_t> source_curve_;
  MessageSlots<Msg> msgs_;
  uint64_t cuts_ = 0;  // buffers cut by the running partition()
};

}  // namespace snailtrail::sim::pipelined_engine
