#include "flow/runtime.hpp"
#include "flow/profile/sampler.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace snailtrail::flow {
namespace {

using Clock = std::chrono::steady_clock;

int64_t since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

// Steps the worker until its dataflow is complete (or another worker failed). Idle
// rounds yield, then sleep briefly; traced as `input` while a source of this worker is
// still running (the worker waits for its next record to be due, as the simulator's
// timely workers wait on their input), otherwise as `waiting`.
// With `sink`, the recorded events go to it every `flush_ns` (also during a wait: an idle
// round records nothing, so the wait's events, inserted when it ends, still come after
// everything flushed) and at the end.
using TraceSink = std::function<void(std::vector<Event>&&, const std::vector<std::string>&)>;
void drive(Worker& w, const std::atomic<bool>& abort, const TraceSink* sink = nullptr,
           int64_t flush_ns = 0) {
  Recorder& rec = w.recorder();
  int idle = 0;
  int64_t wait_start = -1;
  ActivityType wait_type = ActivityType::waiting;
  const bool streaming = sink && *sink && rec.on();
  int64_t next_flush = streaming ? rec.now() + flush_ns : 0;
  auto flush = [&] {
    auto& ev = rec.events();
    if (ev.empty()) return;
    std::stable_sort(ev.begin(), ev.end(),
                     [](const Event& a, const Event& b) { return a.ts < b.ts; });
    std::vector<Event> out;
    out.reserve(ev.capacity());
    out.swap(ev);
    (*sink)(std::move(out), w.operator_names());
  };
  while (!w.done() && !abort.load(std::memory_order_relaxed)) {
    if (streaming && rec.now() >= next_flush) {
      flush();
      next_flush = rec.now() + flush_ns;
    }
    const size_t mark = rec.on() ? rec.events().size() : 0;
    const int64_t t_step = rec.on() ? rec.now() : 0;
    if (w.step()) {
      if (wait_start >= 0) profile::wait_ends(t_step);
      if (wait_start >= 0 && t_step - wait_start >= 1000) {
        Event s, e;
        s.ts = wait_start;
        e.ts = t_step;
        s.worker = e.worker = w.index();
        s.activity = e.activity = wait_type;
        s.kind = EventKind::start;
        e.kind = EventKind::end;
        auto& ev = rec.events();
        ev.insert(ev.begin() + static_cast<std::ptrdiff_t>(mark), {s, e});
      }
      wait_start = -1;
      idle = 0;
    } else {
      if (wait_start < 0 && rec.on()) {
        wait_start = t_step;
        wait_type = w.awaiting_input() ? ActivityType::input : ActivityType::waiting;
        profile::wait_begins(t_step, static_cast<uint8_t>(wait_type));
      }
      if (++idle < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  if (streaming) flush();
}

// Runs `body(index)` on `n` threads; the first exception stops the others and is rethrown.
void on_threads(uint32_t n, std::atomic<bool>& abort, const std::function<void(uint32_t)>& body) {
  std::mutex mu;
  std::exception_ptr error;
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        abort = true;
      }
    });
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

void add(WorkerCounters& a, const WorkerCounters& b) {
  a.frontier_regressions += b.frontier_regressions;
  a.early_records += b.early_records;
  a.steps += b.steps;
  a.idle_steps += b.idle_steps;
}

}  // namespace

void run_dataflow(uint32_t workers, const std::function<void(Worker&)>& build,
                  std::vector<WorkerCounters>* counters) {
  Fabric fabric(workers);
  std::atomic<bool> abort{false};
  if (counters) counters->assign(workers, {});
  const auto origin = Clock::now();
  on_threads(workers, abort, [&](uint32_t i) {
    Recorder rec(i, false, origin);
    Worker w(i, fabric, rec);
    build(w);
    w.finish_build();
    drive(w, abort);
    if (counters) (*counters)[i] = w.counters();
  });
}

RunResult run_job(const RunConfig& cfg) {
  const JobSpec* job = find_job(cfg.job);
  if (!job) throw std::invalid_argument("unknown job '" + cfg.job + "'");
  const uint32_t W = cfg.workers;  // threads of this process
  Transport* tr = cfg.transport;
  Fabric fabric(W, tr);
  const uint32_t base = fabric.base(), G = fabric.workers();
  std::atomic<bool> abort{false};
  std::vector<std::atomic<uint64_t>> generated(W);
  std::atomic<Time> last_time{0};
  std::atomic<uint32_t> finished{0};
  Histogram hist;
  std::mutex mu;
  RunResult result;
  result.generated.assign(W, 0);
  std::vector<Recorder> recorders;
  std::vector<std::string> op_names;
  const auto start = Clock::now();
  recorders.reserve(W);
  for (uint32_t i = 0; i < W; ++i) recorders.emplace_back(base + i, cfg.trace, start);
  if (tr) {
    if (cfg.trace) {
      tr->now = [&recorders] { return recorders[0].now(); };
      tr->on_codec = [&recorders, base](uint32_t w, int64_t t0, int64_t t1, bool ser,
                                        uint64_t records) {
        const auto a = ser ? ActivityType::serialization : ActivityType::deserialization;
        Recorder& r = recorders[w - base];  // called on worker w's own thread
        r.activity(t0, a, EventKind::start, 0, false);
        r.activity(t1, a, EventKind::end, 0, false, static_cast<int64_t>(records));
      };
    }
    tr->start();  // every process is here: the clocks start together
  }

  std::exception_ptr error;
  std::thread runner([&] {
    try {
      on_threads(W, abort, [&](uint32_t i) {
        auto sampling =
            cfg.profiler ? cfg.profiler->attach(base + i, start) : profile::Profiler::Guard{};
        Worker w(base + i, fabric, recorders[i]);
        JobContext ctx{cfg, w, start, generated[i], last_time, nullptr, 0, nullptr};
        ctx.on_probe = [&, i, c = &ctx](Time old, Time now_f) {
          c->probe_frontier = now_f;
          if (base + i != 0) return;  // one worker measures latency: every worker sees the same
          const int64_t now = since(start);
          const auto epoch = static_cast<Time>(cfg.epoch_ns);
          const Time last = last_time.load(std::memory_order_relaxed);
          for (Time t = old / epoch * epoch; t < now_f && t <= last; t += epoch) {
            const int64_t lat = now - static_cast<int64_t>(t + epoch);
            hist.record(lat > 0 ? static_cast<uint64_t>(lat) : 0);
          }
        };
        ctx.emit_result = [&](KeyCounts&& part) {
          std::lock_guard<std::mutex> lock(mu);
          result.output.insert(result.output.end(), part.begin(), part.end());
        };
        job->build(ctx);
        w.finish_build();
        if (i == 0) {
          std::lock_guard<std::mutex> lock(mu);
          op_names = w.operator_names();
        }
        drive(w, abort, &cfg.on_trace_events, cfg.trace_flush_ns);
        std::lock_guard<std::mutex> lock(mu);
        add(result.counters, w.counters());
        result.generated[i] = generated[i].load();
        finished.fetch_add(1);
      });
    } catch (...) {
      error = std::current_exception();
      finished = W + 1;
    }
  });

  // Statistics every interval while the workers run.
  std::vector<uint64_t> prev_hist(Histogram::kBuckets, 0);
  uint64_t prev_records = 0;
  int64_t next = cfg.stats_interval_ns;
  auto interval = [&](int64_t at) {
    std::vector<uint64_t> h = hist.snapshot();
    std::vector<uint64_t> d(h.size());
    for (size_t b = 0; b < h.size(); ++b) d[b] = h[b] - prev_hist[b];
    prev_hist = h;
    uint64_t records = 0;
    for (auto& g : generated) records += g.load(std::memory_order_relaxed);
    IntervalStats s;
    s.t_s = static_cast<double>(at) * 1e-9;
    s.records = records - prev_records;
    prev_records = records;
    s.p50_ms = static_cast<double>(percentile(d, 0.5)) * 1e-6;
    s.p99_ms = static_cast<double>(percentile(d, 0.99)) * 1e-6;
    s.p999_ms = static_cast<double>(percentile(d, 0.999)) * 1e-6;
    s.max_ms = static_cast<double>(percentile(d, 1.0)) * 1e-6;
    s.rss_mb = rss_mb();
    result.intervals.push_back(s);
    if (cfg.on_stats_line)
      cfg.on_stats_line(fmt::format(
          "t={:.2f}s records={} p50={:.3f}ms p99={:.3f}ms p99.9={:.3f}ms max={:.3f}ms rss={:.0f}MB",
          s.t_s, s.records, s.p50_ms, s.p99_ms, s.p999_ms, s.max_ms, s.rss_mb));
  };
  while (finished.load() < W) {
    const int64_t now = since(start);
    if (now >= next) {
      interval(next);
      next += cfg.stats_interval_ns;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  runner.join();
  if (error) std::rethrow_exception(error);
  if (tr) tr->finish();  // every process agrees that the dataflow is complete
  const int64_t end = since(start);
  result.seconds = static_cast<double>(end) * 1e-9;
  if (end > next - cfg.stats_interval_ns) interval(end);
  result.latency = hist.snapshot();
  if (tr) {  // rank 0 gets every process's counts, output and end time
    std::vector<uint64_t> mine = {static_cast<uint64_t>(end), result.counters.frontier_regressions,
                                  result.counters.early_records, result.counters.steps,
                                  result.counters.idle_steps};
    mine.insert(mine.end(), result.generated.begin(), result.generated.end());
    for (const auto& [k, v] : result.output) {
      mine.push_back(k);
      mine.push_back(v);
    }
    const std::vector<uint64_t> all = tr->gather(mine);
    const std::vector<uint64_t> sizes = tr->gather({static_cast<uint64_t>(mine.size())});
    if (tr->rank() == 0) {
      result.counters = {};
      result.generated.clear();
      result.output.clear();
      uint64_t last_end = 0;
      size_t at = 0;
      for (uint64_t n : sizes) {
        const uint64_t* p = all.data() + at;
        last_end = std::max(last_end, p[0]);
        add(result.counters, {p[1], p[2], p[3], p[4]});
        result.generated.insert(result.generated.end(), p + 5, p + 5 + W);
        for (size_t k = 5 + W; k + 1 < n; k += 2) result.output.emplace_back(p[k], p[k + 1]);
        at += n;
      }
      result.seconds = static_cast<double>(last_end) * 1e-9;
    }
  }
  for (uint64_t g : result.generated) result.records += g;
  std::sort(result.output.begin(), result.output.end());
  if (cfg.trace) {
    size_t total = 0;
    for (auto& r : recorders) total += r.events().size();
    result.events.reserve(total);
    for (auto& r : recorders)
      result.events.insert(result.events.end(), r.events().begin(), r.events().end());
    std::stable_sort(result.events.begin(), result.events.end(),
                     [](const Event& a, const Event& b) { return a.ts < b.ts; });
    for (uint32_t i = 0; i < G; ++i) result.worker_names.push_back(fmt::format("worker-{}", i));
    result.operator_names = op_names;
  }
  return result;
}

KeyCounts reference_output(const RunConfig& cfg, const std::vector<uint64_t>& per_worker) {
  const JobSpec* job = find_job(cfg.job);
  if (!job) throw std::invalid_argument("unknown job '" + cfg.job + "'");
  std::unordered_map<uint64_t, uint64_t> state;
  for (uint32_t w = 0; w < per_worker.size(); ++w) job->reference(cfg, w, 0, per_worker[w], state);
  KeyCounts out(state.begin(), state.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::pair<uint64_t, double> reference_throughput(const RunConfig& cfg, KeyCounts* out) {
  const JobSpec* job = find_job(cfg.job);
  if (!job) throw std::invalid_argument("unknown job '" + cfg.job + "'");
  std::unordered_map<uint64_t, uint64_t> state;
  const auto start = Clock::now();
  const uint64_t limit = cfg.records == 0 ? ~uint64_t{0} : cfg.records;
  const uint64_t chunk = 1 << 14;
  uint64_t done = 0;
  // The same input as a one-worker run: stream 0.
  while (done < limit && since(start) < cfg.duration_ns) {
    const uint64_t to = std::min(limit, done + chunk);
    job->reference(cfg, 0, done, to, state);
    done = to;
  }
  const double seconds = static_cast<double>(since(start)) * 1e-9;
  if (out) {
    out->assign(state.begin(), state.end());
    std::sort(out->begin(), out->end());
  }
  return {done, seconds};
}

std::string output_digest(const KeyCounts& out) {
  uint64_t h = 0;
  for (const auto& [k, v] : out) h += mix64(k ^ mix64(v + 0x51ed27d3a7c1b5e9ull));
  return fmt::format("{:016x}", h);
}

std::string first_difference(const KeyCounts& got, const KeyCounts& want) {
  size_t i = 0, j = 0;
  while (i < got.size() || j < want.size()) {
    if (j == want.size() || (i < got.size() && got[i].first < want[j].first))
      return fmt::format("key {}: run has {}, reference has none", got[i].first, got[i].second);
    if (i == got.size() || want[j].first < got[i].first)
      return fmt::format("key {}: run has none, reference has {}", want[j].first, want[j].second);
    if (got[i].second != want[j].second)
      return fmt::format("key {}: run has {}, reference has {}", got[i].first, got[i].second,
                         want[j].second);
    ++i;
    ++j;
  }
  return "";
}

double rss_mb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

}  // namespace snailtrail::flow
