// The timely execution model (Timely Dataflow-like), docs/SIMULATOR.md "timely".
//
// Every worker runs every operator. The operator chain (and, with `iterations` > 1, its
// loop back to the first operator after the source) is cut into stages at every edge
// that is not `forward`: there records are exchanged all-to-all between workers (data
// messages; serialized only between processes). Sources close an epoch every
// `epoch_interval`. A worker runs rounds of cooperative scheduling (a `scheduling`
// activity, then any due input and all received records); it has completed stage t
// of an epoch when every worker announced that it completed stage t-1 and it has
// processed all records it received for t. Then it fires `notify` operators (which
// hold their outputs until their input is complete) and broadcasts its progress to all
// other workers (barrier processing, then one control message each). A worker with
// nothing to do waits until a message arrives (or, when the next epoch's input is due,
// waits on its input: an `input` activity).
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "sim/engine_core.hpp"
#include "sim/engines.hpp"
#include "sim/network.hpp"
#include "sim/source_curve.hpp"

namespace snailtrail::sim {
// Named, so that the sources of a unity build (one per model) do not clash.
namespace timely_model {
namespace {

enum SimKind : uint32_t { kRoundEnd = 0, kArrival = 1, kEpoch = 2 };

struct Stage {
  std::vector<uint32_t> ops;  // operator visits, in order
  bool exchange_out = false;  // records go to the next stage through an exchange
  bool forward_out = false;   // records go to the next stage on the same worker
  Partitioning partitioning = Partitioning::hash;
  double skew = 0;
};

struct Msg {
  int64_t correlator;
  uint32_t from, to;
  uint32_t epoch, stage;
  uint64_t records;
  bool is_progress;
};

struct Input {
  uint32_t epoch, stage;
  uint64_t records;
  bool remote;  // arrived from another process: deserialize
};

struct StageState {
  uint32_t progress = 0;  // workers that announced completing this stage
  uint32_t queued = 0;    // received inputs not yet processed
  bool completed = false;
  uint64_t held = 0;  // outputs of a notify operator, emitted on completion
};

struct Worker {
  bool busy = false;
  bool stopped = false;
  int64_t since = 0;
  uint32_t idle_gen = 0;
  uint32_t next_epoch = 0;  // next epoch whose input this worker reads
  std::vector<Input> queue;
  std::unordered_map<uint64_t, StageState> stages;
  std::vector<uint32_t> rr;  // round-robin cursor per stage
  Rng rng;
};

class Timely {
 public:
  Timely(const Scenario& s, Recorder& rec, Truth& truth)
      : s_(s),
        rec_(rec),
        truth_(truth),
        net_(s.network, s.timely.workers),
        W_(s.timely.workers),
        curve_(s.operators[s.topo_order[0]], 1) {}

  void run() {
    build();
    for (uint32_t w = 0; w < W_; ++w) round(w, 0);
    run_agenda(
        q_, [this](uint32_t w, int64_t t) { on_round_end(w, t); },     // kRoundEnd
        [this](uint32_t m, int64_t t) { on_arrival(m, t); },           // kArrival
        [this](uint32_t arg, int64_t t) { on_epoch_timer(arg, t); });  // kEpoch
    hand_over(stats_, truth_);
  }

 private:
  static int64_t ns(double v) { return static_cast<int64_t>(std::llround(v)); }
  bool ended(int64_t t) const { return t >= s_.duration_ns; }
  uint32_t process_of(uint32_t w) const {
    return static_cast<uint32_t>(uint64_t{w} * s_.timely.processes / W_);
  }
  static uint64_t key(uint32_t epoch, uint32_t stage) { return (uint64_t{epoch} << 32) | stage; }

  void build() {
    // Unroll the chain (and its loop) into stages.
    std::vector<uint32_t> chain = s_.topo_order;
    std::vector<uint32_t> visits(chain);
    for (uint32_t it = 1; it < s_.timely.iterations; ++it)
      visits.insert(visits.end(), chain.begin() + 1, chain.end());
    const auto in1 = chain.size() > 1 ? s_.in_edges(chain[1]) : std::vector<uint32_t>{};
    const Partitioning loop_p = s_.timely.loop_partitioning.value_or(
        in1.empty() ? Partitioning::hash : s_.edges[in1[0]].partitioning);
    stages_.push_back(Stage{{visits[0]}});
    for (size_t i = 1; i < visits.size(); ++i) {
      Partitioning p;
      double skew;
      const auto in = s_.in_edges(visits[i]);
      if (visits[i - 1] == chain.back() && visits[i] == chain[1] && i >= chain.size()) {
        p = loop_p;
        skew = s_.timely.loop_skew;
      } else {
        p = s_.edges[in[0]].partitioning;
        skew = s_.edges[in[0]].skew;
      }
      if (p == Partitioning::forward) {
        stages_.back().ops.push_back(visits[i]);
        continue;
      }
      stages_.back().exchange_out = true;
      stages_.back().partitioning = p;
      stages_.back().skew = skew;
      stages_.push_back(Stage{{visits[i]}});
    }
    workers_.resize(W_);
    for (uint32_t w = 0; w < W_; ++w) {
      rec_.add_worker("worker-" + std::to_string(w));
      workers_[w].rng = Rng(s_.seed, w);
      workers_[w].rr.assign(stages_.size(), w % std::max<uint32_t>(1, W_));
    }
    stats_.resize(s_.operators.size());
    for (uint32_t op = 0; op < s_.operators.size(); ++op)
      for (uint32_t w = 0; w < W_; ++w) {
        InstanceTruth x;
        x.worker = "worker-" + std::to_string(w);
        x.op = s_.operators[op].name;
        x.instance = w;
        stats_[op].push_back(std::move(x));
      }
  }

  int64_t epoch_time(uint32_t e) const {
    return static_cast<int64_t>(e + 1) * s_.timely.epoch_interval_ns;
  }

  // Records of epoch e read by one worker.
  uint64_t epoch_records(uint32_t e) const {
    return curve_.in_interval(e, s_.timely.epoch_interval_ns);
  }

  // ---- messages ----------------------------------------------------------------

  void send(uint32_t from, uint32_t to, const Msg& proto, int64_t t, uint64_t bytes) {
    Msg msg = proto;
    msg.from = from;
    msg.to = to;
    msg.correlator = rec_.send(
        from, msg.is_progress ? ActivityType::control_message : ActivityType::data_message, t, to,
        msg.is_progress ? -1 : static_cast<int64_t>(msg.records));
    const uint32_t m = msgs_.put(msg);
    const int64_t at = process_of(from) == process_of(to) ? Network::local_arrival(t)
                                                          : net_.arrival(from, t, bytes);
    q_.push(at, kArrival, m);
  }

  void on_arrival(uint32_t m, int64_t t) {
    const Msg msg = msgs_.take(m);
    Worker& x = workers_[msg.to];
    rec_.recv(msg.to, msg.is_progress ? ActivityType::control_message : ActivityType::data_message,
              t, msg.from, msg.correlator,
              msg.is_progress ? -1 : static_cast<int64_t>(msg.records));
    if (msg.is_progress) {
      StageState& st = x.stages[key(msg.epoch, msg.stage)];
      ++st.progress;
      // Nothing waits for the last stage's progress: forget it once complete.
      if (msg.stage + 1 == stages_.size() && st.completed && st.progress == W_)
        x.stages.erase(key(msg.epoch, msg.stage));
    } else {
      ++x.stages[key(msg.epoch, msg.stage)].queued;
      x.queue.push_back(
          {msg.epoch, msg.stage, msg.records, process_of(msg.from) != process_of(msg.to)});
    }
    if (x.busy || x.stopped) return;
    // Idle: the message ends the waiting and the worker runs a round.
    end_idle(msg.to, t, ActivityType::waiting);
    if (ended(t)) {
      x.stopped = true;
      return;
    }
    round(msg.to, t);
  }

  void on_epoch_timer(uint32_t arg, int64_t t) {
    const uint32_t w = arg & 0xFFFFFu;
    const uint32_t gen = arg >> 20;
    Worker& x = workers_[w];
    if (x.busy || x.stopped || (x.idle_gen & 0xFFFu) != gen) return;
    // Idle until the input was due: the worker waited on its input.
    end_idle(w, t, ActivityType::input);
    round(w, t);
  }

  // An idle worker spins (busy waiting) for `spin` before it parks; the rest of the
  // idle time, until `t`, is `rest` (waiting for a message, or input that became due).
  void end_idle(uint32_t w, int64_t t, ActivityType rest) {
    const int64_t since = workers_[w].since;
    const int64_t spun = std::min(t, since + s_.timely.spin_ns);
    rec_.activity(w, ActivityType::busy_waiting, since, spun);
    rec_.activity(w, rest, spun, t, rest == ActivityType::input ? s_.topo_order[0] : kNoOp);
  }

  // ---- rounds ------------------------------------------------------------------

  // Processes `n` records of stage `st` of epoch `e` (`remote` of them from other
  // processes, to be deserialized) from `t` on; returns the end time.
  int64_t process(uint32_t w, uint32_t e, uint32_t st, uint64_t n, uint64_t remote, int64_t t) {
    Worker& x = workers_[w];
    const Stage& stage = stages_[st];
    int64_t now = t;
    const uint32_t first = stage.ops.front();
    if (remote > 0) {
      const int64_t end = now + ns(s_.operators[first].cost.deserialization.sum(remote, x.rng));
      rec_.activity(w, ActivityType::deserialization, now, end, first);
      stats_[first][w].useful_ns += end - now;
      now = end;
    }
    for (uint32_t op : stage.ops) {
      const OperatorSpec& o = s_.operators[op];
      const int64_t end = now + ns(o.cost.processing.sum(n, x.rng));
      rec_.activity(w, ActivityType::processing, now, end, op, static_cast<int64_t>(n));
      stats_[op][w].useful_ns += end - now;
      stats_[op][w].records_in += n;
      now = end;
      n = stochastic_round(o.selectivity.sum(n, x.rng), x.rng);
      stats_[op][w].records_out += n;
    }
    const uint32_t last = stage.ops.back();
    if (st + 1 == stages_.size()) {
      const int64_t end = now + ns(s_.operators[last].cost.io.sum(n, x.rng));
      rec_.activity(w, ActivityType::io, now, end, last, static_cast<int64_t>(n));
      return end;
    }
    if (s_.operators[last].notify) {
      x.stages[key(e, st)].held += n;
      return now;
    }
    return emit(w, e, st, n, now);
  }

  // Sends stage `st`'s `n` output records to the workers of stage st + 1.
  int64_t emit(uint32_t w, uint32_t e, uint32_t st, uint64_t n, int64_t now) {
    Worker& x = workers_[w];
    const Stage& stage = stages_[st];
    const uint32_t last = stage.ops.back();
    const OperatorSpec& o = s_.operators[last];
    if (n == 0) return now;
    if (!stage.exchange_out) {
      local_input(w, e, st + 1, n);
      return now;
    }
    counts_.assign(W_, 0);
    uint64_t hot = 0;
    if (stage.partitioning == Partitioning::hash)
      hot = std::min<uint64_t>(n, stochastic_round(stage.skew * static_cast<double>(n), x.rng));
    const uint64_t rest = n - hot, base = rest / W_, rem = rest % W_;
    uint32_t start;
    if (stage.partitioning == Partitioning::hash) {
      start = static_cast<uint32_t>(x.rng.below(W_));
    } else {
      start = x.rr[st];
      x.rr[st] = static_cast<uint32_t>((start + rem) % W_);
    }
    uint64_t remote = 0;
    for (uint32_t j = 0; j < W_; ++j) {
      const uint32_t pos = (j + W_ - start) % W_;
      counts_[j] = base + (pos < rem ? 1 : 0) + (j == 0 ? hot : 0);
      if (j != w && process_of(j) != process_of(w)) remote += counts_[j];
    }
    const int64_t end = now + ns(o.cost.serialization.sum(remote, x.rng));
    rec_.activity(w, ActivityType::serialization, now, end, last, static_cast<int64_t>(remote));
    stats_[last][w].useful_ns += end - now;
    for (uint32_t j = 0; j < W_; ++j) {
      if (counts_[j] == 0) continue;
      if (j == w) {
        local_input(w, e, st + 1, counts_[j]);
        continue;
      }
      Msg proto{0, 0, 0, e, st + 1, counts_[j], false};
      send(w, j, proto, end, counts_[j] * o.record_bytes);
    }
    return end;
  }

  void local_input(uint32_t w, uint32_t e, uint32_t st, uint64_t n) {
    Worker& x = workers_[w];
    ++x.stages[key(e, st)].queued;
    x.queue.push_back({e, st, n, false});
  }

  // A stage is complete on a worker when its input is complete (every worker finished
  // the previous stage, or the worker read the epoch's input) and nothing is queued.
  bool complete(const Worker& x, uint32_t e, uint32_t st) const {
    auto it = x.stages.find(key(e, st));
    if (it != x.stages.end() && (it->second.completed || it->second.queued > 0)) return false;
    if (st == 0) return e < x.next_epoch;
    auto prev = x.stages.find(key(e, st - 1));
    return prev != x.stages.end() && prev->second.progress == W_;
  }

  // One round of cooperative scheduling at `t`; schedules its end.
  void round(uint32_t w, int64_t t) {
    Worker& x = workers_[w];
    x.busy = true;
    int64_t now = t + std::max<int64_t>(1, ns(s_.timely.scheduling_cost.sample(x.rng)));
    rec_.activity(w, ActivityType::scheduling, t, now);
    // Due input.
    const uint32_t src = s_.topo_order[0];
    while (epoch_time(x.next_epoch) <= now && !ended(epoch_time(x.next_epoch))) {
      const uint32_t e = x.next_epoch;
      const uint64_t total = epoch_records(e);
      const uint64_t n = total / W_ + (w < total % W_ ? 1 : 0);
      const int64_t end = now + ns(s_.operators[src].cost.input.sum(n, x.rng));
      rec_.activity(w, ActivityType::input, now, end, src, static_cast<int64_t>(n));
      now = end;
      ++x.next_epoch;
      x.queue.push_back({e, 0, n, false});
      ++x.stages[key(e, 0)].queued;
    }
    // Everything received (and produced locally) so far: each operator runs once per
    // round on all its input of one epoch.
    groups_.clear();
    for (const Input& in : x.queue) {
      const uint64_t k = key(in.epoch, in.stage);
      auto it =
          std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.key == k; });
      if (it == groups_.end()) {
        groups_.push_back({k, 0, 0, 0});
        it = groups_.end() - 1;
      }
      it->records += in.records;
      it->remote += in.remote ? in.records : 0;
      ++it->inputs;
    }
    x.queue.clear();
    for (const Group& g : groups_) {
      const auto e = static_cast<uint32_t>(g.key >> 32);
      const auto st = static_cast<uint32_t>(g.key & 0xFFFFFFFFu);
      now = process(w, e, st, g.records, g.remote, now);
      x.stages[g.key].queued -= g.inputs;
    }
    // Completed stages: fire notify operators, then broadcast progress.
    completed_.clear();
    for (auto& [k, st] : x.stages) {
      const auto e = static_cast<uint32_t>(k >> 32);
      const auto s = static_cast<uint32_t>(k & 0xFFFFFFFFu);
      if (!st.completed && complete(x, e, s)) completed_.push_back(k);
    }
    std::sort(completed_.begin(), completed_.end());
    for (size_t i = 0; i < completed_.size(); ++i) {
      const auto e = static_cast<uint32_t>(completed_[i] >> 32);
      const auto s = static_cast<uint32_t>(completed_[i] & 0xFFFFFFFFu);
      StageState& st = x.stages[completed_[i]];
      if (st.completed) continue;
      st.completed = true;
      const uint32_t last = stages_[s].ops.back();
      if (s_.operators[last].notify && s + 1 < stages_.size()) {
        const uint64_t held = st.held;
        st.held = 0;
        now = emit(w, e, s, held, now);
      }
      const int64_t end = now + std::max<int64_t>(1, ns(s_.timely.progress_cost.sample(x.rng)));
      rec_.activity(w, ActivityType::barrier_processing, now, end);
      now = end;
      ++x.stages[completed_[i]].progress;
      Msg proto{0, 0, 0, e, s, 0, true};
      for (uint32_t j = 0; j < W_; ++j)
        if (j != w) send(w, j, proto, now, net_.control_bytes());
      // The previous stage's state is no longer needed; a local completion may make
      // the next stage complete too (checked in the next round).
      if (s > 0) x.stages.erase(key(e, s - 1));
      if (s + 1 == stages_.size() && x.stages[completed_[i]].progress == W_)
        x.stages.erase(completed_[i]);
    }
    q_.push(now, kRoundEnd, w);
  }

  bool has_work(const Worker& x, int64_t t) const {
    if (!x.queue.empty()) return true;
    if (epoch_time(x.next_epoch) <= t && !ended(epoch_time(x.next_epoch))) return true;
    for (const auto& [k, st] : x.stages)
      if (!st.completed &&
          complete(x, static_cast<uint32_t>(k >> 32), static_cast<uint32_t>(k & 0xFFFFFFFFu)))
        return true;
    return false;
  }

  void on_round_end(uint32_t w, int64_t t) {
    Worker& x = workers_[w];
    x.busy = false;
    if (ended(t)) {
      x.stopped = true;
      return;
    }
    if (has_work(x, t)) {
      round(w, t);
      return;
    }
    x.since = t;
    ++x.idle_gen;
    const int64_t next = epoch_time(x.next_epoch);
    if (!ended(next)) q_.push(next, kEpoch, w | ((x.idle_gen & 0xFFFu) << 20));
  }

  const Scenario& s_;
  Recorder& rec_;
  Truth& truth_;
  Network net_;
  const uint32_t W_;
  SourceCurve curve_;
  EventQueue q_;
  std::vector<Stage> stages_;
  std::vector<Worker> workers_;
  MessageSlots<Msg> msgs_;
  std::vector<std::vector<InstanceTruth>> stats_;  // per operator, per worker
  std::vector<uint64_t> counts_;
  std::vector<uint64_t> completed_;
  struct Group {
    uint64_t key;
    uint64_t records, remote;
    uint32_t inputs;
  };
  std::vector<Group> groups_;
};

}  // namespace
}  // namespace timely_model

void run_timely(const Scenario& scenario, Recorder& recorder, Truth& truth) {
  timely_model::Timely(scenario, recorder, truth).run();
}

}  // namespace snailtrail::sim
