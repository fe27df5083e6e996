// Spark importer, pass 1 (docs/IMPORTERS.md "Spark"): event log lines -> flat records,
// one simdjson DOM parser reused for every line.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "importers/spark/spark_importer.hpp"
#include "importers/spark/spark_records.hpp"

namespace snailtrail::importers::spark::detail {

namespace dom = simdjson::dom;

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
  // SparkListenerApplicationStart / ApplicationEnd "Timestamp" (ns; -1: not seen).
  int64_t app_start = -1, app_end = -1;
  TaskTable* table = nullptr;  // SparkOptions::table

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
    } else if (name == "SparkListenerApplicationStart") {
      if (auto t = opt_ms(obj, "Timestamp")) app_start = *t;
    } else if (name == "SparkListenerApplicationEnd") {
      if (auto t = opt_ms(obj, "Timestamp")) app_end = *t;
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
      if (table) table->stages.push_back(StageRow{id, attempt, {}, {}});
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
    if (table) stage_row(info, table->stages[s]);
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
    if (table) table->tasks.push_back(task_row(obj, t, stage_id, attempt));
  }

  // The stage page's numbers of one task (TaskTable); absent metrics count as 0.
  TaskRow task_row(dom::object obj, const TaskRec& t, uint32_t stage_id, uint32_t attempt) const {
    TaskRow r;
    r.stage_id = stage_id;
    r.attempt = attempt;
    r.has_metrics = t.has_metrics;
    r.duration_ns = t.has_metrics ? t.run : std::max<int64_t>(0, t.finish - t.launch);
    r.gc_ns = t.gc;
    if (auto reason = field(obj, "Task End Reason")) {
      dom::object o;
      std::string_view why;
      if (reason->get_object().get(o) == simdjson::SUCCESS && field(o, "Reason") &&
          o["Reason"].get_string().get(why) == simdjson::SUCCESS)
        r.failed = why != "Success";
    }
    dom::object info = need_object(obj, "Task Info");
    for (std::string_view key : {"Failed", "Killed"}) {
      bool b = false;
      if (auto e = field(info, key); e && e->get_bool().get(b) == simdjson::SUCCESS && b)
        r.failed = true;
    }
    auto m = field(obj, "Task Metrics");
    if (!m) return r;
    dom::object metrics = object_of(*m, "Task Metrics");
    auto bytes = [&](dom::object o, std::string_view key) {
      return field(o, key) ? need_nonneg(o, key) : 0;
    };
    r.memory_spill_bytes = bytes(metrics, "Memory Bytes Spilled");
    r.disk_spill_bytes = bytes(metrics, "Disk Bytes Spilled");
    if (auto rd = field(metrics, "Shuffle Read Metrics")) {
      dom::object o = object_of(*rd, "Shuffle Read Metrics");
      r.shuffle_read_bytes = bytes(o, "Remote Bytes Read") + bytes(o, "Local Bytes Read");
    }
    if (auto w = field(metrics, "Shuffle Write Metrics"))
      r.shuffle_write_bytes =
          bytes(object_of(*w, "Shuffle Write Metrics"), "Shuffle Bytes Written");
    return r;
  }

  void stage_row(dom::object info, StageRow& row) const {
    if (auto name = field(info, "Stage Name")) {
      std::string_view n;
      if (name->get_string().get(n) == simdjson::SUCCESS) row.name = n;
    }
    auto ids = field(info, "Parent IDs");
    if (!ids) return;
    dom::array a;
    if (ids->get_array().get(a) != simdjson::SUCCESS) fail("\"Parent IDs\" must be an array");
    row.parents.clear();
    for (dom::element e : a) {
      int64_t v = 0;
      if (e.get_int64().get(v) != simdjson::SUCCESS || v < 0 || v > UINT32_MAX)
        fail("\"Parent IDs\" must hold non-negative integers");
      row.parents.push_back(static_cast<uint32_t>(v));
    }
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

}  // namespace snailtrail::importers::spark::detail
