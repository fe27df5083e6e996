// Spark importer, pass 2 on the executors (docs/IMPORTERS.md "Spark"): task shapes, the
// greedy slot placement (thesis §3.3.2) and the slots' events.
#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "importers/spark/spark_builder.hpp"

namespace snailtrail::importers::spark::detail {

namespace {

// a * num / den without overflow (a, num, den >= 0, den > 0, num <= den).
int64_t scale(int64_t a, int64_t num, int64_t den) {
  return static_cast<int64_t>(static_cast<__int128>(a) * num / den);
}

// Shrinks parts (in order) so that their sum is at most `total`, proportionally.
template <size_t N>
bool fit(int64_t* const (&parts)[N], int64_t total) {
  __int128 wide_sum = 0;  // parts may each be near INT64_MAX
  for (int64_t* p : parts) wide_sum += *p;
  if (wide_sum <= total) return false;

  int64_t left = total;
  for (size_t i = 0; i < N; ++i) {
    *parts[i] = i + 1 == N ? left
                           : std::min(left, static_cast<int64_t>(static_cast<__int128>(*parts[i]) *
                                                                 total / wide_sum));
    left -= *parts[i];
  }
  return true;
}

}  // namespace

// end of the log, so tasks still started are counted as never ending.
void Builder::build(Trace& out, bool last) {
  if (last) log_.problems_[kTasksWithoutEnd] += log_.running_.size();
  shape_tasks();
  place_tasks();
  emit_slots(out);
  emit_driver(out);
  name_workers_and_stages(out);
  state_.task_base += static_cast<int64_t>(log_.tasks.size());
  log_.end_epoch();
}

// Durations on the slot and the split of the scheduler delay; drops impossible tasks.
void Builder::shape_tasks() {
  const int64_t lw = options_.launch_weight, rw = options_.result_weight;
  size_t kept = 0;
  for (TaskRec& t : log_.tasks) {
    if (t.launch < state_.driver_until) {
      // Ended (without a start in the log) after its job's epoch was emitted.
      ++log_.problems_[kTasksEndedAfterTheirJob];
      continue;
    }
    if (t.finish < t.launch) {
      ++log_.problems_[kTasksFinishedBeforeLaunch];
      continue;
    }
    if (t.finish == t.launch) {
      // Nothing to draw, and its launch and result would meet in one instant.
      ++log_.problems_[kZeroDurationTasks];
      continue;
    }
    if (t.getting_result != 0 && (t.getting_result < t.launch || t.getting_result > t.finish)) {
      ++log_.problems_[kBadGettingResultTime];
      t.getting_result = 0;
    }
    if (!t.has_metrics) {
      // Whatever the slot did is unknown: it held the task from launch to finish.
      ++log_.problems_[kTasksWithoutMetrics];
      t.start = t.launch;
      t.end = t.finish;
    } else {
      const int64_t getting = t.getting_result ? t.finish - t.getting_result : 0;
      const int64_t available = t.finish - getting - t.launch;
      // Millisecond rounding can make the executor's own times exceed the driver's.
      if (fit({&t.deserialize, &t.run, &t.serialize}, available))
        ++log_.problems_[kExecutorTimeExceedsTaskTime];
      if (fit({&t.fetch_wait, &t.gc, &t.shuffle_write}, t.run))
        ++log_.problems_[kRunTimePartsExceedRunTime];
      const int64_t executor_time = t.deserialize + t.run + t.serialize;
      const int64_t scheduler_delay = available - executor_time;
      t.start = t.launch + scale(scheduler_delay, lw, lw + rw);
      t.end = t.start + executor_time;
    }
    end_before_finish(t);
    log_.tasks[kept++] = t;
  }
  log_.tasks.resize(kept);
}

// Every result message lasts at least 1 ns. Otherwise, with millisecond times, a slot
// would often send a result and receive its next launch in the same instant while the
// driver receives that result and sends the launch in that instant too: a cycle of
// zero-duration messages, which CP has to break by dropping messages. Only the driver
// sends launches and only results go back to it, so this rules such cycles out.
void Builder::end_before_finish(TaskRec& t) {
  if (t.end < t.finish) return;
  if (t.end == t.start) {  // nothing done on the slot: move the empty task back
    t.start = t.end = t.finish - 1;
    return;
  }
  --t.end;
  if (!t.has_metrics) return;
  // Take the nanosecond from the last piece on the slot that has one.
  // Order on the slot: deserialize, fetch wait, processing, GC, shuffle write, serialize.
  if (t.serialize > 0) {
    --t.serialize;
  } else if (t.shuffle_write > 0) {
    --t.shuffle_write, --t.run;
  } else if (t.gc > 0) {
    --t.gc, --t.run;
  } else if (t.run > t.fetch_wait) {
    --t.run;  // processing
  } else if (t.fetch_wait > 0) {
    --t.fetch_wait, --t.run;
  } else {
    --t.deserialize;
  }
}

// Greedy placement (thesis §3.3.2): in order of start, each task goes to the free slot of
// its executor that was used most recently; a never-used slot only if no used one is
// free; a new slot if none is free (executor of unknown size, or more tasks than cores).
void Builder::place_tasks() {
  std::vector<uint32_t> order(log_.tasks.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  auto& tasks = log_.tasks;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const TaskRec &x = tasks[a], &y = tasks[b];
    if (x.start != y.start) return x.start < y.start;
    if (x.launch != y.launch) return x.launch < y.launch;
    return a < b;
  });
  // Worker ids in order of the slots' creation: the announced cores of each executor
  // when it is first seen here, extra slots as they are needed.
  for (ExecutorRec& ex : log_.executors) {
    if (ex.cores == 0) continue;
    while (ex.slots.size() < std::max<uint32_t>(1, ex.cores / log_.task_cpus))
      ex.slots.push_back(Slot{std::numeric_limits<int64_t>::min(), state_.next_worker++});
  }
  std::vector<bool>& unsized_counted = state_.unsized_counted;
  unsized_counted.resize(log_.executors.size(), false);
  for (uint32_t i : order) {
    TaskRec& t = tasks[i];
    ExecutorRec& ex = log_.executors[t.executor];
    size_t best = ex.slots.size();
    for (size_t s = 0; s < ex.slots.size(); ++s) {
      if (ex.slots[s].busy_until > t.start) continue;
      if (best == ex.slots.size() || ex.slots[s].busy_until > ex.slots[best].busy_until) best = s;
    }
    if (best == ex.slots.size()) {
      if (ex.cores == 0) {
        if (!unsized_counted[t.executor]) ++log_.problems_[kExecutorsWithoutCores];
        unsized_counted[t.executor] = true;
      } else {
        ++log_.problems_[kTasksBeyondExecutorCores];
      }
      ex.slots.push_back(Slot{std::numeric_limits<int64_t>::min(), state_.next_worker++});
    }
    ex.slots[best].busy_until = t.end;
    t.slot = static_cast<uint32_t>(best);
  }
  placement_order_ = std::move(order);
}

void Builder::emit_slots(Trace& trace) {
  auto& tasks = log_.tasks;
  // By worker, then start: every slot's events contiguous and in time order.
  std::vector<uint32_t> order = placement_order_;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return worker_of(tasks[a]) < worker_of(tasks[b]);
  });
  // Sized once: two messages and at most six activities (two events each) per task.
  size_t events = 0;
  for (const TaskRec& t : tasks)
    events += t.has_metrics ? 2 + 2 * ((t.deserialize > 0) + (t.fetch_wait > 0) +
                                       (t.run > t.fetch_wait + t.gc + t.shuffle_write) +
                                       (t.gc > 0) + (t.shuffle_write > 0) + (t.serialize > 0))
                            : 4;
  reserve_more(trace.events, events + 2 * tasks.size());  // + the driver's messages
  for (uint32_t i : order) {
    const TaskRec& t = tasks[i];
    const uint32_t w = worker_of(t);
    const uint32_t op = log_.stages[t.stage].id;
    trace.events.push_back(
        message(w, t.start, EventKind::recv, kDriver, 2 * (state_.task_base + i)));
    int64_t at = t.start;
    auto piece = [&](ActivityType type, int64_t duration) {
      if (duration <= 0) return;
      trace.events.push_back(local(w, at, type, EventKind::start, op));
      at += duration;
      trace.events.push_back(local(w, at, type, EventKind::end, op));
    };
    if (!t.has_metrics) {
      piece(ActivityType::unknown, t.end - t.start);
    } else {
      piece(ActivityType::deserialization, t.deserialize);
      piece(ActivityType::io, t.fetch_wait);
      piece(ActivityType::processing, t.run - t.fetch_wait - t.gc - t.shuffle_write);
      piece(ActivityType::buffer, t.gc);
      piece(ActivityType::io, t.shuffle_write);
      piece(ActivityType::serialization, t.serialize);
    }
    trace.events.push_back(
        message(w, t.end, EventKind::send, kDriver, 2 * (state_.task_base + i) + 1));
  }
}

uint32_t Builder::worker_of(const TaskRec& t) const {
  return log_.executors[t.executor].slots[t.slot].worker;
}

}  // namespace snailtrail::importers::spark::detail
