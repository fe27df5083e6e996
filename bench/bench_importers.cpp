// Import speed of the JSON importers (issue #6: >= 1 M events/s each): Spark event logs,
// Chrome trace events (PyTorch profiler shape), OTLP/JSON (collector file exporter) and
// Jaeger JSON, each on a generated file of realistic shape with over 1 M resulting
// events. Files are generated once into a temporary directory (deleted at exit) and
// read through import_trace, as `snailtrail convert` does (file in the page cache).
// Reports items_per_second = snailtrail events produced per second, plus input
// records/s and MB/s.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "importers/importer.hpp"

namespace {

using namespace snailtrail;
namespace fs = std::filesystem;

struct GeneratedFile {
  fs::path path;
  uint64_t records = 0;  // tasks, slices, spans
  uint64_t bytes = 0;
};

class TempDir {
 public:
  TempDir() : dir_(fs::temp_directory_path() / fmt::format("snailtrail-bench-imp-{}", getpid())) {
    fs::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

const fs::path& temp_dir() {
  static TempDir dir;
  return dir.dir();
}

GeneratedFile write(const std::string& name, const std::string& text, uint64_t records) {
  GeneratedFile f{temp_dir() / name, records, text.size()};
  std::ofstream out(f.path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return f;
}

// Spark 3.x event log: 16 executors x 4 cores, 160 stages of 600 tasks in jobs of 4
// stages, tasks launched on the first free core by a driver needing 0-2 ms per launch.
// Every task has a TaskStart and a full TaskEnd line (metrics, shuffle, accumulables)
// as Spark writes them, about 2 KB.
GeneratedFile spark_log() {
  constexpr int kExecutors = 16, kCores = 4, kStages = 160, kTasksPerStage = 600;
  std::mt19937_64 rng(1);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::string s;
  s.reserve(size_t{220} << 20);
  auto out = std::back_inserter(s);
  const int64_t t0 = 1'700'000'000'000;
  fmt::format_to(out,
                 "{{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"3.4.1\"}}\n"
                 "{{\"Event\":\"SparkListenerEnvironmentUpdate\",\"JVM Information\":{{\"Java "
                 "Version\":\"17\"}},\"Spark Properties\":{{\"spark.app.name\":\"bench\","
                 "\"spark.executor.cores\":\"4\"}},\"System Properties\":{{}},\"Classpath "
                 "Entries\":{{}}}}\n"
                 "{{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"bench\",\"App "
                 "ID\":\"app-1\",\"Timestamp\":{},\"User\":\"u\"}}\n",
                 t0);
  for (int e = 1; e <= kExecutors; ++e)
    fmt::format_to(out,
                   "{{\"Event\":\"SparkListenerExecutorAdded\",\"Timestamp\":{},\"Executor "
                   "ID\":\"{}\",\"Executor Info\":{{\"Host\":\"node{}\",\"Total Cores\":{},"
                   "\"Log Urls\":{{\"stdout\":\"http://node{}:8042/stdout\"}},\"Attributes\":{{}},"
                   "\"Resources\":{{}},\"Resource Profile Id\":0}}}}\n"
                   "{{\"Event\":\"SparkListenerBlockManagerAdded\",\"Block Manager ID\":{{"
                   "\"Executor ID\":\"{}\",\"Host\":\"node{}\",\"Port\":40000}},\"Maximum "
                   "Memory\":2101975449,\"Timestamp\":{}}}\n",
                   t0, e, e, kCores, e, e, e, t0);
  std::vector<int64_t> core_free(kExecutors * kCores, t0 + 100);
  int64_t now = t0 + 100;
  uint64_t task = 0;
  for (int st = 0; st < kStages; ++st) {
    const int job = st / 4;
    if (st % 4 == 0)
      fmt::format_to(out,
                     "{{\"Event\":\"SparkListenerJobStart\",\"Job ID\":{},\"Submission "
                     "Time\":{},\"Stage Infos\":[],\"Stage IDs\":[{},{},{},{}],\"Properties\":{{"
                     "\"spark.job.description\":\"count at Bench.scala:42\"}}}}\n",
                     job, now, st, st + 1, st + 2, st + 3);
    const int64_t submitted = now + uniform(1, 5);
    fmt::format_to(out,
                   "{{\"Event\":\"SparkListenerStageSubmitted\",\"Stage Info\":{{\"Stage "
                   "ID\":{},\"Stage Attempt ID\":0,\"Stage Name\":\"map at Bench.scala:{}\","
                   "\"Number of Tasks\":{},\"RDD Info\":[],\"Parent IDs\":[],\"Details\":\"\","
                   "\"Submission Time\":{},\"Accumulables\":[]}},\"Properties\":{{}}}}\n",
                   st, 40 + st % 7, kTasksPerStage, submitted);
    int64_t driver = submitted, last = submitted;
    for (int k = 0; k < kTasksPerStage; ++k, ++task) {
      auto core = std::min_element(core_free.begin(), core_free.end());
      const int64_t launch = std::max(*core, driver) + uniform(0, 2);
      driver = launch;
      const int executor = static_cast<int>(core - core_free.begin()) / kCores + 1;
      const int deser = uniform(0, 6), run = uniform(5, 300), ser = uniform(0, 3);
      const int gc = uniform(0, run / 10), fetch = st % 2 ? uniform(0, run / 5) : 0;
      const int64_t write_ns = st % 2 ? 0 : int64_t{uniform(0, run / 5)} * 1'000'000;
      const int64_t finish = launch + deser + run + ser + uniform(1, 6);
      *core = finish;
      last = std::max(last, finish);
      fmt::format_to(out,
                     "{{\"Event\":\"SparkListenerTaskStart\",\"Stage ID\":{},\"Stage Attempt "
                     "ID\":0,\"Task Info\":{{\"Task ID\":{},\"Index\":{},\"Attempt\":0,"
                     "\"Partition ID\":{},\"Launch Time\":{},\"Executor ID\":\"{}\",\"Host\":"
                     "\"node{}\",\"Locality\":\"PROCESS_LOCAL\",\"Speculative\":false,"
                     "\"Getting Result Time\":0,\"Finish Time\":0,\"Failed\":false,\"Killed\":"
                     "false,\"Accumulables\":[]}}}}\n",
                     st, task, k, k, launch, executor, executor);
      fmt::format_to(
          out,
          "{{\"Event\":\"SparkListenerTaskEnd\",\"Stage ID\":{0},\"Stage Attempt ID\":0,\"Task "
          "Type\":\"ShuffleMapTask\",\"Task End Reason\":{{\"Reason\":\"Success\"}},\"Task "
          "Info\":{{\"Task ID\":{1},\"Index\":{2},\"Attempt\":0,\"Partition ID\":{2},\"Launch "
          "Time\":{3},\"Executor ID\":\"{4}\",\"Host\":\"node{4}\",\"Locality\":"
          "\"PROCESS_LOCAL\",\"Speculative\":false,\"Getting Result Time\":0,\"Finish "
          "Time\":{5},\"Failed\":false,\"Killed\":false,\"Accumulables\":[{{\"ID\":{6},"
          "\"Name\":\"internal.metrics.executorRunTime\",\"Update\":{8},\"Value\":{1},"
          "\"Internal\":true,\"Count Failed Values\":true}},{{\"ID\":{7},\"Name\":"
          "\"internal.metrics.resultSize\",\"Update\":2068,\"Value\":{1},\"Internal\":true,"
          "\"Count Failed Values\":true}},{{\"ID\":{9},\"Name\":\"internal.metrics.jvmGCTime\","
          "\"Update\":{12},\"Value\":{1},\"Internal\":true,\"Count Failed Values\":true}}]}},"
          "\"Task Executor Metrics\":{{\"JVMHeapMemory\":0,\"JVMOffHeapMemory\":0,"
          "\"OnHeapExecutionMemory\":0,\"OffHeapExecutionMemory\":0,\"OnHeapStorageMemory\":0,"
          "\"OffHeapStorageMemory\":0,\"ProcessTreeJVMRSSMemory\":0}},\"Task Metrics\":{{"
          "\"Executor Deserialize Time\":{10},\"Executor Deserialize CPU Time\":{13},"
          "\"Executor Run Time\":{8},\"Executor CPU Time\":{14},\"Peak Execution Memory\":0,"
          "\"Result Size\":2068,\"JVM GC Time\":{12},\"Result Serialization Time\":{11},"
          "\"Memory Bytes Spilled\":0,\"Disk Bytes Spilled\":0,\"Shuffle Read Metrics\":{{"
          "\"Remote Blocks Fetched\":12,\"Local Blocks Fetched\":4,\"Fetch Wait Time\":{15},"
          "\"Remote Bytes Read\":1048576,\"Remote Bytes Read To Disk\":0,\"Local Bytes "
          "Read\":262144,\"Total Records Read\":10000}},\"Shuffle Write Metrics\":{{\"Shuffle "
          "Bytes Written\":524288,\"Shuffle Write Time\":{16},\"Shuffle Records Written\":"
          "10000}},\"Input Metrics\":{{\"Bytes Read\":0,\"Records Read\":0}},\"Output "
          "Metrics\":{{\"Bytes Written\":0,\"Records Written\":0}},\"Updated Blocks\":[]}}}}\n",
          st, task, k, launch, executor, finish, 2 * st, 2 * st + 1, run, 2 * st + 2, deser, ser,
          gc, int64_t{deser} * 900'000, int64_t{run} * 950'000, fetch, write_ns);
    }
    fmt::format_to(out,
                   "{{\"Event\":\"SparkListenerStageCompleted\",\"Stage Info\":{{\"Stage "
                   "ID\":{},\"Stage Attempt ID\":0,\"Stage Name\":\"map at Bench.scala:{}\","
                   "\"Number of Tasks\":{},\"Submission Time\":{},\"Completion Time\":{},"
                   "\"Accumulables\":[]}}}}\n",
                   st, 40 + st % 7, kTasksPerStage, submitted, last + 1);
    now = last + 1 + uniform(1, 20);
    std::fill(core_free.begin(), core_free.end(), now);
    if (st % 4 == 3)
      fmt::format_to(out,
                     "{{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":{},\"Completion Time\":{},"
                     "\"Job Result\":{{\"Result\":\"JobSucceeded\"}}}}\n",
                     job, now);
  }
  fmt::format_to(out, "{{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":{}}}\n", now);
  return write("app-bench", s, task);
}

// PyTorch profiler export: per training step, 4 CPU threads each run 8 operators
// (cpu_op, 40-100 us) with 3 nested children (aten ops) and a cudaLaunchKernel
// runtime call; each launch starts a flow (ac2g) to a kernel on one of 2 GPU streams.
GeneratedFile chrome_trace() {
  constexpr int kSteps = 2400, kThreads = 4, kOps = 8;
  std::mt19937_64 rng(2);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::string s;
  s.reserve(size_t{260} << 20);
  auto out = std::back_inserter(s);
  s += "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"GPU\","
       "\"totalGlobalMem\":42314694656}],\"traceEvents\":[\n";
  for (int t = 0; t < kThreads; ++t)
    fmt::format_to(out,
                   "{{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":4242,\"tid\":{},"
                   "\"args\":{{\"name\":\"worker {}\"}}}},\n",
                   100 + t, t);
  uint64_t records = 0, flow = 0;
  std::vector<int64_t> stream_free(2, 0);
  for (int step = 0; step < kSteps; ++step) {
    const int64_t step_start = int64_t{step} * 4000;
    for (int t = 0; t < kThreads; ++t) {
      int64_t ts = step_start + uniform(0, 20);
      for (int op = 0; op < kOps; ++op) {
        const int child = uniform(8, 25);
        const int64_t dur = 3 * child + uniform(15, 40);
        fmt::format_to(out,
                       "{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":4242,"
                       "\"tid\":{},\"ts\":{}.{:03},\"dur\":{}.500,\"args\":{{\"External "
                       "id\":{},\"Record function id\":0,\"Sequence number\":{},\"Fwd thread "
                       "id\":0,\"Ev Idx\":{}}}}},\n",
                       100 + t, ts, uniform(0, 999), dur, records, step * kOps + op, records);
        int64_t c = ts + 3;
        for (int k = 0; k < 3; ++k, c += child) {
          fmt::format_to(out,
                         "{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::{}\",\"pid\":4242,"
                         "\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"External id\":{},"
                         "\"Record function id\":0,\"Ev Idx\":{}}}}},\n",
                         k == 0   ? "t"
                         : k == 1 ? "addmm"
                                  : "add_",
                         100 + t, c, child - 2, records + 1 + k, records + 1 + k);
        }
        // The kernel launch inside addmm, and the kernel on a stream.
        const int64_t launch = c - child - child + 2;
        fmt::format_to(out,
                       "{{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
                       "\"pid\":4242,\"tid\":{},\"ts\":{},\"dur\":4,\"args\":{{\"External "
                       "id\":{},\"correlation\":{},\"cbid\":211}}}},\n"
                       "{{\"ph\":\"s\",\"id\":{},\"pid\":4242,\"tid\":{},\"ts\":{},\"cat\":"
                       "\"ac2g\",\"name\":\"ac2g\"}},\n",
                       100 + t, launch, records + 2, flow, flow, 100 + t, launch);
        int64_t& stream = stream_free[flow % 2];
        const int64_t kstart = std::max(stream, launch + 6);
        const int64_t kdur = uniform(10, 60);
        stream = kstart + kdur + 1;
        fmt::format_to(out,
                       "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ampere_sgemm_128x64_tn\","
                       "\"pid\":0,\"tid\":\"stream {}\",\"ts\":{},\"dur\":{},\"args\":{{"
                       "\"queued\":0,\"device\":0,\"context\":1,\"stream\":{},\"correlation\":{},"
                       "\"registers per thread\":126,\"shared memory\":12288,\"blocks per "
                       "SM\":1.5,\"grid\":[128,1,1],\"block\":[128,1,1]}}}},\n"
                       "{{\"ph\":\"f\",\"id\":{},\"pid\":0,\"tid\":\"stream {}\",\"ts\":{},\"cat\":"
                       "\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}},\n",
                       7 + flow % 2, kstart, kdur, 7 + flow % 2, flow, flow, 7 + flow % 2, kstart);
        records += 6;
        ++flow;
        ts += dur + uniform(2, 30);
      }
    }
  }
  s += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"GPU 0\"}}\n],"
       "\"traceName\":\"bench.pt.trace.json\"}\n";
  return write("bench.pt.trace.json", s, records);
}

// One request: frontend GET (server) -> frontend client call -> backend POST (server)
// -> 2 db queries (client) and a cache lookup (client), and a render span; 7 spans over
// 3 services, about 4 ms. (service, name, kind, parent index, start us, end us)
struct SpanShape {
  int service;
  const char* name;
  int kind;
  int parent;
  int start_us, end_us;
};
constexpr SpanShape kRequest[] = {
    {0, "GET /checkout", 2, -1, 0, 4000},  {0, "POST backend", 3, 0, 100, 3500},
    {1, "POST /price", 2, 1, 150, 3400},   {2, "SELECT prices", 3, 2, 200, 1500},
    {2, "SELECT stock", 3, 2, 1600, 2600}, {1, "cache GET", 3, 2, 2650, 2800},
    {1, "render", 1, 2, 2850, 3350},
};
constexpr const char* kServices[] = {"frontend", "backend", "postgres"};

// OTLP/JSON as the collector's file exporter writes it: one ExportTraceServiceRequest per
// line, each a batch of 64 requests' spans grouped by service.
GeneratedFile otlp_file() {
  constexpr int kBatches = 640, kPerBatch = 64;
  std::string s;
  s.reserve(size_t{260} << 20);
  auto out = std::back_inserter(s);
  const int64_t t0 = int64_t{1'700'000'000} * 1'000'000'000;
  uint64_t request = 0, records = 0;
  for (int b = 0; b < kBatches; ++b) {
    s += "{\"resourceSpans\":[";
    for (int svc = 0; svc < 3; ++svc) {
      fmt::format_to(out,
                     "{}{{\"resource\":{{\"attributes\":[{{\"key\":\"service.name\",\"value\":{{"
                     "\"stringValue\":\"{}\"}}}},{{\"key\":\"telemetry.sdk.language\",\"value\":"
                     "{{\"stringValue\":\"java\"}}}},{{\"key\":\"host.name\",\"value\":{{"
                     "\"stringValue\":\"pod-{}\"}}}}]}},\"scopeSpans\":[{{\"scope\":{{\"name\":"
                     "\"io.opentelemetry.http\",\"version\":\"1.32.0\"}},\"spans\":[",
                     svc ? "," : "", kServices[svc], svc);
      bool first = true;
      for (int r = 0; r < kPerBatch; ++r) {
        const uint64_t req = request + r;
        const int64_t base = t0 + int64_t(req) * 1'000'000;  // a request every ms
        for (int i = 0; i < 7; ++i) {
          const SpanShape& sp = kRequest[i];
          if (sp.service != svc) continue;
          fmt::format_to(
              out,
              "{}{{\"traceId\":\"{:016x}{:016x}\",\"spanId\":\"{:016x}\",\"parentSpanId\":\"{}\","
              "\"flags\":1,\"name\":\"{}\",\"kind\":{},\"startTimeUnixNano\":\"{}\","
              "\"endTimeUnixNano\":\"{}\",\"attributes\":[{{\"key\":\"thread.id\",\"value\":{{"
              "\"intValue\":\"{}\"}}}},{{\"key\":\"http.method\",\"value\":{{\"stringValue\":"
              "\"POST\"}}}},{{\"key\":\"net.peer.name\",\"value\":{{\"stringValue\":\"backend\"}}"
              "}}],\"status\":{{}}}}",
              first ? "" : ",", uint64_t{0xabcdef}, req, req * 8 + i,
              sp.parent < 0 ? std::string() : fmt::format("{:016x}", req * 8 + sp.parent), sp.name,
              sp.kind, base + int64_t{sp.start_us} * 1000, base + int64_t{sp.end_us} * 1000,
              10 + req % 8);
          first = false;
          ++records;
        }
      }
      s += "]}]}";
    }
    s += "]}\n";
    request += kPerBatch;
  }
  return write("bench-otlp.json", s, records);
}

// Jaeger query API answer: {"data": [trace, ...]}, each trace the 7 spans above with
// references, tags, logs and its processes.
GeneratedFile jaeger_file() {
  constexpr int kTraces = 40960;
  std::string s;
  s.reserve(size_t{260} << 20);
  auto out = std::back_inserter(s);
  const int64_t t0 = int64_t{1'700'000'000} * 1'000'000;  // us
  uint64_t records = 0;
  s += "{\"data\":[";
  for (int r = 0; r < kTraces; ++r) {
    const int64_t base = t0 + int64_t{r} * 1000;
    fmt::format_to(out, "{}{{\"traceID\":\"{:016x}\",\"spans\":[", r ? "," : "", r + 1);
    for (int i = 0; i < 7; ++i) {
      const SpanShape& sp = kRequest[i];
      fmt::format_to(out,
                     "{}{{\"traceID\":\"{:016x}\",\"spanID\":\"{:016x}\",\"flags\":1,"
                     "\"operationName\":\"{}\",\"references\":[",
                     i ? "," : "", r + 1, uint64_t(r) * 8 + i, sp.name);
      if (sp.parent >= 0)
        fmt::format_to(
            out, "{{\"refType\":\"CHILD_OF\",\"traceID\":\"{:016x}\",\"spanID\":\"{:016x}\"}}",
            r + 1, uint64_t(r) * 8 + sp.parent);
      fmt::format_to(out,
                     "],\"startTime\":{},\"duration\":{},\"tags\":[{{\"key\":\"span.kind\","
                     "\"type\":\"string\",\"value\":\"{}\"}},{{\"key\":\"thread.id\",\"type\":"
                     "\"int64\",\"value\":{}}},{{\"key\":\"http.status_code\",\"type\":\"int64\","
                     "\"value\":200}}],\"logs\":[],\"processID\":\"p{}\",\"warnings\":null}}",
                     base + sp.start_us, sp.end_us - sp.start_us,
                     sp.kind == 2   ? "server"
                     : sp.kind == 3 ? "client"
                                    : "internal",
                     10 + r % 8, sp.service + 1);
      ++records;
    }
    s += "],\"processes\":{";
    for (int svc = 0; svc < 3; ++svc)
      fmt::format_to(out,
                     "{}\"p{}\":{{\"serviceName\":\"{}\",\"tags\":[{{\"key\":\"hostname\","
                     "\"type\":\"string\",\"value\":\"pod-{}\"}}]}}",
                     svc ? "," : "", svc + 1, kServices[svc], svc);
    s += "},\"warnings\":null}";
  }
  s += "],\"total\":0,\"limit\":0,\"offset\":0,\"errors\":null}\n";
  return write("bench-jaeger.json", s, records);
}

const GeneratedFile& file_of(const std::string& importer) {
  static std::map<std::string, GeneratedFile> cache;
  auto it = cache.find(importer);
  if (it != cache.end()) return it->second;
  GeneratedFile f = importer == "spark"    ? spark_log()
                    : importer == "chrome" ? chrome_trace()
                    : importer == "otlp"   ? otlp_file()
                                           : jaeger_file();
  return cache.emplace(importer, f).first->second;
}

void BM_Import(benchmark::State& state, const std::string& importer) {
  const GeneratedFile& file = file_of(importer);
  uint64_t events = 0;
  for (auto _ : state) {
    Trace t = importers::import_trace(file.path.string(), importer);
    events = t.events.size();
    benchmark::DoNotOptimize(t.events.data());
  }
  const auto it = static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(it * static_cast<double>(events)));
  state.SetBytesProcessed(static_cast<int64_t>(it * static_cast<double>(file.bytes)));
  state.counters["events"] = static_cast<double>(events);
  state.counters["records"] = static_cast<double>(file.records);
  state.counters["records/s"] =
      benchmark::Counter(it * static_cast<double>(file.records), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Import, spark, std::string("spark"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Import, chrome, std::string("chrome"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Import, otlp, std::string("otlp"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Import, jaeger, std::string("jaeger"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
