// The pipelined execution model (Flink/Heron-like), docs/SIMULATOR.md "pipelined".
//
// One worker per operator instance. A step processes one input buffer: deserialization,
// processing, serialization of the outputs into per-channel output buffers, and
// (`buffer`) handing the filled buffers to the network, which sends them when the step
// ends. A partly filled buffer is sent when a step ends and it is `flush_interval` old,
// or when its worker runs out of input (flush on idle). Every input channel holds at
// most `buffer_capacity` buffers: a producer sends only with a credit; one that has
// buffers it cannot send blocks (waiting) until the consumer returns a credit with a
// control message. Messages are traced when they leave the producer and when they
// arrive at the consumer (possibly in the middle of its current step), so waiting
// always ends with a receive.
//
// Sources read records as they arrive at the configured rate and send periodic
// watermarks in-band; an instance that has a new minimum watermark over its inputs
// does barrier processing and forwards it. Checkpoint barriers travel the same way and
// make every instance snapshot its state (fault tolerance).
#include <algorithm>
#include <cmath>

#include <stdexcept>
#include <unordered_map>

#include "sim/engines.hpp"
#include "sim/event_queue.hpp"
#include "sim/network.hpp"
#include "sim/session.hpp"
#include "sim/source_curve.hpp"

namespace snailtrail::sim {
namespace {

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

  void start() {
    build();
    for (uint32_t w = 0; w < inst_.size(); ++w) {
      if (inst_[w].source)
        next_step(w, start_ns_);
      else
        go_idle(w, start_ns_);
    }
  }

  // Handles every event before `t`.
  void run_until(int64_t t) {
    while (!q_.empty() && q_.top().time < t) {
      const SimEvent e = q_.pop();
      if (e.kind == kWake)
        on_wake(e.arg, e.time);
      else
        on_arrival(e.arg, e.time);
    }
  }

  void run(Truth& truth) {
    start();
    run_until(INT64_MAX);
    for (Instance& x : inst_) truth.instances.push_back(std::move(x.stats));
  }

  // Stops the deployment at `t` (a savepoint, then the job halts): records in flight are
  // dropped, the trace ends cleanly there (Recorder::halt). Call after run_until(t).
  void halt(int64_t t) {
    std::vector<int64_t> in_flight;
    while (!q_.empty()) {
      const SimEvent e = q_.pop();
      if (e.kind == kArrival) in_flight.push_back(msgs_[e.arg].correlator);
    }
    for (Instance& x : inst_)
      if (x.state == State::blocked) {
        x.blocked_ns += t - x.blocked_since;
        x.blocked_since = t;
      }
    rec_.halt(t, in_flight);
  }

  size_t instance_count() const { return inst_.size(); }
  uint32_t worker_of(size_t i) const { return worker_ids_[i]; }
  const InstanceTruth& stats(size_t i) const { return inst_[i].stats; }
  // Credit waiting up to `now`, including a wait still in progress.
  int64_t blocked_ns(size_t i, int64_t now) const {
    const Instance& x = inst_[i];
    return x.blocked_ns +
           (x.state == State::blocked ? std::max<int64_t>(0, now - x.blocked_since) : 0);
  }
  uint32_t op_of(size_t i) const { return inst_[i].op; }
  // Records read by this deployment's instances of source `op` plus the initial count.
  double source_read(uint32_t op) const {
    double r = 0;
    for (const Instance& x : inst_)
      if (x.op == op) r += x.read;
    return r;
  }

 private:
  void build() {
    const PipelinedSpec& p = s_.pipelined;
    std::vector<uint32_t> first(s_.operators.size());
    for (uint32_t op = 0; op < s_.operators.size(); ++op) {
      const OperatorSpec& o = s_.operators[op];
      first[op] = static_cast<uint32_t>(inst_.size());
      for (uint32_t i = 0; i < o.parallelism; ++i) {
        Instance x;
        x.op = op;
        x.source = o.is_source;
        const std::string name = o.name + "-" + std::to_string(i);
        const uint32_t w = rec_.worker(name);
        worker_ids_.push_back(w);
        x.rng = Rng(s_.seed ^ (generation_ * 0x9e3779b97f4a7c15ULL), w);
        if (o.is_source && op < initial_read_.size())
          x.read = initial_read_[op] / static_cast<double>(o.parallelism);
        if (i < o.instance_speed.size()) x.speed = o.instance_speed[i];
        x.stats.worker = name;
        x.stats.op = o.name;
        x.stats.instance = i;
        inst_.push_back(std::move(x));
      }
      if (o.is_source) curves_.emplace_back(o, o.parallelism);
    }
    source_curve_.assign(s_.operators.size(), UINT32_MAX);
    for (uint32_t op = 0, c = 0; op < s_.operators.size(); ++op)
      if (s_.operators[op].is_source) source_curve_[op] = c++;
    // Channels: every edge connects each sender instance with its targets.
    for (const EdgeSpec& e : s_.edges) {
      const uint32_t pf = s_.operators[e.from].parallelism;
      const uint32_t pt = s_.operators[e.to].parallelism;
      for (uint32_t i = 0; i < pf; ++i) {
        Instance& snd = inst_[first[e.from] + i];
        OutEdge oe{e.partitioning,
                   e.skew,
                   e.hot_instance % pt,
                   static_cast<uint32_t>(snd.out.size()),
                   0,
                   0};
        for (uint32_t j = 0; j < pt; ++j) {
          if (e.partitioning == Partitioning::forward && j != i) continue;
          const uint32_t tw = first[e.to] + j;
          Instance& rcv = inst_[tw];
          OutChannel ch;
          ch.target = tw;
          ch.in_slot = static_cast<uint32_t>(rcv.in.size());
          ch.credits = p.buffer_capacity;
          rcv.in.push_back({first[e.from] + i, static_cast<uint32_t>(snd.out.size())});
          snd.out.push_back(std::move(ch));
          ++oe.targets;
        }
        snd.edges.push_back(oe);
      }
    }
  }

  uint32_t id(uint32_t w) const { return worker_ids_[w]; }  // recorder worker of instance w
  const OperatorSpec& spec(const Instance& x) const { return s_.operators[x.op]; }
  static int64_t ns(double v) { return static_cast<int64_t>(std::llround(v)); }
  // A cost drawn by instance `x`: divided by its speed.
  static int64_t ns(const Instance& x, double v) { return ns(v / x.speed); }
  bool ended(int64_t t) const { return t >= s_.duration_ns; }

  uint32_t alloc_msg() {
    if (!free_msgs_.empty()) {
      const uint32_t i = free_msgs_.back();
      free_msgs_.pop_back();
      return i;
    }
    msgs_.emplace_back();
    return static_cast<uint32_t>(msgs_.size() - 1);
  }

  // ---- output buffers (the producer's side) ------------------------------------

  void cut(OutChannel& ch, uint32_t records) {
    ch.pending.push({records, Ctl::data, 0});
    ++ch.pending_data;
    ++cuts_;
  }

  void flush(OutChannel& ch) {
    if (ch.partial > 0) cut(ch, ch.partial);
    ch.partial = 0;
  }

  void place(OutChannel& ch, uint64_t n, int64_t t) {
    const uint32_t b = s_.pipelined.batch_records;
    if (ch.partial == 0) ch.partial_since = t;
    uint64_t total = ch.partial + n;
    while (total >= b) {
      cut(ch, b);
      total -= b;
      ch.partial_since = t;
    }
    ch.partial = static_cast<uint32_t>(total);
  }

  void place_control(OutChannel& ch, Ctl kind, int64_t value) {
    flush(ch);
    ch.pending.push({0, kind, value});
  }

  // Splits `n` output records over every outgoing edge's channels; returns the number
  // of buffers that filled up.
  uint64_t partition(Instance& x, uint64_t n, int64_t t) {
    cuts_ = 0;
    for (OutEdge& e : x.edges) {
      const uint32_t k = e.targets;
      if (k == 1) {
        place(x.out[e.first], n, t);
        continue;
      }
      uint64_t hot = 0, rest = n;
      uint32_t start;
      if (e.partitioning == Partitioning::hash) {
        hot = std::min<uint64_t>(n, stochastic_round(e.skew * static_cast<double>(n), x.rng));
        rest = n - hot;
        start = static_cast<uint32_t>(x.rng.below(k));
      } else {
        start = e.rr;
        e.rr = static_cast<uint32_t>((e.rr + rest % k) % k);
      }
      const uint64_t base = rest / k, rem = rest % k;
      for (uint32_t j = 0; j < k; ++j) {
        const uint32_t pos = (j + k - start) % k;  // position relative to the start
        const uint64_t cnt = base + (pos < rem ? 1 : 0) + (j == e.hot ? hot : 0);
        if (cnt > 0) place(x.out[e.first + j], cnt, t);
      }
    }
    return cuts_;
  }

  // Sends the channel's cut buffers as far as credits allow.
  void transmit(uint32_t w, uint32_t c, int64_t t) {
    OutChannel& ch = inst_[w].out[c];
    while (!ch.pending.empty()) {
      const PendingBuffer pb = ch.pending.front();
      if (pb.kind == Ctl::data) {
        if (ch.credits == 0) return;
        --ch.credits;
        --ch.pending_data;
      }
      ch.pending.pop();
      const uint32_t m = alloc_msg();
      int64_t corr;
      uint64_t bytes;
      if (pb.kind != Ctl::data) {
        corr = rec_.send(id(w), ActivityType::control_message, t, id(ch.target));
        bytes = net_.control_bytes();
      } else {
        corr = rec_.send(id(w), ActivityType::data_message, t, id(ch.target), pb.records);
        bytes = uint64_t{pb.records} * spec(inst_[w]).record_bytes;
      }
      msgs_[m] = Msg{corr, pb.value, w, ch.target, c, pb.records, false, pb.kind};
      q_.push(net_.arrival(w, t, bytes), kArrival, m);
    }
  }

  // Sends what credits allow on every channel; true if nothing is left waiting.
  bool transmit_all(uint32_t w, int64_t t) {
    bool done = true;
    for (uint32_t c = 0; c < inst_[w].out.size(); ++c) {
      transmit(w, c, t);
      done &= inst_[w].out[c].pending_data == 0;
    }
    return done;
  }

  bool has_pending_data(const Instance& x) const {
    for (const OutChannel& ch : x.out)
      if (ch.pending_data > 0) return true;
    return false;
  }

  // ---- worker life cycle -------------------------------------------------------

  // Waiting (for input when idle, for credit when blocked) is written when it begins:
  // a blocked worker still sends buffers as credits trickle in.
  void go_idle(uint32_t w, int64_t t) {
    inst_[w].state = State::idle;
    rec_.open(id(w), ActivityType::waiting, t, inst_[w].op);
  }

  void block(uint32_t w, int64_t t) {
    inst_[w].state = State::blocked;
    inst_[w].blocked_since = t;
    rec_.open(id(w), ActivityType::waiting, t, inst_[w].op);
  }

  // Ends the current waiting at `t`, where this worker receives a message.
  void end_wait(uint32_t w, int64_t t) { rec_.close(id(w), t); }

  void schedule_wake(uint32_t w, int64_t t) {
    inst_[w].state = State::busy;
    q_.push(t, kWake, w);
  }

  // The running step ended at `t`: its outputs go into buffers and out.
  void on_wake(uint32_t w, int64_t t) {
    Instance& x = inst_[w];
    if (ended(t)) {
      x.state = State::stopped;
      return;
    }
    for (OutChannel& ch : x.out)
      if (ch.partial > 0 && t - ch.partial_since >= s_.pipelined.flush_interval_ns) flush(ch);
    if (x.forward_wm != INT64_MIN) {
      for (OutChannel& ch : x.out) place_control(ch, Ctl::watermark, x.forward_wm);
      x.forward_wm = INT64_MIN;
    }
    if (x.forward_cp != 0) {
      for (OutChannel& ch : x.out) place_control(ch, Ctl::checkpoint, x.forward_cp);
      x.forward_cp = 0;
    }
    if (!transmit_all(w, t)) {
      block(w, t);
      return;
    }
    next_step(w, t);
  }

  void on_arrival(uint32_t m, int64_t t) {
    const Msg msg = msgs_[m];
    const uint32_t w = msg.to;
    Instance& x = inst_[w];
    if (msg.is_credit) {
      free_msgs_.push_back(m);
      rec_.recv(id(w), ActivityType::control_message, t, id(msg.from), msg.correlator);
      OutChannel& ch = x.out[msg.channel];
      ++ch.credits;
      --ch.credit_msgs_in_flight;
      if (x.state != State::blocked) return;
      if (ended(t)) {
        x.blocked_ns += t - x.blocked_since;
        end_wait(w, t);
        x.state = State::stopped;
        return;
      }
      transmit(w, msg.channel, t);
      if (has_pending_data(x)) return;  // still blocked on another channel
      x.blocked_ns += t - x.blocked_since;
      end_wait(w, t);
      x.state = State::busy;
      next_step(w, t);
      return;
    }
    if (msg.kind != Ctl::data)
      rec_.recv(id(w), ActivityType::control_message, t, id(msg.from), msg.correlator);
    else
      rec_.recv(id(w), ActivityType::data_message, t, id(msg.from), msg.correlator, msg.records);
    x.queue.push(m);  // the slot is freed when the worker takes the buffer
    if (x.state == State::idle) {
      end_wait(w, t);
      if (ended(t)) {
        x.state = State::stopped;
        return;
      }
      x.state = State::busy;
      next_step(w, t);
    }
  }

  // The consumer took a data buffer at `t`: its slot goes back to the producer, with a
  // control message when the producer is blocked with buffers for this channel, else
  // at once.
  void return_credit(uint32_t w, const Msg& msg, int64_t t) {
    OutChannel& ch = inst_[msg.from].out[msg.channel];
    if (inst_[msg.from].state == State::blocked && ch.pending_data > ch.credit_msgs_in_flight) {
      ++ch.credit_msgs_in_flight;
      const uint32_t m = alloc_msg();
      const int64_t corr = rec_.send(id(w), ActivityType::control_message, t, id(msg.from));
      msgs_[m] = Msg{corr, 0, w, msg.from, msg.channel, 0, true, Ctl::data};
      q_.push(net_.arrival(w, t, net_.control_bytes()), kArrival, m);
    } else {
      ++ch.credits;
    }
  }

  void next_step(uint32_t w, int64_t t) {
    Instance& x = inst_[w];
    if (ended(t)) {
      x.state = State::stopped;
      return;
    }
    if (x.source) {
      source_step(w, t);
      return;
    }
    while (!x.queue.empty()) {
      const uint32_t m = x.queue.pop();
      const Msg msg = msgs_[m];
      free_msgs_.push_back(m);
      if (msg.kind == Ctl::data) {
        return_credit(w, msg, t);
        data_step(w, msg.records, t);
        return;
      }
      if (control_step(w, msg, t)) return;
    }
    // Out of input: send what is buffered, then wait for input (or for credit).
    if (flush_all(w, t)) return;
    if (!transmit_all(w, t))
      block(w, t);
    else
      go_idle(w, t);
  }

  // Hands the step's full output buffers to the network (`buffer`), from `t` on.
  int64_t buffers(Instance& x, uint32_t w, uint64_t cut, int64_t t) {
    if (cut == 0 || s_.pipelined.buffer_cost.is_zero()) return t;
    const int64_t end = t + ns(x, s_.pipelined.buffer_cost.sum(cut, x.rng));
    rec_.activity(id(w), ActivityType::buffer, t, end, x.op);
    return end;
  }

  // Cuts every partly filled buffer at `t`. With a buffer cost this is a step of its
  // own (the buffers go out when it ends; returns true), else they are just cut.
  bool flush_all(uint32_t w, int64_t t) {
    Instance& x = inst_[w];
    cuts_ = 0;
    for (OutChannel& ch : x.out) flush(ch);
    const int64_t end = buffers(x, w, cuts_, t);
    if (end == t) return false;
    schedule_wake(w, end);
    return true;
  }

  // Processes `n` records from `t` on; the outputs go into buffers when serialized and
  // are sent when the step ends.
  void data_step(uint32_t w, uint32_t n, int64_t t) {
    Instance& x = inst_[w];
    const OperatorSpec& o = spec(x);
    const int64_t t1 = t + ns(x, o.cost.deserialization.sum(n, x.rng));
    const int64_t t2 = t1 + ns(x, o.cost.processing.sum(n, x.rng));
    const uint64_t out = stochastic_round(o.selectivity.sum(n, x.rng), x.rng);
    rec_.activity(id(w), ActivityType::deserialization, t, t1, x.op);
    rec_.activity(id(w), ActivityType::processing, t1, t2, x.op, n);
    int64_t end;
    if (!x.out.empty()) {
      const int64_t t3 = t2 + ns(x, o.cost.serialization.sum(out, x.rng));
      rec_.activity(id(w), ActivityType::serialization, t2, t3, x.op, static_cast<int64_t>(out));
      x.stats.useful_ns += t3 - t;
      end = buffers(x, w, partition(x, out, t3), t3);
    } else {
      x.stats.useful_ns += t2 - t;
      end = t2 + ns(x, o.cost.io.sum(out, x.rng));
      rec_.activity(id(w), ActivityType::io, t2, end, x.op, static_cast<int64_t>(out));
    }
    x.stats.records_in += n;
    x.stats.records_out += out;
    schedule_wake(w, end);
  }

  // A watermark or checkpoint barrier taken from the input queue. When the minimum over
  // all inputs advances, the instance does barrier processing (watermark) or snapshots
  // its state (checkpoint) and forwards the event when done; returns true if a step
  // was scheduled.
  bool control_step(uint32_t w, const Msg& msg, int64_t t) {
    Instance& x = inst_[w];
    InChannel& in = x.in[inst_[msg.from].out[msg.channel].in_slot];
    const bool wm = msg.kind == Ctl::watermark;
    int64_t& mine = wm ? in.watermark : in.checkpoint;
    mine = std::max(mine, msg.value);
    int64_t low = INT64_MAX;
    for (const InChannel& c : x.in) low = std::min(low, wm ? c.watermark : c.checkpoint);
    int64_t& current = wm ? x.watermark : x.checkpoint;
    if (low <= current) return false;
    current = low;
    const Distribution& cost = wm ? s_.pipelined.watermark_cost : s_.pipelined.checkpoint_cost;
    const int64_t end = t + std::max<int64_t>(1, ns(x, cost.sample(x.rng)));
    rec_.activity(id(w), wm ? ActivityType::barrier_processing : ActivityType::fault_tolerance, t,
                  end, x.op);
    if (!x.out.empty()) (wm ? x.forward_wm : x.forward_cp) = low;
    schedule_wake(w, end);
    return true;
  }

  void source_step(uint32_t w, int64_t t) {
    Instance& x = inst_[w];
    const OperatorSpec& o = spec(x);
    const SourceCurve& curve = curves_[source_curve_[x.op]];
    const uint32_t b = s_.pipelined.batch_records;
    const int64_t fi = s_.pipelined.flush_interval_ns;
    int64_t close = t;
    uint64_t n = b;
    if (!curve.unlimited()) {
      // A read returns when `batch_records` records are there, or flush_interval after
      // the first of them arrived.
      const int64_t first = curve.time_when(x.read + 1);
      const int64_t full = curve.time_when(x.read + b);
      const int64_t cap = first >= INT64_MAX - fi ? INT64_MAX : first + fi;
      close = std::max(t, std::min(full, cap));
      if (close > t) {
        // About to wait for input: first send what is buffered.
        if (flush_all(w, t)) return;
        if (!transmit_all(w, t)) {
          block(w, t);
          return;
        }
      }
      if (ended(close)) {
        // No more input within the run: the source waits on its input to the end.
        rec_.activity(id(w), ActivityType::input, t, s_.duration_ns, x.op, 0);
        x.state = State::stopped;
        return;
      }
      const double avail = std::floor(curve.arrived(close) + 1e-9) - x.read;
      n = static_cast<uint64_t>(std::clamp(avail, 1.0, static_cast<double>(b)));
    }
    x.read += static_cast<double>(n);
    const int64_t t1 = close + ns(x, o.cost.input.sum(n, x.rng));
    rec_.activity(id(w), ActivityType::input, t, t1, x.op, static_cast<int64_t>(n));
    const int64_t t2 = t1 + ns(x, o.cost.processing.sum(n, x.rng));
    rec_.activity(id(w), ActivityType::processing, t1, t2, x.op, static_cast<int64_t>(n));
    const uint64_t out = stochastic_round(o.selectivity.sum(n, x.rng), x.rng);
    const int64_t t3 = t2 + ns(x, o.cost.serialization.sum(out, x.rng));
    rec_.activity(id(w), ActivityType::serialization, t2, t3, x.op, static_cast<int64_t>(out));
    x.stats.records_in += n;
    x.stats.records_out += out;
    x.stats.useful_ns += t3 - t1;
    int64_t end = buffers(x, w, partition(x, out, t3), t3);
    const int64_t wi = s_.pipelined.watermark_interval_ns;
    if (wi > 0 && end >= x.next_watermark) {
      x.forward_wm = end;
      x.next_watermark = (end / wi + 1) * wi;
    }
    const int64_t ci = s_.pipelined.checkpoint_interval_ns;
    if (ci > 0 && end >= x.next_checkpoint) {
      // The source snapshots its read position, then sends the barrier downstream.
      const int64_t snap =
          end + std::max<int64_t>(1, ns(x, s_.pipelined.checkpoint_cost.sample(x.rng)));
      rec_.activity(id(w), ActivityType::fault_tolerance, end, snap, x.op);
      x.checkpoint = end / ci + 1;
      x.forward_cp = x.checkpoint;
      x.next_checkpoint = (end / ci + 1) * ci;
      end = snap;
    }
    schedule_wake(w, end);
  }

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
  std::vector<Msg> msgs_;
  std::vector<uint32_t> free_msgs_;
  uint64_t cuts_ = 0;  // buffers cut by the running partition()
};

}  // namespace

void run_pipelined(const Scenario& scenario, Recorder& recorder, Truth& truth) {
  Pipelined(scenario, recorder).run(truth);
}

// ---- Session: deployments of the pipelined engine (session.hpp) ------------------------

struct Session::Engine {
  Engine(Scenario s, Recorder& rec, int64_t start, std::vector<double> read, uint64_t gen)
      : scenario(std::move(s)), job(scenario, rec, start, std::move(read), gen) {}
  Scenario scenario;  // the deployed configuration (the job refers to it)
  Pipelined job;
};

Session::Session(Scenario scenario, bool record_trace) : scenario_(std::move(scenario)) {
  if (scenario_.model != Model::pipelined)
    throw std::invalid_argument("reconfiguration needs a pipelined scenario, not " +
                                std::string(name_of(scenario_.model)));
  recorder_.set_recording(record_trace);
  for (uint32_t op = 0; op < scenario_.operators.size(); ++op)
    recorder_.name_operator(op, scenario_.operators[op].name);
  for (const OperatorSpec& o : scenario_.operators) parallelism_.push_back(o.parallelism);
  read_.assign(scenario_.operators.size(), 0.0);
  deploy();
}

Session::~Session() = default;

void Session::deploy() {
  Scenario s = scenario_;
  for (size_t op = 0; op < s.operators.size(); ++op) s.operators[op].parallelism = parallelism_[op];
  engine_ = std::make_unique<Engine>(std::move(s), recorder_, deployed_at_, read_, generation_);
  engine_->job.start();
}

void Session::run_until(int64_t t) {
  t = std::min(t, scenario_.duration_ns);
  if (t <= now_) return;
  if (!engine_ && t >= deployed_at_) {
    now_ = deployed_at_;
    deploy();
  }
  if (engine_) engine_->job.run_until(t);
  now_ = t;
}

std::vector<InstanceCounters> Session::counters() const {
  std::vector<InstanceCounters> out;
  if (!engine_) return out;
  const Pipelined& job = engine_->job;
  for (size_t i = 0; i < job.instance_count(); ++i) {
    const InstanceTruth& st = job.stats(i);
    out.push_back({st.worker, job.op_of(i), st.instance, st.records_in, st.records_out,
                   st.useful_ns, job.blocked_ns(i, now_)});
  }
  return out;
}

double Session::source_arrived(uint32_t op, int64_t t) const {
  return SourceCurve(scenario_.operators.at(op), 1).arrived(t);
}

double Session::source_read(uint32_t op) const {
  return engine_ ? engine_->job.source_read(op) : read_.at(op);
}

void Session::retire() {
  if (!engine_) return;
  Pipelined& job = engine_->job;
  job.halt(now_);
  for (uint32_t op = 0; op < scenario_.operators.size(); ++op)
    if (scenario_.operators[op].is_source) read_[op] = job.source_read(op);
  for (size_t i = 0; i < job.instance_count(); ++i) done_.push_back(job.stats(i));
  engine_.reset();
}

void Session::reconfigure(const std::vector<uint32_t>& parallelism, int64_t pause_ns) {
  if (parallelism.size() != scenario_.operators.size())
    throw std::invalid_argument("reconfigure: " + std::to_string(parallelism.size()) +
                                " parallelism values for " +
                                std::to_string(scenario_.operators.size()) + " operators");
  for (size_t op = 0; op < parallelism.size(); ++op)
    if (parallelism[op] < 1 || parallelism[op] > 100000)
      throw std::invalid_argument("reconfigure: parallelism of '" + scenario_.operators[op].name +
                                  "' must be in [1, 100000]");
  if (pause_ns < 0) throw std::invalid_argument("reconfigure: negative pause");
  for (const EdgeSpec& e : scenario_.edges)
    if (e.partitioning == Partitioning::forward && parallelism[e.from] != parallelism[e.to])
      throw std::invalid_argument("reconfigure: the forward edge " +
                                  scenario_.operators[e.from].name + " -> " +
                                  scenario_.operators[e.to].name + " needs equal parallelism");
  retire();
  parallelism_ = parallelism;
  deployed_at_ = now_ + pause_ns;
  ++generation_;
}

SimResult Session::finish() {
  run_until(scenario_.duration_ns);
  if (engine_) {
    Pipelined& job = engine_->job;
    // As in a plain run: messages in flight arrive (workers no longer act), so that the
    // recorder can drop those received after the end with their sends.
    job.run_until(INT64_MAX);
    for (size_t i = 0; i < job.instance_count(); ++i) done_.push_back(job.stats(i));
    engine_.reset();
  }
  SimResult r;
  r.truth = expected_truth(scenario_);
  // One entry per worker, summed over deployments, in order of first deployment.
  std::unordered_map<std::string, size_t> at;
  for (InstanceTruth& x : done_) {
    auto [it, fresh] = at.emplace(x.worker, r.truth.instances.size());
    if (fresh) {
      r.truth.instances.push_back(std::move(x));
      continue;
    }
    InstanceTruth& y = r.truth.instances[it->second];
    y.records_in += x.records_in;
    y.records_out += x.records_out;
    y.useful_ns += x.useful_ns;
  }
  done_.clear();
  r.trace = recorder_.finish(scenario_.duration_ns);
  r.trace.source = scenario_.source;
  return r;
}

}  // namespace snailtrail::sim
