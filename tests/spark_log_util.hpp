// Spark event log lines for tests: hand-made edge cases and generated logs of a small
// Spark-like scheduler (tests/test_import_spark.cpp, tests/test_serve.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace snailtrail::testing::spark_log {

// Lines for hand-made edge cases (Spark 1.6 style: no attempt ids, no shuffle metrics).
inline std::string task_end(int stage, int id, const std::string& executor, int64_t launch_ms,
                            int64_t finish_ms, const std::string& metrics) {
  return "{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":" + std::to_string(stage) +
         ",\"Task Type\":\"ResultTask\",\"Task End Reason\":{\"Reason\":\"Success\"},"
         "\"Task Info\":{\"Task ID\":" +
         std::to_string(id) +
         ",\"Index\":0,\"Attempt\":0,\"Launch Time\":" + std::to_string(launch_ms) +
         ",\"Executor ID\":\"" + executor +
         "\",\"Host\":\"h\",\"Locality\":\"ANY\",\"Speculative\":false,\"Getting Result "
         "Time\":0,\"Finish Time\":" +
         std::to_string(finish_ms) + ",\"Failed\":false,\"Accumulables\":[]}" +
         (metrics.empty() ? "" : ",\"Task Metrics\":" + metrics) + "}\n";
}
inline std::string metrics(int deser, int run, int ser, int gc = 0) {
  return "{\"Host Name\":\"h\",\"Executor Deserialize Time\":" + std::to_string(deser) +
         ",\"Executor Run Time\":" + std::to_string(run) +
         ",\"Result Size\":1,\"JVM GC Time\":" + std::to_string(gc) +
         ",\"Result Serialization Time\":" + std::to_string(ser) +
         ",\"Memory Bytes Spilled\":0,\"Disk Bytes Spilled\":0}";
}
inline std::string executor_added(const std::string& id, int cores) {
  return "{\"Event\":\"SparkListenerExecutorAdded\",\"Timestamp\":0,\"Executor ID\":\"" + id +
         "\",\"Executor Info\":{\"Host\":\"h\",\"Total Cores\":" + std::to_string(cores) +
         ",\"Log Urls\":{}}}\n";
}

inline std::string task_start(int stage, int id, const std::string& executor, int64_t launch_ms) {
  return "{\"Event\":\"SparkListenerTaskStart\",\"Stage ID\":" + std::to_string(stage) +
         ",\"Task Info\":{\"Task ID\":" + std::to_string(id) +
         ",\"Launch Time\":" + std::to_string(launch_ms) + ",\"Executor ID\":\"" + executor +
         "\"}}\n";
}

// ---------------------------------------------------------------------------------------
// Generated larger logs: a small Spark-like scheduler (cores freed on results, tasks
// launched on the free core with a random delay) writes the log: a job of three stages
// after another. With `task_starts`, every task also has its TaskStart line, and a
// stage's lines are in time order as Spark writes them (starts at launch, ends at finish);
// without, TaskEnd lines come in launch order.

struct GeneratedLog {
  std::string text;
  size_t tasks = 0;
};

inline GeneratedLog generate_log(int executors, int cores, int stages, int tasks_per_stage,
                                 uint64_t seed, bool task_starts = false) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  GeneratedLog g;
  const int64_t t0 = 1'700'000'000'000;
  for (int e = 0; e < executors; ++e) g.text += executor_added(std::to_string(e + 1), cores);
  std::vector<int64_t> core_free(static_cast<size_t>(executors * cores), t0);
  int64_t now = t0 + 5;
  int task_id = 0;
  for (int s = 0; s < stages; ++s) {
    if (s % 3 == 0)
      g.text += "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":" + std::to_string(s / 3) +
                ",\"Submission Time\":" + std::to_string(now) + "}\n";
    const int64_t submitted = now + uniform(0, 3);
    g.text += "{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{\"Stage ID\":" +
              std::to_string(s) +
              ",\"Stage Attempt ID\":0,\"Stage Name\":\"s\",\"Number of "
              "Tasks\":1,\"Submission Time\":" +
              std::to_string(submitted) + "}}\n";
    int64_t last = submitted;
    std::vector<std::pair<int64_t, std::string>> timed;  // (ms, line) with task_starts
    for (int k = 0; k < tasks_per_stage; ++k) {
      // The core that frees first takes the next task.
      auto it = std::min_element(core_free.begin(), core_free.end());
      const int64_t launch = std::max(*it, submitted) + uniform(0, 2);
      const int deser = uniform(0, 3), run = uniform(1, 40), ser = uniform(0, 2);
      const int64_t finish = launch + deser + run + ser + uniform(0, 5);
      *it = finish;
      const auto executor = static_cast<int>(it - core_free.begin()) / cores;
      const std::string end = task_end(s, task_id, std::to_string(executor + 1), launch, finish,
                                       metrics(deser, run, ser, uniform(0, run / 4)));
      if (task_starts) {
        timed.emplace_back(2 * launch + 1,
                           task_start(s, task_id, std::to_string(executor + 1), launch));
        timed.emplace_back(2 * finish, end);  // at equal ms, an end before a start
      } else {
        g.text += end;
      }
      ++task_id;
      last = std::max(last, finish);
    }
    std::stable_sort(timed.begin(), timed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [t, line] : timed) g.text += line;
    g.text += "{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":{\"Stage ID\":" +
              std::to_string(s) +
              ",\"Stage Attempt ID\":0,\"Submission Time\":" + std::to_string(submitted) +
              ",\"Completion Time\":" + std::to_string(last + 1) + "}}\n";
    now = last + 1 + uniform(0, 4);
    if (s % 3 == 2 || s + 1 == stages)
      g.text += "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":" + std::to_string(s / 3) +
                ",\"Completion Time\":" + std::to_string(now) + "}\n";
    std::fill(core_free.begin(), core_free.end(), now);
  }
  g.tasks = static_cast<size_t>(task_id);
  return g;
}

}  // namespace snailtrail::testing::spark_log
