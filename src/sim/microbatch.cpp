// The micro-batch execution model (Spark-like), docs/SIMULATOR.md "microbatch".
//
// A driver worker and `executors` executor workers. The operator chain is cut into
// stages at every edge that is not `forward` (a shuffle); a stage runs one task per
// instance of its operators. Every `batch_interval` the records that arrived form a
// batch. For each stage of the batch the driver schedules every task (a `scheduling`
// activity per task) and sends it to its executor (task k runs on executor k mod E)
// with a control message; executors wait for tasks, run them (task deserialization,
// input or shuffle read, processing of each operator of the stage, shuffle write or
// output) and report the result to the driver with a control message. When all
// results of the stage are in (waiting ends with the last one), the driver does
// barrier processing and schedules the next stage. A driver that is done before the
// next batch's input is complete waits on its input (an `input` activity: no message
// ends it).
#include <algorithm>
#include <cmath>

#include "sim/engine_core.hpp"
#include "sim/engines.hpp"
#include "sim/network.hpp"
#include "sim/source_curve.hpp"

namespace snailtrail::sim {
// Named, so that the sources of a unity build (one per model) do not clash.
namespace microbatch_model {
namespace {

enum SimKind : uint32_t { kDriverWake = 0, kExecutorWake = 1, kArrival = 2 };

struct Stage {
  std::vector<uint32_t> ops;  // operator indices, in chain order
  uint32_t tasks = 1;
  Partitioning out_partitioning = Partitioning::round_robin;  // to the next stage
  double out_skew = 0;
};

struct Task {
  uint32_t batch, stage, index;
  uint64_t records;  // input records
};

struct Msg {
  int64_t correlator;
  uint32_t from, to;
  bool is_result;
  Task task;
};

enum class DriverPhase : uint8_t { input, scheduling, waiting, barrier, stopped };

struct Executor {
  bool busy = false;
  bool stopped = false;
  int64_t since = 0;  // start of waiting
  std::vector<Task> queue;
  size_t head = 0;
};

class Microbatch {
 public:
  Microbatch(const Scenario& s, Recorder& rec, Truth& truth)
      : s_(s),
        rec_(rec),
        truth_(truth),
        net_(s.network, worker_count(s)),
        curve_(s.operators[s.topo_order[0]], 1),
        E_(s.microbatch.executors) {}

  void run() {
    build();
    for (uint32_t e = 0; e < E_; ++e) executors_[e].since = 0;
    start_batch(0);
    run_agenda(
        q_, [this](uint32_t, int64_t t) { on_driver_wake(t); },     // kDriverWake
        [this](uint32_t e, int64_t t) { on_executor_wake(e, t); },  // kExecutorWake
        [this](uint32_t m, int64_t t) { on_arrival(m, t); });       // kArrival
    hand_over(stats_, truth_);
  }

 private:
  static constexpr uint32_t kDriver = 0;
  uint32_t executor_worker(uint32_t e) const { return e + 1; }
  static int64_t ns(double v) { return static_cast<int64_t>(std::llround(v)); }
  bool ended(int64_t t) const { return t >= s_.duration_ns; }

  void build() {
    rec_.add_worker("driver");
    for (uint32_t e = 0; e < E_; ++e) rec_.add_worker("executor-" + std::to_string(e));
    executors_.resize(E_);
    driver_rng_ = Rng(s_.seed, kDriver);
    for (uint32_t e = 0; e < E_; ++e) exec_rng_.emplace_back(s_.seed, executor_worker(e));
    for (size_t i = 0; i < s_.topo_order.size(); ++i) {
      const uint32_t op = s_.topo_order[i];
      const auto in = s_.in_edges(op);
      if (in.empty() || s_.edges[in[0]].partitioning != Partitioning::forward) {
        if (!stages_.empty()) {
          stages_.back().out_partitioning = s_.edges[in[0]].partitioning;
          stages_.back().out_skew = s_.edges[in[0]].skew;
        }
        stages_.push_back(Stage{{}, s_.operators[op].parallelism});
      }
      stages_.back().ops.push_back(op);
    }
    stats_.resize(s_.operators.size());
    for (uint32_t op = 0; op < s_.operators.size(); ++op) {
      const OperatorSpec& o = s_.operators[op];
      for (uint32_t k = 0; k < o.parallelism; ++k) {
        InstanceTruth x;
        x.worker = "executor-" + std::to_string(k % E_);
        x.op = o.name;
        x.instance = k;
        stats_[op].push_back(std::move(x));
      }
    }
  }

  // ---- messages ----------------------------------------------------------------

  void send(uint32_t from, uint32_t to, bool is_result, const Task& task, int64_t t) {
    const int64_t corr = rec_.send(from, ActivityType::control_message, t, to);
    const uint32_t m = msgs_.put(Msg{corr, from, to, is_result, task});
    q_.push(net_.arrival(from, t, net_.control_bytes()), kArrival, m);
  }

  void on_arrival(uint32_t m, int64_t t) {
    const Msg msg = msgs_.take(m);
    rec_.recv(msg.to, ActivityType::control_message, t, msg.from, msg.correlator);
    if (msg.is_result)
      on_result(msg.task, t);
    else
      on_launch(msg.to - 1, msg.task, t);
  }

  // ---- driver --------------------------------------------------------------------

  // Records of batch b: those that arrived in [b*I, (b+1)*I).
  uint64_t batch_records(uint32_t b) const {
    return curve_.in_interval(b, s_.microbatch.batch_interval_ns);
  }

  void start_batch(int64_t t) {
    if (ended(t)) {
      phase_ = DriverPhase::stopped;
      return;
    }
    const int64_t ready = static_cast<int64_t>(batch_ + 1) * s_.microbatch.batch_interval_ns;
    if (t < ready) {
      if (ended(ready)) {
        rec_.activity(kDriver, ActivityType::input, t, s_.duration_ns);
        phase_ = DriverPhase::stopped;
        return;
      }
      rec_.activity(kDriver, ActivityType::input, t, ready);
      phase_ = DriverPhase::input;
      q_.push(ready, kDriverWake, 0);
      return;
    }
    start_stage(0, t);
  }

  void start_stage(uint32_t stage, int64_t t) {
    stage_ = stage;
    const Stage& st = stages_[stage];
    task_inputs_.assign(st.tasks, 0);
    if (stage == 0) {
      const uint64_t n = batch_records(batch_);
      for (uint32_t k = 0; k < st.tasks; ++k)
        task_inputs_[k] = n / st.tasks + (k < n % st.tasks ? 1 : 0);
    } else {
      task_inputs_ = next_inputs_;
    }
    next_inputs_.assign(stage + 1 < stages_.size() ? stages_[stage + 1].tasks : 0, 0);
    next_task_ = 0;
    results_ = 0;
    schedule_next(t);
  }

  void schedule_next(int64_t t) {
    driver_step(ActivityType::scheduling, s_.microbatch.scheduling_cost, DriverPhase::scheduling,
                t);
  }

  // The driver spends a sampled `cost` (1 ns at least) on `activity` from `t`, in `phase`,
  // and wakes at its end; past the end of the run it stops instead.
  void driver_step(ActivityType activity, const Distribution& cost, DriverPhase phase, int64_t t) {
    if (ended(t)) {
      phase_ = DriverPhase::stopped;
      return;
    }
    const int64_t end = t + std::max<int64_t>(1, ns(cost.sample(driver_rng_)));
    rec_.activity(kDriver, activity, t, end);
    phase_ = phase;
    q_.push(end, kDriverWake, 0);
  }

  void on_driver_wake(int64_t t) {
    switch (phase_) {
      case DriverPhase::input:
        start_stage(0, t);
        return;
      case DriverPhase::scheduling: {
        if (ended(t)) {
          phase_ = DriverPhase::stopped;
          return;
        }
        const uint32_t k = next_task_++;
        const Task task{batch_, stage_, k, task_inputs_[k]};
        send(kDriver, executor_worker(k % E_), false, task, t);
        if (next_task_ < stages_[stage_].tasks) {
          schedule_next(t);
        } else if (results_ == stages_[stage_].tasks) {
          barrier(t);
        } else {
          phase_ = DriverPhase::waiting;
          wait_since_ = t;
        }
        return;
      }
      case DriverPhase::barrier:
        if (stage_ + 1 < stages_.size()) {
          start_stage(stage_ + 1, t);
        } else {
          ++batch_;
          start_batch(t);
        }
        return;
      case DriverPhase::waiting:
      case DriverPhase::stopped:
        return;
    }
  }

  void barrier(int64_t t) {
    driver_step(ActivityType::barrier_processing, s_.microbatch.stage_barrier_cost,
                DriverPhase::barrier, t);
  }

  void on_result(const Task& task, int64_t t) {
    if (task.batch != batch_ || task.stage != stage_) return;  // cannot happen: stages are barriers
    ++results_;
    if (phase_ == DriverPhase::waiting && results_ == stages_[stage_].tasks) {
      rec_.activity(kDriver, ActivityType::waiting, wait_since_, t);
      barrier(t);
    }
  }

  // ---- executors -----------------------------------------------------------------

  void on_launch(uint32_t e, const Task& task, int64_t t) {
    Executor& x = executors_[e];
    x.queue.push_back(task);
    if (x.busy || x.stopped) return;
    rec_.activity(executor_worker(e), ActivityType::waiting, x.since, t);
    if (ended(t)) {
      x.stopped = true;
      return;
    }
    run_task(e, t);
  }

  void on_executor_wake(uint32_t e, int64_t t) {
    Executor& x = executors_[e];
    const Task done = x.queue[x.head - 1];
    send(executor_worker(e), kDriver, true, done, t);
    x.busy = false;
    if (ended(t)) {
      x.stopped = true;
      return;
    }
    if (x.head < x.queue.size()) {
      run_task(e, t);
    } else {
      x.queue.clear();
      x.head = 0;
      x.since = t;
    }
  }

  void run_task(uint32_t e, int64_t t) {
    Executor& x = executors_[e];
    const Task task = x.queue[x.head++];
    x.busy = true;
    const uint32_t w = executor_worker(e);
    Rng& rng = exec_rng_[e];
    const Stage& st = stages_[task.stage];
    const bool last_stage = task.stage + 1 == stages_.size();
    uint64_t n = task.records;
    // Task deserialization, then reading the input (source) or the shuffle blocks.
    const uint32_t first = st.ops.front();
    const OperatorSpec& fo = s_.operators[first];
    int64_t now = t + ns(s_.microbatch.task_launch_cost.sample(rng));
    if (fo.is_source) {
      rec_.activity(w, ActivityType::deserialization, t, now, first);
      const int64_t end = now + ns(fo.cost.input.sum(n, rng));
      rec_.activity(w, ActivityType::input, now, end, first, static_cast<int64_t>(n));
      now = end;
    } else {
      const int64_t end = now + ns(fo.cost.deserialization.sum(n, rng));
      rec_.activity(w, ActivityType::deserialization, t, end, first);
      stats_[first][task.index].useful_ns += end - now;
      now = end;
    }
    for (size_t i = 0; i < st.ops.size(); ++i) {
      const uint32_t op = st.ops[i];
      const OperatorSpec& o = s_.operators[op];
      const int64_t end = now + ns(o.cost.processing.sum(n, rng));
      rec_.activity(w, ActivityType::processing, now, end, op, static_cast<int64_t>(n));
      InstanceTruth& stat = stats_[op][task.index];
      stat.useful_ns += end - now;
      stat.records_in += n;
      now = end;
      n = stochastic_round(o.selectivity.sum(n, rng), rng);
      stat.records_out += n;
      if (i + 1 == st.ops.size()) {
        if (!last_stage) {
          // Shuffle write, partitioned for the next stage.
          const int64_t ser_end = now + ns(o.cost.serialization.sum(n, rng));
          rec_.activity(w, ActivityType::serialization, now, ser_end, op, static_cast<int64_t>(n));
          stat.useful_ns += ser_end - now;
          now = ser_end;
          shuffle(st, n, rng);
        } else {
          const int64_t io_end = now + ns(o.cost.io.sum(n, rng));
          rec_.activity(w, ActivityType::io, now, io_end, op, static_cast<int64_t>(n));
          now = io_end;
        }
      }
    }
    q_.push(std::max(now, t + 1), kExecutorWake, e);
  }

  // Adds a task's `n` output records to the next stage's task inputs.
  void shuffle(const Stage& st, uint64_t n, Rng& rng) {
    const auto k = static_cast<uint32_t>(next_inputs_.size());
    if (k == 0) return;
    uint64_t hot = 0;
    if (st.out_partitioning == Partitioning::hash)
      hot = std::min<uint64_t>(n, stochastic_round(st.out_skew * static_cast<double>(n), rng));
    const uint64_t rest = n - hot, base = rest / k, rem = rest % k;
    const auto start = static_cast<uint32_t>(rng.below(k));
    for (uint32_t j = 0; j < k; ++j) {
      const uint32_t pos = (j + k - start) % k;
      next_inputs_[j] += base + (pos < rem ? 1 : 0) + (j == 0 ? hot : 0);
    }
  }

  const Scenario& s_;
  Recorder& rec_;
  Truth& truth_;
  Network net_;
  SourceCurve curve_;
  const uint32_t E_;
  EventQueue q_;
  std::vector<Stage> stages_;
  std::vector<Executor> executors_;
  std::vector<Rng> exec_rng_;
  Rng driver_rng_;
  MessageSlots<Msg> msgs_;
  std::vector<std::vector<InstanceTruth>> stats_;  // per operator, per task index
  // Driver state.
  DriverPhase phase_ = DriverPhase::input;
  uint32_t batch_ = 0, stage_ = 0, next_task_ = 0, results_ = 0;
  int64_t wait_since_ = 0;
  std::vector<uint64_t> task_inputs_, next_inputs_;
};

}  // namespace
}  // namespace microbatch_model

void run_microbatch(const Scenario& scenario, Recorder& recorder, Truth& truth) {
  microbatch_model::Microbatch(scenario, recorder, truth).run();
}

}  // namespace snailtrail::sim
