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

#include "sim/pipelined.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

namespace snailtrail::sim {
namespace pipelined_engine {

void Pipelined::start() {
  build();
  for (uint32_t w = 0; w < inst_.size(); ++w) {
    if (inst_[w].source)
      next_step(w, start_ns_);
    else
      go_idle(w, start_ns_);
  }
}

void Pipelined::run_until(int64_t t) {
  run_agenda_before(
      q_, t, [this](uint32_t w, int64_t now) { on_wake(w, now); },  // kWake
      [this](uint32_t m, int64_t now) { on_arrival(m, now); });     // kArrival
}

void Pipelined::run(Truth& truth) {
  start();
  run_until(INT64_MAX);
  for (Instance& x : inst_) truth.instances.push_back(std::move(x.stats));
}

void Pipelined::halt(int64_t t) {
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

int64_t Pipelined::blocked_ns(size_t i, int64_t now) const {
  const Instance& x = inst_[i];
  return x.blocked_ns +
         (x.state == State::blocked ? std::max<int64_t>(0, now - x.blocked_since) : 0);
}

double Pipelined::source_read(uint32_t op) const {
  double r = 0;
  for (const Instance& x : inst_)
    if (x.op == op) r += x.read;
  return r;
}

void Pipelined::build() {
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
      OutEdge oe{
          e.partitioning, e.skew, e.hot_instance % pt, static_cast<uint32_t>(snd.out.size()), 0, 0};
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

void Pipelined::cut(OutChannel& ch, uint32_t records) {
  ch.pending.push({records, Ctl::data, 0});
  ++ch.pending_data;
  ++cuts_;
}

void Pipelined::flush(OutChannel& ch) {
  if (ch.partial > 0) cut(ch, ch.partial);
  ch.partial = 0;
}

void Pipelined::place(OutChannel& ch, uint64_t n, int64_t t) {
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

void Pipelined::place_control(OutChannel& ch, Ctl kind, int64_t value) {
  flush(ch);
  ch.pending.push({0, kind, value});
}

uint64_t Pipelined::partition(Instance& x, uint64_t n, int64_t t) {
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

void Pipelined::transmit(uint32_t w, uint32_t c, int64_t t) {
  OutChannel& ch = inst_[w].out[c];
  while (!ch.pending.empty()) {
    const PendingBuffer pb = ch.pending.front();
    if (pb.kind == Ctl::data) {
      if (ch.credits == 0) return;
      --ch.credits;
      --ch.pending_data;
    }
    ch.pending.pop();
    int64_t corr;
    uint64_t bytes;
    if (pb.kind != Ctl::data) {
      corr = rec_.send(id(w), ActivityType::control_message, t, id(ch.target));
      bytes = net_.control_bytes();
    } else {
      corr = rec_.send(id(w), ActivityType::data_message, t, id(ch.target), pb.records);
      bytes = uint64_t{pb.records} * spec(inst_[w]).record_bytes;
    }
    const uint32_t m = msgs_.put(Msg{corr, pb.value, w, ch.target, c, pb.records, false, pb.kind});
    q_.push(net_.arrival(w, t, bytes), kArrival, m);
  }
}

bool Pipelined::transmit_all(uint32_t w, int64_t t) {
  bool done = true;
  for (uint32_t c = 0; c < inst_[w].out.size(); ++c) {
    transmit(w, c, t);
    done &= inst_[w].out[c].pending_data == 0;
  }
  return done;
}

bool Pipelined::has_pending_data(const Instance& x) const {
  for (const OutChannel& ch : x.out)
    if (ch.pending_data > 0) return true;
  return false;
}

void Pipelined::go_idle(uint32_t w, int64_t t) {
  inst_[w].state = State::idle;
  rec_.open(id(w), ActivityType::waiting, t, inst_[w].op);
}

void Pipelined::block(uint32_t w, int64_t t) {
  inst_[w].state = State::blocked;
  inst_[w].blocked_since = t;
  rec_.open(id(w), ActivityType::waiting, t, inst_[w].op);
}

void Pipelined::schedule_wake(uint32_t w, int64_t t) {
  inst_[w].state = State::busy;
  q_.push(t, kWake, w);
}

void Pipelined::on_wake(uint32_t w, int64_t t) {
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

void Pipelined::on_arrival(uint32_t m, int64_t t) {
  const Msg msg = msgs_[m];
  const uint32_t w = msg.to;
  Instance& x = inst_[w];
  if (msg.is_credit) {
    msgs_.release(m);
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

void Pipelined::return_credit(uint32_t w, const Msg& msg, int64_t t) {
  OutChannel& ch = inst_[msg.from].out[msg.channel];
  if (inst_[msg.from].state == State::blocked && ch.pending_data > ch.credit_msgs_in_flight) {
    ++ch.credit_msgs_in_flight;
    const int64_t corr = rec_.send(id(w), ActivityType::control_message, t, id(msg.from));
    const uint32_t m = msgs_.put(Msg{corr, 0, w, msg.from, msg.channel, 0, true, Ctl::data});
    q_.push(net_.arrival(w, t, net_.control_bytes()), kArrival, m);
  } else {
    ++ch.credits;
  }
}

void Pipelined::next_step(uint32_t w, int64_t t) {
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
    const Msg msg = msgs_.take(m);
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

int64_t Pipelined::buffers(Instance& x, uint32_t w, uint64_t cut, int64_t t) {
  if (cut == 0 || s_.pipelined.buffer_cost.is_zero()) return t;
  const int64_t end = t + ns(x, s_.pipelined.buffer_cost.sum(cut, x.rng));
  rec_.activity(id(w), ActivityType::buffer, t, end, x.op);
  return end;
}

bool Pipelined::flush_all(uint32_t w, int64_t t) {
  Instance& x = inst_[w];
  cuts_ = 0;
  for (OutChannel& ch : x.out) flush(ch);
  const int64_t end = buffers(x, w, cuts_, t);
  if (end == t) return false;
  schedule_wake(w, end);
  return true;
}

void Pipelined::data_step(uint32_t w, uint32_t n, int64_t t) {
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

bool Pipelined::control_step(uint32_t w, const Msg& msg, int64_t t) {
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

void Pipelined::source_step(uint32_t w, int64_t t) {
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

}  // namespace pipelined_engine

void run_pipelined(const Scenario& scenario, Recorder& recorder, Truth& truth) {
  pipelined_engine::Pipelined(scenario, recorder).run(truth);
}

}  // namespace snailtrail::sim
