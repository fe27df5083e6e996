// Spark importer, pass 2 on the driver (docs/IMPORTERS.md "Spark"): its timeline of
// launch and result messages and of scheduling, waiting and barrier activities, and the
// names of the workers and stages.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "importers/spark/spark_builder.hpp"

namespace snailtrail::importers::spark::detail {

// The driver's timeline: launch/result messages to and from the slots, and activities
// (scheduling, waiting for results, barrier processing) from the state changes of its
// tasks, stages and jobs.
void Builder::emit_driver(Trace& trace) {
  std::vector<DriverPoint> points;
  std::vector<Event> messages;
  const StageTaskSpan spans = task_points(points, messages);
  stage_points(points, spans);
  job_points(points, spans);
  std::sort(points.begin(), points.end(),
            [](const DriverPoint& a, const DriverPoint& b) { return a.ts < b.ts; });
  std::stable_sort(messages.begin(), messages.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  emit_driver_events(trace, driver_runs(points), messages);
}

// Each task: out from its launch to its result, with a launch message and a result
// message.
Builder::StageTaskSpan Builder::task_points(std::vector<DriverPoint>& points,
                                            std::vector<Event>& messages) {
  auto& tasks = log_.tasks;
  StageTaskSpan spans{std::vector<int64_t>(log_.stages.size(), -1),
                      std::vector<int64_t>(log_.stages.size(), -1)};
  for (uint32_t i = 0; i < tasks.size(); ++i) {
    const TaskRec& t = tasks[i];
    points.push_back({t.launch, +1, 0, 0, false});
    points.push_back({t.finish, -1, 0, 0, true});
    messages.push_back(
        message(kDriver, t.launch, EventKind::send, worker_of(t), 2 * (state_.task_base + i)));
    messages.push_back(
        message(kDriver, t.finish, EventKind::recv, worker_of(t), 2 * (state_.task_base + i) + 1));
    int64_t& first = spans.first_launch[t.stage];
    if (first < 0 || t.launch < first) first = t.launch;
    spans.last_result[t.stage] = std::max(spans.last_result[t.stage], t.finish);
  }
  return spans;
}

// Each stage of the epoch not drawn before: open from submission (or first launch) to
// completion (or last result), a barrier from its last result to its completion.
void Builder::stage_points(std::vector<DriverPoint>& points, const StageTaskSpan& spans) {
  for (uint32_t s : log_.epoch_stages_) {
    StageRec& st = log_.stages[s];
    if (st.drawn) continue;  // in an earlier epoch
    int64_t begin = st.submitted >= 0 ? st.submitted : spans.first_launch[s];
    int64_t end = st.completed;
    if (begin < 0) continue;  // neither submitted nor any task: nothing to draw
    if (end < 0) {
      ++log_.problems_[kStagesWithoutCompletion];
      end = spans.last_result[s];
      if (end < 0) continue;
    }
    st.drawn = true;
    if (end < begin) {
      ++log_.problems_[kBadStageTimes];
      continue;
    }
    points.push_back({begin, 0, 0, +1, false});
    points.push_back({end, 0, 0, -1, false});
    const int64_t last = spans.last_result[s];
    if (last >= 0 && last < end) {
      points.push_back({last, 0, +1, 0, false});
      points.push_back({end, 0, -1, 0, false});
    }
  }
}

// Each job with a start and an end: open from its submission to its completion.
void Builder::job_points(std::vector<DriverPoint>& points, const StageTaskSpan& spans) {
  for (JobRec& j : log_.jobs) {
    if (!j.started || !j.ended) {
      ++log_.problems_[kJobsWithoutEnd];  // (a job end without start is as unusable)
      continue;
    }
    if ((j.submitted < 0 || j.completed < 0) && !job_span_from_stages(j, spans)) continue;
    if (j.completed < j.submitted) {
      ++log_.problems_[kBadJobTimes];
      continue;
    }
    points.push_back({j.submitted, 0, 0, +1, false});
    points.push_back({j.completed, 0, 0, -1, false});
  }
}

// Spark 1.x: the job spans its stages (submission or first task launch to completion
// or last result); all of the epoch's stages if it names none. False if no stage ran.
bool Builder::job_span_from_stages(JobRec& j, const StageTaskSpan& spans) {
  int64_t first = -1, last = -1;
  for (uint32_t s : log_.epoch_stages_) {
    const StageRec& st = log_.stages[s];
    if (!j.stage_ids.empty() &&
        std::find(j.stage_ids.begin(), j.stage_ids.end(), st.id) == j.stage_ids.end())
      continue;
    const int64_t b = st.submitted >= 0 ? st.submitted : spans.first_launch[s];
    const int64_t e = st.completed >= 0 ? st.completed : spans.last_result[s];
    if (b >= 0 && (first < 0 || b < first)) first = b;
    if (e >= 0) last = std::max(last, e);
  }
  if (j.submitted < 0) {
    ++log_.problems_[kJobsWithoutSubmissionTime];
    j.submitted = first;
  }
  if (j.completed < 0) {
    ++log_.problems_[kJobsWithoutCompletionTime];
    j.completed = last;
  }
  return j.submitted >= 0 && j.completed >= 0;
}

// The driver's activity between consecutive instants of the sorted `points`: waiting
// while tasks are out and a result comes next, scheduling while tasks are out
// otherwise, barrier processing after a stage's last result, scheduling while a stage
// or job is open; waiting when nothing is (idle between jobs: the application's own
// code, which the log does not record, is not the analyzed jobs' work).
std::vector<Builder::DriverRun> Builder::driver_runs(const std::vector<DriverPoint>& points) {
  std::vector<DriverRun> runs;
  int64_t out = 0, barrier = 0, open = 0;
  for (size_t i = 0; i < points.size();) {
    const int64_t ts = points[i].ts;
    for (; i < points.size() && points[i].ts == ts; ++i) {
      out += points[i].out;
      barrier += points[i].barrier;
      open += points[i].open;
    }
    if (i == points.size()) break;
    const int64_t next = points[i].ts;
    bool next_recv = false;
    for (size_t k = i; k < points.size() && points[k].ts == next; ++k)
      next_recv = next_recv || points[k].recv;
    ActivityType type;
    if (out > 0)
      type = next_recv ? ActivityType::waiting : ActivityType::scheduling;
    else if (barrier > 0)
      type = ActivityType::barrier_processing;
    else if (open > 0)
      type = ActivityType::scheduling;
    else
      type = ActivityType::waiting;
    if (!runs.empty() && runs.back().to == ts && runs.back().type == type)
      runs.back().to = next;
    else
      runs.push_back({ts, next, type});
  }
  return runs;
}

// Merges activity boundaries and messages (both sorted) by time into the trace.
void Builder::emit_driver_events(Trace& trace, std::vector<DriverRun> runs,
                                 const std::vector<Event>& messages) {
  // Idle since the previous epoch's last event (between jobs): waiting.
  int64_t first = runs.empty() ? std::numeric_limits<int64_t>::max() : runs.front().from;
  if (!messages.empty()) first = std::min(first, messages.front().ts);
  if (state_.driver_until != std::numeric_limits<int64_t>::min() && state_.driver_until < first &&
      first != std::numeric_limits<int64_t>::max()) {
    if (!runs.empty() && runs.front().from == first && runs.front().type == ActivityType::waiting)
      runs.front().from = state_.driver_until;
    else
      runs.insert(runs.begin(), DriverRun{state_.driver_until, first, ActivityType::waiting});
  }
  reserve_more(trace.events, messages.size() + 2 * runs.size());
  size_t m = 0;
  auto flush_messages = [&](int64_t up_to) {
    for (; m < messages.size() && messages[m].ts <= up_to; ++m) trace.events.push_back(messages[m]);
  };
  for (DriverRun& r : runs) {
    // Never before what an earlier epoch emitted (tasks ended after their job are
    // dropped above, so only activities can reach back).
    r.from = std::max(r.from, state_.driver_until);
    if (r.from >= r.to) continue;
    flush_messages(r.from);
    trace.events.push_back(local(kDriver, r.from, r.type, EventKind::start, std::nullopt));
    flush_messages(r.to);
    trace.events.push_back(local(kDriver, r.to, r.type, EventKind::end, std::nullopt));
  }
  flush_messages(std::numeric_limits<int64_t>::max());
  for (const DriverRun& r : runs) state_.driver_until = std::max(state_.driver_until, r.to);
  for (const Event& e : messages) state_.driver_until = std::max(state_.driver_until, e.ts);
}

// A stage's call site with the directories of its file dropped ("count at
// /home/u/jobs/power.py:191" -> "count at power.py:191"): long paths made every stage's
// label abbreviate to the same "stage …power.py:191" in tables.
namespace {
std::string short_call_site(const std::string& name) {
  const size_t at = name.rfind(" at ");
  const size_t from = at == std::string::npos ? 0 : at + 4;
  const size_t slash = name.rfind('/');
  if (slash == std::string::npos || slash < from) return name;
  return name.substr(0, from) + name.substr(slash + 1);
}
}  // namespace

// Names not emitted before: the driver, slots used for the first time, stages.
void Builder::name_workers_and_stages(Trace& trace) {
  if (!state_.driver_named) trace.worker_names[kDriver] = "driver";
  state_.driver_named = true;
  for (ExecutorRec& ex : log_.executors)
    for (size_t s = 0; s < ex.slots.size(); ++s)
      if (!ex.slots[s].named && ex.slots[s].busy_until != std::numeric_limits<int64_t>::min()) {
        // Local mode runs its tasks in the driver's JVM: its slots are the machine's.
        trace.worker_names[ex.slots[s].worker] =
            (ex.id == "driver" ? std::string("local") : "exec " + ex.id) + " slot " +
            std::to_string(s);
        ex.slots[s].named = true;
      }
  for (uint32_t s : log_.epoch_stages_) {
    const uint32_t id = log_.stages[s].id;
    if (!state_.named_ops.insert(id).second) continue;
    const std::string name = short_call_site(log_.stage_names[s]);
    trace.operator_names[id] = name.empty() ? "stage " + std::to_string(id)
                                            : "stage " + std::to_string(id) + " (" + name + ")";
  }
}

}  // namespace snailtrail::importers::spark::detail
