// Spark event log importer (docs/IMPORTERS.md "Spark").
//
// Two passes per epoch: the log is parsed line by line (simdjson DOM, one reused parser)
// into flat records of executors, jobs, stages and finished tasks; then tasks are placed
// on executor slots and the events of every slot and of the driver are generated, each
// worker's events contiguous and in time order (so no sort of the events is needed).
// An epoch ends when a job ends with nothing else open (no job, stage or started task):
// its events are final then, so a followed log (serve --follow) yields them at once.
// The batch importer is the same stream fed the whole log.
#include "importers/spark/spark_importer.hpp"

#include <dirent.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "importers/common/compressed.hpp"
#include "importers/common/lines.hpp"
#include "importers/importer.hpp"

namespace snailtrail::importers::spark {
namespace {

namespace dom = simdjson::dom;

constexpr int64_t kNsPerMs = 1'000'000;
constexpr uint32_t kDriver = 0;
// Why a log cannot be read: a codec we do not decode (by magic, else by the name Spark
// gives compressed logs: app-1234.lzf, ....lz4.inprogress), or a name promising a codec
// whose magic is missing. Empty if readable.
std::string unreadable_codec(std::string_view path, std::string_view head) {
  const Codec magic = codec_of(head);
  if (magic != Codec::none)
    return decodable(magic) ? "" : "compressed with " + std::string(codec_name(magic));
  const Codec named = codec_of_name(path);
  if (named == Codec::none || head.empty()) return "";
  if (!decodable(named)) return "compressed with " + std::string(codec_name(named));
  // Named like a compressed log but plain JSON (renamed, or decompressed in place): fine.
  size_t i = 0;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r')) ++i;
  if (i < head.size() && head[i] == '{') return "";
  return "named as " + std::string(codec_name(named)) +
         " but not starting with its magic bytes (corrupt, or another framing)";
}

// True if the first line is a JSON object whose "Event" names a Spark listener event.
bool looks_like_spark(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r' ||
                           text.front() == '\n'))
    text.remove_prefix(1);
  if (!text.starts_with("{")) return false;
  std::string_view line = text.substr(0, text.find('\n'));
  const size_t key = line.find("\"Event\"");
  if (key == std::string_view::npos) return false;
  std::string_view rest = line.substr(key + 7);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (!rest.starts_with(":")) return false;
  rest.remove_prefix(1);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  return rest.starts_with("\"SparkListener") || rest.starts_with("\"org.apache.spark.");
}

// ---------------------------------------------------------------------------------------
// Parsed records

struct TaskRec {
  int64_t launch = 0, finish = 0, getting_result = 0;  // ns; getting_result 0 = none
  // Executor-side durations, ns. fetch_wait, gc and shuffle_write lie within run.
  int64_t deserialize = 0, run = 0, serialize = 0, gc = 0, fetch_wait = 0, shuffle_write = 0;
  uint32_t executor = 0;  // index into executors
  uint32_t stage = 0;     // index into stages
  bool has_metrics = false;
  // Placement (filled by place_tasks).
  int64_t start = 0, end = 0;  // on the slot
  uint32_t slot = 0;           // index into the executor's slots
};

struct Slot {
  int64_t busy_until = std::numeric_limits<int64_t>::min();  // min: never used
  uint32_t worker = 0;
  bool named = false;  // its name was emitted
};

struct ExecutorRec {
  std::string id;
  uint32_t cores = 0;  // 0: unknown (no SparkListenerExecutorAdded): slots made on demand
  std::vector<Slot> slots;
};

struct StageRec {
  uint32_t id = 0;
  uint32_t attempt = 0;
  int64_t submitted = -1, completed = -1;  // ns; -1 = not in the log
  bool in_epoch = false;                   // touched since the last epoch ended
  bool drawn = false;                      // on the driver's timeline already
};

struct JobRec {
  int64_t submitted = -1, completed = -1;  // ns; -1 = not in the log (Spark 1.x: inferred)
  bool started = false, ended = false;     // its start / end event was seen
  std::vector<uint32_t> stage_ids;         // "Stage IDs" of the job start
};

// Recoverable problems, in the order they are reported.
enum Problem {
  kTruncatedLastLine,
  kTruncatedCompressedData,
  kTasksWithoutMetrics,
  kTasksWithoutEnd,
  kTasksFinishedBeforeLaunch,
  kBadGettingResultTime,
  kExecutorTimeExceedsTaskTime,
  kRunTimePartsExceedRunTime,
  kTasksBeyondExecutorCores,
  kExecutorsWithoutCores,
  kStagesWithoutCompletion,
  kBadStageTimes,
  kJobsWithoutEnd,
  kBadJobTimes,
  kZeroDurationTasks,
  kTasksEndedAfterTheirJob,
  kJobsWithoutSubmissionTime,
  kJobsWithoutCompletionTime,
  kProblemCount,
};
constexpr const char* kProblemNames[kProblemCount] = {
    "spark.truncated_last_line",
    "spark.truncated_compressed_data",
    "spark.tasks_without_metrics",
    "spark.tasks_without_end",
    "spark.tasks_finished_before_launch",
    "spark.bad_getting_result_time",
    "spark.executor_time_exceeds_task_time",
    "spark.run_time_parts_exceed_run_time",
    "spark.tasks_beyond_executor_cores",
    "spark.executors_without_cores",
    "spark.stages_without_completion",
    "spark.bad_stage_times",
    "spark.jobs_without_end",
    "spark.bad_job_times",
    "spark.zero_duration_tasks",
    "spark.tasks_ended_after_their_job",
    "spark.jobs_without_submission_time",
    "spark.jobs_without_completion_time",
};

// ---------------------------------------------------------------------------------------
// Pass 1: lines -> records

class LogParser {
 public:
  explicit LogParser(const std::string& source) : source_(source) {}

  // One line (without its '\n'); SIMDJSON_PADDING readable bytes must follow data[len].
  // `unterminated`: the last line of the input, without '\n' (maybe cut short).
  void line(const char* data, size_t len, uint64_t line_no, bool unterminated) {
    size_t b = 0, e = len;
    while (b < e && (data[b] == ' ' || data[b] == '\t' || data[b] == '\r')) ++b;
    while (e > b && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r')) --e;
    if (line_no == 1 && e - b >= 3 && std::memcmp(data + b, "\xEF\xBB\xBF", 3) == 0) b += 3;
    line_ = line_no;
    job_ended_ = false;
    if (b == e) return;
    dom::element doc;
    const auto err = parser_.parse(data + b, e - b, false).get(doc);
    if (err) {
      // A log still being written ends inside a line: keep what came before.
      if (unterminated && parsed_any_) {
        ++problems_[kTruncatedLastLine];
        return;
      }
      fail(std::string("invalid JSON: ") + simdjson::error_message(err));
    }
    event(doc);
    parsed_any_ = true;
  }

  // After a job's end with no job, stage or started task open: the epoch is complete.
  bool epoch_complete() const {
    if (!job_ended_ || !running_.empty()) return false;
    for (const JobRec& j : jobs)
      if (j.started && !j.ended) return false;
    for (uint32_t s : epoch_stages_)
      if (!stages[s].drawn && stages[s].submitted >= 0 && stages[s].completed < 0) return false;
    return true;
  }

  // Forgets the epoch's tasks and jobs (executors, slots and stages stay).
  void end_epoch() {
    tasks.clear();
    jobs.clear();
    job_index_.clear();
    for (uint32_t s : epoch_stages_) stages[s].in_epoch = false;
    epoch_stages_.clear();
  }

  std::string source_;
  uint64_t line_ = 0;
  uint64_t problems_[kProblemCount] = {};
  std::vector<TaskRec> tasks;  // of the epoch
  std::vector<ExecutorRec> executors;
  std::vector<StageRec> stages;
  std::vector<std::string> stage_names;  // by stage index
  std::vector<JobRec> jobs;              // of the epoch
  std::vector<uint32_t> epoch_stages_;   // stages touched in the epoch
  std::unordered_set<int64_t> running_;  // task ids started, not ended yet
  uint32_t task_cpus = 1;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(source_, "line " + std::to_string(line_), what);
  }

  // The value of `key`, or nullopt if absent or null.
  static std::optional<dom::element> field(dom::object obj, std::string_view key) {
    dom::element e;
    if (obj.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
    return e;
  }
  dom::object object_of(dom::element e, std::string_view key) const {
    dom::object o;
    if (e.get_object().get(o) != simdjson::SUCCESS)
      fail("\"" + std::string(key) + "\" must be an object");
    return o;
  }
  dom::object need_object(dom::object obj, std::string_view key) const {
    auto e = field(obj, key);
    if (!e) fail("missing \"" + std::string(key) + "\"");
    return object_of(*e, key);
  }
  int64_t int_of(dom::element e, std::string_view key) const {
    int64_t v = 0;
    if (e.get_int64().get(v) != simdjson::SUCCESS)
      fail("\"" + std::string(key) + "\" must be an integer in the int64 range");
    return v;
  }
  int64_t need_int(dom::object obj, std::string_view key) const {
    auto e = field(obj, key);
    if (!e) fail("missing \"" + std::string(key) + "\"");
    return int_of(*e, key);
  }
  std::optional<int64_t> opt_int(dom::object obj, std::string_view key) const {
    auto e = field(obj, key);
    if (!e) return std::nullopt;
    return int_of(*e, key);
  }
  int64_t need_nonneg(dom::object obj, std::string_view key) const {
    const int64_t v = need_int(obj, key);
    if (v < 0) fail("\"" + std::string(key) + "\" must not be negative");
    return v;
  }
  uint32_t need_u32(dom::object obj, std::string_view key) const {
    const int64_t v = need_int(obj, key);
    if (v < 0 || v > int64_t{UINT32_MAX}) fail("\"" + std::string(key) + "\" is out of range");
    return static_cast<uint32_t>(v);
  }
  std::string_view need_string(dom::object obj, std::string_view key) const {
    auto e = field(obj, key);
    std::string_view s;
    if (!e) fail("missing \"" + std::string(key) + "\"");
    if (e->get_string().get(s) != simdjson::SUCCESS)
      fail("\"" + std::string(key) + "\" must be a string");
    return s;
  }
  // Milliseconds since the epoch (or a duration in ms) as nanoseconds.
  int64_t ms_to_ns(int64_t ms, std::string_view key) const {
    if (ms < 0) fail("\"" + std::string(key) + "\" must not be negative");
    if (ms > std::numeric_limits<int64_t>::max() / kNsPerMs)
      fail("\"" + std::string(key) + "\" is too large for nanoseconds in int64");
    return ms * kNsPerMs;
  }
  int64_t need_ms(dom::object obj, std::string_view key) const {
    return ms_to_ns(need_int(obj, key), key);
  }
  std::optional<int64_t> opt_ms(dom::object obj, std::string_view key) const {
    auto v = opt_int(obj, key);
    if (!v) return std::nullopt;
    return ms_to_ns(*v, key);
  }

  void event(dom::element doc) {
    dom::object obj;
    if (doc.get_object().get(obj) != simdjson::SUCCESS) fail("not a JSON object");
    const std::string_view name = need_string(obj, "Event");
    if (name == "SparkListenerTaskEnd") {
      task_end(obj);
    } else if (name == "SparkListenerTaskStart") {
      running_.insert(need_int(need_object(obj, "Task Info"), "Task ID"));
    } else if (name == "SparkListenerStageSubmitted" || name == "SparkListenerStageCompleted") {
      stage_event(need_object(obj, "Stage Info"), name == "SparkListenerStageCompleted");
    } else if (name == "SparkListenerJobStart") {
      // Spark 1.x logs have neither "Submission Time" nor, on the end, "Completion Time":
      // they are inferred from the job's stages (Builder).
      JobRec& j = job(need_int(obj, "Job ID"));
      j.started = true;
      if (auto t = opt_ms(obj, "Submission Time")) j.submitted = *t;
      if (auto ids = field(obj, "Stage IDs")) {
        dom::array a;
        if (ids->get_array().get(a) != simdjson::SUCCESS) fail("\"Stage IDs\" must be an array");
        for (dom::element e : a) {
          int64_t v = 0;
          if (e.get_int64().get(v) != simdjson::SUCCESS || v < 0 || v > UINT32_MAX)
            fail("\"Stage IDs\" must hold non-negative integers");
          j.stage_ids.push_back(static_cast<uint32_t>(v));
        }
      }
    } else if (name == "SparkListenerJobEnd") {
      JobRec& j = job(need_int(obj, "Job ID"));
      j.ended = true;
      if (auto t = opt_ms(obj, "Completion Time")) j.completed = *t;
      job_ended_ = true;
    } else if (name == "SparkListenerExecutorAdded") {
      const std::string_view id = need_string(obj, "Executor ID");
      const uint32_t cores = need_u32(need_object(obj, "Executor Info"), "Total Cores");
      ExecutorRec& ex = executors[executor(id)];
      ex.cores = std::max(ex.cores, cores);  // re-added: keep the larger
    } else if (name == "SparkListenerEnvironmentUpdate") {
      if (auto props = field(obj, "Spark Properties")) {
        dom::object p = object_of(*props, "Spark Properties");
        if (auto cpus = field(p, "spark.task.cpus")) {
          std::string_view s;
          uint32_t v = 0;
          if (cpus->get_string().get(s) != simdjson::SUCCESS ||
              std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc() || v == 0)
            fail("\"spark.task.cpus\" must be a positive integer string");
          task_cpus = v;
        }
      }
    }
    // Other events (block manager, SQL, metrics updates, ...) carry nothing we model.
  }

  uint32_t executor(std::string_view id) {
    auto it = executor_index_.find(id);  // heterogeneous: no string built per task
    if (it != executor_index_.end()) return it->second;
    const auto index = static_cast<uint32_t>(executors.size());
    executors.push_back(ExecutorRec{std::string(id), 0, {}});
    executor_index_.emplace(std::string(id), index);
    return index;
  }

  uint32_t stage(uint32_t id, uint32_t attempt) {
    const uint64_t key = (uint64_t{id} << 32) | attempt;
    auto [it, inserted] = stage_index_.try_emplace(key, static_cast<uint32_t>(stages.size()));
    if (inserted) {
      stages.push_back(StageRec{id, attempt});
      stage_names.emplace_back();
    }
    StageRec& st = stages[it->second];
    if (!st.in_epoch) {
      st.in_epoch = true;
      epoch_stages_.push_back(it->second);
    }
    return it->second;
  }

  JobRec& job(int64_t id) {
    auto [it, inserted] = job_index_.try_emplace(id, static_cast<uint32_t>(jobs.size()));
    if (inserted) jobs.emplace_back();
    return jobs[it->second];
  }

  void stage_event(dom::object info, bool completed) {
    const uint32_t id = need_u32(info, "Stage ID");
    const auto attempt = field(info, "Stage Attempt ID") ? need_u32(info, "Stage Attempt ID") : 0;
    const uint32_t s = stage(id, attempt);
    if (auto name = field(info, "Stage Name")) {
      std::string_view n;
      if (name->get_string().get(n) == simdjson::SUCCESS) stage_names[s] = n;
    }
    if (auto t = opt_ms(info, "Submission Time")) stages[s].submitted = *t;
    if (completed) {
      if (auto t = opt_ms(info, "Completion Time")) stages[s].completed = *t;
    }
  }

  void task_end(dom::object obj) {
    TaskRec t;
    const uint32_t stage_id = need_u32(obj, "Stage ID");
    const uint32_t attempt = field(obj, "Stage Attempt ID") ? need_u32(obj, "Stage Attempt ID") : 0;
    t.stage = stage(stage_id, attempt);
    dom::object info = need_object(obj, "Task Info");
    running_.erase(need_int(info, "Task ID"));
    t.executor = executor(need_string(info, "Executor ID"));
    t.launch = need_ms(info, "Launch Time");
    t.finish = need_ms(info, "Finish Time");
    t.getting_result = opt_ms(info, "Getting Result Time").value_or(0);
    if (auto m = field(obj, "Task Metrics")) {
      dom::object metrics = object_of(*m, "Task Metrics");
      t.has_metrics = true;
      t.deserialize =
          ms_to_ns(need_nonneg(metrics, "Executor Deserialize Time"), "Executor Deserialize Time");
      t.run = ms_to_ns(need_nonneg(metrics, "Executor Run Time"), "Executor Run Time");
      t.serialize =
          ms_to_ns(need_nonneg(metrics, "Result Serialization Time"), "Result Serialization Time");
      t.gc = ms_to_ns(need_nonneg(metrics, "JVM GC Time"), "JVM GC Time");
      // Absent in Spark 1.x for tasks without shuffle.
      if (auto r = field(metrics, "Shuffle Read Metrics"))
        t.fetch_wait =
            ms_to_ns(need_nonneg(object_of(*r, "Shuffle Read Metrics"), "Fetch Wait Time"),
                     "Fetch Wait Time");
      if (auto w = field(metrics, "Shuffle Write Metrics"))
        t.shuffle_write =
            need_nonneg(object_of(*w, "Shuffle Write Metrics"), "Shuffle Write Time");  // ns
    }
    tasks.push_back(t);
  }

  dom::parser parser_;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> executor_index_;
  std::unordered_map<uint64_t, uint32_t> stage_index_;
  std::unordered_map<int64_t, uint32_t> job_index_;
  bool parsed_any_ = false;
  bool job_ended_ = false;  // by the current line
};

// ---------------------------------------------------------------------------------------
// Pass 2: placement and events

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

// What lasts from one epoch to the next.
struct StreamState {
  uint32_t next_worker = kDriver + 1;
  int64_t task_base = 0;  // tasks of earlier epochs: correlators go on from there
  int64_t driver_until = std::numeric_limits<int64_t>::min();  // the driver's last event
  std::unordered_set<uint32_t> named_ops;
  std::vector<bool> unsized_counted;  // per executor: counted as without cores
  bool driver_named = false;
};

// Room for `extra` more events; grows geometrically, as epochs append again and again.
void reserve_more(BigVector<Event>& v, size_t extra) {
  if (v.capacity() - v.size() < extra) v.reserve(std::max(v.size() + extra, 2 * v.capacity()));
}

class Builder {
 public:
  Builder(LogParser& log, const SparkOptions& options, StreamState& state)
      : log_(log), options_(options), state_(state) {}

  // Appends the epoch's events and new names to `out` and forgets the epoch. `last`: the
  // end of the log, so tasks still started are counted as never ending.
  void build(Trace& out, bool last) {
    if (last) log_.problems_[kTasksWithoutEnd] += log_.running_.size();
    shape_tasks();
    place_tasks();
    emit_slots(out);
    emit_driver(out);
    name_workers_and_stages(out);
    state_.task_base += static_cast<int64_t>(log_.tasks.size());
    log_.end_epoch();
  }

 private:
  // Durations on the slot and the split of the scheduler delay; drops impossible tasks.
  void shape_tasks() {
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
  static void end_before_finish(TaskRec& t) {
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
  void place_tasks() {
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

  static Event local(uint32_t worker, int64_t ts, ActivityType type, EventKind kind,
                     std::optional<uint32_t> op) {
    Event e;
    e.ts = ts;
    e.worker = worker;
    e.activity = type;
    e.kind = kind;
    if (op) {
      e.op = *op;
      e.flags |= kHasOperator;
    }
    return e;
  }
  static Event message(uint32_t worker, int64_t ts, EventKind kind, uint32_t remote,
                       int64_t correlator) {
    Event e;
    e.ts = ts;
    e.worker = worker;
    e.activity = ActivityType::control_message;
    e.kind = kind;
    e.remote = remote;
    e.correlator = correlator;
    e.flags = kHasRemote | kHasCorrelator;
    return e;
  }

  void emit_slots(Trace& trace) {
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

  uint32_t worker_of(const TaskRec& t) const {
    return log_.executors[t.executor].slots[t.slot].worker;
  }

  // The driver's timeline. At every instant it knows how many tasks are out (launched, no
  // result yet), whether a stage has all its results but is not complete yet (the
  // barrier), and whether a job or stage is open. Between consecutive instants it is:
  //   tasks out and the next instant receives a result -> waiting (Assumption 2)
  //   tasks out otherwise                              -> scheduling (it launched or
  //                                                       submitted work on its own)
  //   no task out, a stage at its barrier              -> barrier_processing
  //   no task out, a job or stage open                 -> scheduling
  //   nothing open                                     -> no activity: the application's
  //                                                       own code; the PAG fills the gap
  // A change of the driver's state at one instant: tasks out (launched, result not yet
  // back), stages past their last result, stages or jobs open; `recv` marks a result.
  struct DriverPoint {
    int64_t ts;
    int32_t out = 0, barrier = 0, open = 0;
    bool recv = false;
  };
  // An activity run [from, to) of one type, merged when consecutive and equal.
  struct DriverRun {
    int64_t from, to;
    ActivityType type;
  };
  // Per stage: the first task launch and the last task result (-1: none).
  struct StageTaskSpan {
    std::vector<int64_t> first_launch, last_result;
  };

  // The driver's timeline: launch/result messages to and from the slots, and activities
  // (scheduling, waiting for results, barrier processing) from the state changes of its
  // tasks, stages and jobs.
  void emit_driver(Trace& trace) {
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
  StageTaskSpan task_points(std::vector<DriverPoint>& points, std::vector<Event>& messages) {
    auto& tasks = log_.tasks;
    StageTaskSpan spans{std::vector<int64_t>(log_.stages.size(), -1),
                        std::vector<int64_t>(log_.stages.size(), -1)};
    for (uint32_t i = 0; i < tasks.size(); ++i) {
      const TaskRec& t = tasks[i];
      points.push_back({t.launch, +1, 0, 0, false});
      points.push_back({t.finish, -1, 0, 0, true});
      messages.push_back(
          message(kDriver, t.launch, EventKind::send, worker_of(t), 2 * (state_.task_base + i)));
      messages.push_back(message(kDriver, t.finish, EventKind::recv, worker_of(t),
                                 2 * (state_.task_base + i) + 1));
      int64_t& first = spans.first_launch[t.stage];
      if (first < 0 || t.launch < first) first = t.launch;
      spans.last_result[t.stage] = std::max(spans.last_result[t.stage], t.finish);
    }
    return spans;
  }

  // Each stage of the epoch not drawn before: open from submission (or first launch) to
  // completion (or last result), a barrier from its last result to its completion.
  void stage_points(std::vector<DriverPoint>& points, const StageTaskSpan& spans) {
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
  void job_points(std::vector<DriverPoint>& points, const StageTaskSpan& spans) {
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
  bool job_span_from_stages(JobRec& j, const StageTaskSpan& spans) {
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
  // or job is open; nothing when idle.
  static std::vector<DriverRun> driver_runs(const std::vector<DriverPoint>& points) {
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
      std::optional<ActivityType> type;
      if (out > 0)
        type = next_recv ? ActivityType::waiting : ActivityType::scheduling;
      else if (barrier > 0)
        type = ActivityType::barrier_processing;
      else if (open > 0)
        type = ActivityType::scheduling;
      if (!type) continue;
      if (!runs.empty() && runs.back().to == ts && runs.back().type == *type)
        runs.back().to = next;
      else
        runs.push_back({ts, next, *type});
    }
    return runs;
  }

  // Merges activity boundaries and messages (both sorted) by time into the trace.
  void emit_driver_events(Trace& trace, std::vector<DriverRun> runs,
                          const std::vector<Event>& messages) {
    reserve_more(trace.events, messages.size() + 2 * runs.size());
    size_t m = 0;
    auto flush_messages = [&](int64_t up_to) {
      for (; m < messages.size() && messages[m].ts <= up_to; ++m)
        trace.events.push_back(messages[m]);
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

  // Names not emitted before: the driver, slots used for the first time, stages.
  void name_workers_and_stages(Trace& trace) {
    if (!state_.driver_named) trace.worker_names[kDriver] = "driver";
    state_.driver_named = true;
    for (ExecutorRec& ex : log_.executors)
      for (size_t s = 0; s < ex.slots.size(); ++s)
        if (!ex.slots[s].named && ex.slots[s].busy_until != std::numeric_limits<int64_t>::min()) {
          trace.worker_names[ex.slots[s].worker] = "exec " + ex.id + " slot " + std::to_string(s);
          ex.slots[s].named = true;
        }
    for (uint32_t s : log_.epoch_stages_) {
      const uint32_t id = log_.stages[s].id;
      if (!state_.named_ops.insert(id).second) continue;
      const std::string& name = log_.stage_names[s];
      trace.operator_names[id] = name.empty() ? "stage " + std::to_string(id)
                                              : "stage " + std::to_string(id) + " (" + name + ")";
    }
  }

  LogParser& log_;
  SparkOptions options_;
  StreamState& state_;
  std::vector<uint32_t> placement_order_;
};

// The codec's explanation, for logs we cannot decode.
[[noreturn]] void unsupported(const std::string& source, const std::string& why) {
  throw TraceError(source, "compression",
                   "this Spark event log is " + why +
                       ": snailtrail reads plain, zstd, lz4 (Spark's LZ4Block), snappy "
                       "(snappy-java) and gzip logs; decompress it, or have Spark write one of "
                       "those (spark.eventLog.compression.codec)");
}

// Lines -> records -> epochs, from plain or compressed bytes (recognised by the magic
// number, decoded as they arrive). A rolling log's parts go through one stream, each part
// with its own codec (next_part).
class SparkStream final : public StreamImporter {
 public:
  SparkStream(const std::string& source, const SparkOptions& options)
      : log_(source), options_(options) {
    if (options.launch_weight == 0 && options.result_weight == 0)
      throw std::invalid_argument("the scheduler delay split needs a non-zero part");
  }

  void feed(std::string_view bytes, Trace& out) override {
    if (!started_) {
      // The first bytes tell plain from compressed.
      head_.append(bytes);
      if (head_.size() < 16) return;
      start(out);
      return;
    }
    input(bytes, out);
  }

  // Ends one part of a rolling log (its last line, its codec) and starts the next, named
  // `next_source` in errors.
  void next_part(const std::string& next_source, Trace& out) {
    end_part(out);
    lines_.finish([&](const char* data, size_t len, uint64_t line_no) {
      log_.line(data, len, line_no, true);
      if (log_.epoch_complete()) Builder(log_, options_, state_).build(out, false);
    });
    lines_ = LineSplitter{};
    log_.source_ = next_source;
    started_ = false;
    decoder_.reset();
  }

  void finish(Trace& out) override {
    end_part(out);
    lines_.finish([&](const char* data, size_t len, uint64_t line_no) {
      log_.line(data, len, line_no, true);
    });
    Builder(log_, options_, state_).build(out, true);
  }

  std::vector<std::pair<std::string, uint64_t>> diagnostics() const override {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (int p = 0; p < kProblemCount; ++p)
      if (log_.problems_[p] > 0) out.emplace_back(kProblemNames[p], log_.problems_[p]);
    return out;
  }

 private:
  void end_part(Trace& out) {
    if (!started_) start(out);  // a part under 16 bytes
    // A log still being written ends inside a frame or block: what decoded is used.
    if (decoder_ && decoder_->cut()) ++log_.problems_[kTruncatedCompressedData];
  }

  void start(Trace& out) {
    started_ = true;
    const Codec codec = codec_of(head_);
    if (codec != Codec::none) {
      if (!decodable(codec))
        unsupported(log_.source_, "compressed with " + std::string(codec_name(codec)));
      decoder_ = std::make_unique<Decoder>(codec, log_.source_);
    }
    const std::string head = std::move(head_);
    head_.clear();
    input(head, out);
  }

  void input(std::string_view bytes, Trace& out) {
    if (!decoder_) return lines(bytes, out);
    decoder_->feed(bytes, [&](std::string_view decoded) { lines(decoded, out); });
  }

  void lines(std::string_view bytes, Trace& out) {
    lines_.feed(bytes, [&](const char* data, size_t len, uint64_t line_no) {
      log_.line(data, len, line_no, false);
      if (log_.epoch_complete()) Builder(log_, options_, state_).build(out, false);
    });
  }

  LogParser log_;
  SparkOptions options_;
  StreamState state_;
  LineSplitter lines_;
  bool started_ = false;
  std::string head_;  // the first bytes, until there are enough to sniff
  std::unique_ptr<Decoder> decoder_;
};

// The whole log through the stream.
Trace parse_all(std::string_view text, const std::string& source, const SparkOptions& options) {
  SparkStream stream(source, options);
  Trace trace;
  trace.source = source;
  trace.format = TraceFormat::snail;  // events are generated: "record N" locations
  stream.feed(text, trace);
  stream.finish(trace);
  trace.import_diagnostics = stream.diagnostics();
  return trace;
}

}  // namespace

SparkOptions parse_delay_split(std::string_view text) {
  const size_t colon = text.find(':');
  SparkOptions o;
  auto number = [&](std::string_view s, uint32_t& v) {
    return !s.empty() &&
           std::from_chars(s.data(), s.data() + s.size(), v).ptr == s.data() + s.size();
  };
  if (colon == std::string_view::npos || !number(text.substr(0, colon), o.launch_weight) ||
      !number(text.substr(colon + 1), o.result_weight) ||
      (o.launch_weight == 0 && o.result_weight == 0))
    throw std::invalid_argument(
        "--spark-delay-split must be LAUNCH:RESULT with non-negative "
        "integers, not both 0 (e.g. 1:2), not \"" +
        std::string(text) + "\"");
  return o;
}

Trace parse_event_log(std::string_view text, const std::string& source,
                      const SparkOptions& options) {
  return parse_all(text, source, options);
}

std::vector<std::string> rolling_parts(const std::string& dir) {
  // events_<n>_<appId>[.codec] (Spark 3 rolling event logs, EventLogFileWriters.scala);
  // appstatus_* only says whether the application has finished.
  std::vector<std::pair<uint64_t, std::string>> parts;
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw TraceError(dir, "cannot open", std::strerror(errno));
  while (const dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (!name.starts_with("events_")) continue;
    std::string_view rest = name.substr(7);
    uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (ec != std::errc() || ptr == rest.data() || ptr == rest.data() + rest.size() || *ptr != '_')
      continue;
    parts.emplace_back(n, std::string(name));
  }
  ::closedir(d);
  std::sort(parts.begin(), parts.end());
  for (size_t i = 1; i < parts.size(); ++i)
    if (parts[i].first == parts[i - 1].first)
      throw TraceError(dir, "rolling event log",
                       "two parts numbered " + std::to_string(parts[i].first) + ": " +
                           parts[i - 1].second + " and " + parts[i].second);
  std::vector<std::string> out;
  for (auto& [n, name] : parts) out.push_back(dir + (dir.ends_with('/') ? "" : "/") + name);
  return out;
}

bool is_rolling_dir(const std::string& path) {
  struct stat st {};
  if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  std::string_view base(path);
  while (base.ends_with('/')) base.remove_suffix(1);
  base = base.substr(base.rfind('/') == std::string_view::npos ? 0 : base.rfind('/') + 1);
  if (base.starts_with("eventlog_v2_")) return true;
  try {
    return !rolling_parts(path).empty();
  } catch (const TraceError&) {
    return false;
  }
}

Trace read_event_log(const std::string& path, const SparkOptions& options) {
  if (is_rolling_dir(path)) {
    const std::vector<std::string> parts = rolling_parts(path);
    if (parts.empty())
      throw TraceError(path, "rolling event log", "no events_<n>_<appId> files in the directory");
    SparkStream stream(parts[0], options);
    Trace trace;
    trace.source = path;
    trace.format = TraceFormat::snail;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) stream.next_part(parts[i], trace);
      const std::string bytes = read_file_bytes(parts[i]);
      const std::string why = unreadable_codec(parts[i], bytes.substr(0, 16));
      if (!why.empty()) unsupported(parts[i], why);
      stream.feed(bytes, trace);
    }
    stream.finish(trace);
    trace.import_diagnostics = stream.diagnostics();
    return trace;
  }
  const std::string bytes = read_file_bytes(path);
  const std::string source = path == "-" ? "<stdin>" : path;
  // By name too: a log whose name promises a codec must carry its magic.
  const std::string why = unreadable_codec(path, std::string_view(bytes).substr(0, 16));
  if (!why.empty()) unsupported(source, why);
  return parse_all(bytes, source, options);
}

std::unique_ptr<StreamImporter> make_stream(const std::string& source,
                                            const ImportOptions& options) {
  return std::make_unique<SparkStream>(source, parse_delay_split(options.spark_delay_split));
}

Trace import(const std::string& path, const ImportOptions& options) {
  return read_event_log(path, parse_delay_split(options.spark_delay_split));
}

int sniff(std::string_view path, std::string_view head) {
  const Codec codec = codec_of(head);
  if (decodable(codec))
    // The head is larger for compressed files (importer.cpp): a whole first block.
    return looks_like_spark(decode_prefix(codec, head, 4096)) ? 95 : 0;
  if (looks_like_spark(head)) return 90;
  const bool spark_name = path.find("app-") != std::string_view::npos ||
                          path.find("application_") != std::string_view::npos ||
                          path.find("local-") != std::string_view::npos ||
                          path.find("events_") != std::string_view::npos;
  if (codec != Codec::none && spark_name) return 60;  // to explain the codec
  if (codec == Codec::none && codec_of_name(path) != Codec::none && spark_name &&
      !unreadable_codec(path, head).empty())
    return 60;
  return 0;
}

namespace {
void check_delay_split(const std::string& value) {
  parse_delay_split(value);
}
constexpr ImportOption kOptions[] = {
    {"--spark-delay-split", "share of each task's scheduler delay on its launch:result messages",
     &ImportOptions::spark_delay_split, check_delay_split},
};
}  // namespace

const Importer& descriptor() {
  static const Importer d{
      .name = "spark",
      .description =
          "Spark event log (JSON lines; plain, zstd, lz4, snappy or gzip; or a "
          "rolling eventlog_v2_* directory)",
      .sniff = sniff,
      .read = import,
      .stream = make_stream,
      .options = kOptions,
      .whole_window = true,
      .window_reason = "a Spark application is a batch job",
  };
  return d;
}

}  // namespace snailtrail::importers::spark
