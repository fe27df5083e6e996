#include "flow/runtime.hpp"
#include "flow/profile/sampler.hpp"
#include "flow/run_stats.hpp"
#include "trace/environment.hpp"
#include "trace/setting_error.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace snailtrail::flow {
namespace {

using Clock = std::chrono::steady_clock;

// Idle rounds yield this many times before they sleep 20 us (default 0: sleep at once).
// Yielding used to come first (64 times), but on a loaded machine a yield hands the core
// to every other runnable thread and costs milliseconds, where a sleeper is woken
// promptly: p50 latency of a 50 K/s keycount fell from ~3.5 ms to ~0.2 ms at load 25
// (docs/RUNTIME.md "Measured"). SNAILTRAIL_FLOW_IDLE_YIELDS=N restores N yields (for
// experiments on a quiet machine).
const int kIdleYields = [] {
  const char* v = environment_value("SNAILTRAIL_FLOW_IDLE_YIELDS");
  return v ? std::max(0, std::atoi(v)) : 0;
}();

// An idle worker parks (park.hpp) instead of sleeping a fixed 20 us: a message or progress
// pushed to it by another local worker, or delivered to it by the transport's thread,
// wakes it at once. The timeout covers what only the clock changes (a source's next
// record falling due, the run's duration, an abort, polled flags): 20 us while a source
// waits for its next record to be due (as the old sleep), otherwise doubling over
// consecutive idle rounds from 20 us up to park_max_ns() (1 ms by default), so an idle
// worker that waits on another one stops waking 14 000 times a second and taking the
// core from it (docs/RUNTIME.md "Scaling and idle workers").
constexpr int64_t kParkMinNs = 20'000;

int64_t since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

// Appends the activity [t0, t1) of worker `worker` (on operator `op` if given) to `out`;
// under 1 us it is not recorded. Returns the number of events appended (0 or 2).
int append_span(Event* out, uint32_t worker, int64_t t0, int64_t t1, ActivityType a,
                std::optional<uint32_t> op) {
  if (t1 - t0 < 1000) return 0;
  Event s, e;
  s.ts = t0;
  e.ts = t1;
  s.worker = e.worker = worker;
  s.activity = e.activity = a;
  s.kind = EventKind::start;
  e.kind = EventKind::end;
  if (op) {
    s.op = e.op = *op;
    s.flags |= kHasOperator;
    e.flags |= kHasOperator;
  }
  out[0] = s;
  out[1] = e;
  return 2;
}

// The wait [start, woke) that ended with the round at `woke`: waiting until the first
// message taken in that round arrived, scheduling from there to `woke`. Waits under 1 us
// are not recorded. The events go in before the round's own (`mark`).
// Returns the wait's end (the off-CPU profile's wait ends there too).
int64_t record_wait(Recorder& rec, uint32_t worker, int64_t start, int64_t woke, size_t mark,
                    std::optional<uint32_t> input_op) {
  const int64_t first = rec.take_first_receipt();
  const int64_t end = std::clamp(first, start, woke);
  Event spans[4];
  int n = append_span(spans, worker, start, end, ActivityType::waiting, input_op);
  n += append_span(spans + n, worker, end, woke, ActivityType::scheduling, std::nullopt);
  auto& ev = rec.events();
  ev.insert(ev.begin() + static_cast<std::ptrdiff_t>(mark), spans, spans + n);
  return end;
}

// The runtime's own time in a round that worked, [t_step, t_end): what no operator's
// activity (events from `mark` on) covers is progress tracking, flushing, or the OS
// taking the core, recorded as `scheduling` (the round's scheduler) instead of leaving a
// gap that analysis can only call `unknown`. Parts under 10 us are left to gap filling's
// alignment, so rounds do not multiply the trace's events.
void record_round_gaps(Recorder& rec, uint32_t worker, size_t mark, int64_t t_step, int64_t t_end) {
  constexpr int64_t kMinGapNs = 10'000;
  auto& ev = rec.events();
  const size_t round_end = ev.size();
  int depth = 0;
  int64_t covered = t_step;
  auto gap = [&](int64_t t1) {
    if (t1 - covered < kMinGapNs) return;
    Event span[2];
    append_span(span, worker, covered, t1, ActivityType::scheduling, std::nullopt);
    ev.push_back(span[0]);  // after the round's events; flushes and the merge sort by time
    ev.push_back(span[1]);
  };
  for (size_t i = mark; i < round_end; ++i) {
    const EventKind kind = ev[i].kind;
    const int64_t ts = ev[i].ts;
    if (kind == EventKind::start) {
      if (depth++ == 0) gap(ts);
    } else if (kind == EventKind::end && depth > 0 && --depth == 0) {
      covered = std::max(covered, ts);
    }
  }
  if (depth == 0) gap(t_end);
}

// Steps the worker until its dataflow is complete (or another worker failed). Idle
// rounds yield, then sleep briefly; traced as `waiting`, attributed to the source operator
// while a source of this worker waits for its next record to be due (the worker waits on
// its input: when every worker does, the job keeps up, input-bound, and analysis reports
// that time as waiting for input, not as missing instrumentation). A wait that a message
// ended ends at the message's arrival; the time until the worker woke up and took it (the
// sleep's granularity, the OS) is `scheduling`.
// Rounds that only apply progress are idle too: the wait goes on through them.
// With `sink`, the recorded events go to it every `flush_ns` (also during a wait, which
// is then recorded up to the flush and goes on from there) and at the end: those before
// the flush's watermark, the earliest arrival of a message not yet taken (a receipt is
// recorded at its message's arrival, possibly long after: a batch queued behind a busy
// worker), never more than `hold_ns` back; later ones wait for the next flush.
using TraceSink = std::function<void(TraceBuffer, const std::vector<std::string>&)>;
// With fail_at_ns >= 0 (the test-only SNAILTRAIL_FLOW_FAIL_WORKER), the worker throws once
// its clock passes it: how the tests make a worker fail in the middle of a run.
void drive(Worker& w, const std::atomic<bool>& abort, int64_t park_max,
           const TraceSink* sink = nullptr, int64_t flush_ns = 0, int64_t fail_at_ns = -1,
           Clock::time_point origin = Clock::time_point{}, int64_t hold_ns = 0) {
  Recorder& rec = w.recorder();
  ParkSlot& park = w.fabric().park(w.index());
  int idle = 0;
  int parks = 0;  // consecutive timed-out parks (the timeout doubles with each)
  int64_t wait_start = -1;
  std::optional<uint32_t> input_op;  // the wait's source operator, if it waits on input
  int64_t round_end = -1;            // when the last round ended (-1: none yet)
  const bool streaming = sink && *sink && rec.on();
  int64_t next_flush = streaming ? rec.now() + flush_ns : 0;
  size_t held = 0;  // events the last flush kept (in time order, at the front)
  const auto by_ts = [](const Event& a, const Event& b) { return a.ts < b.ts; };
  auto flush = [&](bool last) {
    auto& ev = rec.events();
    if (ev.empty()) return;
    std::stable_sort(ev.begin() + static_cast<std::ptrdiff_t>(held), ev.end(), by_ts);
    std::inplace_merge(ev.begin(), ev.begin() + static_cast<std::ptrdiff_t>(held), ev.end(), by_ts);
    int64_t cut = INT64_MAX;
    if (!last) {
      // The clock first, then what has arrived (Fabric::entering says why this order).
      const int64_t now = rec.now();
      cut = std::max(std::min(now, w.earliest_arrival()), now - hold_ns);
      if (round_end >= 0) cut = std::min(cut, round_end);  // the next round starts there
    }
    const auto split = std::lower_bound(ev.begin(), ev.end(), cut,
                                        [](const Event& e, int64_t t) { return e.ts < t; });
    held = static_cast<size_t>(ev.end() - split);
    if (split == ev.begin()) return;
    std::vector<Event> out;
    if (held == 0) {
      out.reserve(ev.capacity());
      out.swap(ev);
    } else {
      out.assign(ev.begin(), split);
      ev.erase(ev.begin(), split);
    }
    rec.set_floor(out.back().ts);
    (*sink)(std::make_shared<const std::vector<Event>>(std::move(out)), w.operator_names());
  };
  while (!w.done() && !abort.load(std::memory_order_relaxed)) {
    if (fail_at_ns >= 0 && since(origin) >= fail_at_ns)
      throw std::runtime_error(
          fmt::format("injected failure after {} ms (SNAILTRAIL_FLOW_FAIL_WORKER, a test hook)",
                      fail_at_ns / 1'000'000));
    if (streaming && rec.now() >= next_flush) {
      // A wait goes on through rounds that only applied progress, and those record the
      // progress' receipts: the wait so far goes out first, so nothing is sent out of order.
      if (wait_start >= 0) {
        const int64_t now = rec.now();
        Event spans[2];
        const int n =
            append_span(spans, w.index(), wait_start, now, ActivityType::waiting, input_op);
        rec.events().insert(rec.events().end(), spans, spans + n);
        wait_start = now;
      }
      flush(false);
      next_flush = rec.now() + flush_ns;
    }
    const size_t mark = rec.on() ? rec.events().size() : 0;
    // A round starts where the last one ended: the loop's own time between rounds is the
    // runtime's too (recorded with the round, or inside the wait).
    const int64_t t_step = rec.on() ? (round_end >= 0 ? round_end : rec.now()) : 0;
    rec.take_first_receipt();
    // Read before the round pulls anything: a push after this wakes the park below.
    const uint32_t seen = park.read();
    const bool worked = w.step();
    // After an idle round the worker sleeps: the next round starts when it woke.
    round_end = rec.on() && worked ? rec.now() : -1;
    if (worked) {
      if (rec.on()) record_round_gaps(rec, w.index(), mark, t_step, round_end);
      if (wait_start >= 0)
        profile::wait_ends(record_wait(rec, w.index(), wait_start, t_step, mark, input_op));
      wait_start = -1;
      idle = 0;
      parks = 0;
    } else {
      if (wait_start < 0 && rec.on()) {
        wait_start = t_step;
        input_op = w.awaiting_input() ? std::optional<uint32_t>(w.input_operator()) : std::nullopt;
        profile::wait_begins(t_step, static_cast<uint8_t>(ActivityType::waiting));
      }
      if (idle < kIdleYields) {
        ++idle;
        std::this_thread::yield();
      } else {
        const int64_t limit = w.awaiting_input() ? kParkMinNs : park_max;
        const int64_t timeout = std::min(limit, kParkMinNs << std::min(parks, 20));
        if (park.park(seen, timeout))
          parks = 0;  // woken by a push: the next wait starts short again
        else
          ++parks;
      }
    }
  }
  if (streaming) flush(true);
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
  a.clamped_receipts += b.clamped_receipts;
  a.fresh_buffers += b.fresh_buffers;
  a.fresh_progress_batches += b.fresh_progress_batches;
}

// SNAILTRAIL_FLOW_FAIL_WORKER=G[:MS] (test-only, docs/RUNTIME.md): global worker G
// throws MS ms (default 200) after the start. Returns the failure time for worker g, or -1.
int64_t injected_failure(uint32_t g) {
  const char* v = environment_value("SNAILTRAIL_FLOW_FAIL_WORKER");
  if (!v || !*v) return -1;
  char* end = nullptr;
  const unsigned long w = std::strtoul(v, &end, 10);
  if (end == v || w != g) return -1;
  long ms = 200;
  if (*end == ':') ms = std::strtol(end + 1, nullptr, 10);
  return std::max<long>(ms, 0) * 1'000'000;
}

// Under tracing, the transport's (de)serialization of a worker's frames is recorded on
// that worker's own recorder (the transport calls on_codec on the worker's thread).
// The transport's clock (codec timings, on the workers' threads) reads the run's origin
// once it is published (`origin_ns`, set after start()). The communication thread
// delivers other ranks' frames from start() on, before this process's recorders and
// origin exist: deliveries are stamped on the steady clock and converted by the receiving
// worker (since_origin), so that early ones keep their delivery time and a pair's
// receipts the order of its correlators. (A time read off a recorder not yet built put a
// time since boot in the trace, and an early delivery stamped at its dequeue broke the
// order; 2026-11-29.)
void trace_transport_codec(Transport& tr, std::vector<Recorder>& recorders, uint32_t base,
                           std::shared_ptr<const std::atomic<int64_t>> origin_ns) {
  tr.now = [origin_ns] {
    const int64_t origin = origin_ns->load(std::memory_order_acquire);
    if (origin == INT64_MIN) return int64_t{-1};
    return Transport::steady_now_ns() - origin;
  };
  tr.since_origin = [origin_ns](int64_t steady_ns) {
    const int64_t origin = origin_ns->load(std::memory_order_acquire);
    if (origin == INT64_MIN || steady_ns < 0) return int64_t{-1};
    return std::max<int64_t>(0, steady_ns - origin);  // delivered before the origin: at it
  };
  tr.on_codec = [&recorders, base](uint32_t w, int64_t t0, int64_t t1, bool ser, uint64_t records) {
    const auto a = ser ? ActivityType::serialization : ActivityType::deserialization;
    Recorder& r = recorders[w - base];  // called on worker w's own thread
    r.activity(t0, a, EventKind::start, 0, false);
    r.activity(t1, a, EventKind::end, 0, false, static_cast<int64_t>(records));
  };
}

// What the worker threads of one run (this process's) share with each other and with
// run_job's statistics thread.
struct RunWorkers {
  const RunConfig& cfg;
  const JobSpec& job;
  Fabric& fabric;
  Clock::time_point start;
  RunResult& result;
  std::vector<Recorder>& recorders;
  std::atomic<bool> abort{false};
  std::vector<std::atomic<uint64_t>> generated;  // per worker: records its sources gave
  // Per worker: its parts of the output, joined after the run. (Appending them to one
  // vector under the mutex made the last worker to finish copy into a vector that the
  // others had grown: ~60 ms of 2-worker keycount's 0.5 s on one thread.)
  std::vector<std::vector<KeyCounts>> parts;
  std::atomic<Time> last_time{0};
  std::atomic<uint32_t> finished{0};
  Histogram hist;  // latency of the epochs the first worker saw complete
  std::mutex mu;   // result (but its output: parts), op_names
  std::vector<std::string> op_names;
  // The workers start stepping together, once each has built its dataflow: a worker that
  // started early would otherwise wait on messages while the others do not exist yet
  // (every existing worker waiting: an idle instant no input explains).
  std::barrier<> built;
  const int64_t park_max;

  RunWorkers(const RunConfig& c, const JobSpec& j, Fabric& f, Clock::time_point s, RunResult& r,
             std::vector<Recorder>& recs)
      : cfg(c),
        job(j),
        fabric(f),
        start(s),
        result(r),
        recorders(recs),
        generated(c.workers),
        parts(c.workers),
        built(static_cast<std::ptrdiff_t>(c.workers)),
        park_max(park_max_ns(c.park_max_ns)) {}

  // Worker i's output probe moved from `old` to `now_f`: the latency of the epochs it
  // completed (one worker per process measures: every worker sees the same frontier).
  void record_latency(uint32_t i, Time old, Time now_f, RecordLatencySampler& per_record) {
    if (per_record.on()) {  // every worker: its own sources' samples
      per_record.passed(now_f, since(start), hist);
      return;
    }
    if (i != 0) return;
    const int64_t now = since(start);
    const auto epoch = static_cast<Time>(cfg.epoch_ns);
    const Time last = last_time.load(std::memory_order_relaxed);
    for (Time t = old / epoch * epoch; t < now_f && t <= last; t += epoch) {
      const int64_t lat = now - static_cast<int64_t>(t + epoch);
      hist.record(lat > 0 ? static_cast<uint64_t>(lat) : 0);
    }
  }

  // Builds worker i's dataflow and drives it until it is complete.
  void run_worker(uint32_t i) {
    const uint32_t g = fabric.base() + i;
    auto sampling = cfg.profiler ? cfg.profiler->attach(g, start) : profile::Profiler::Guard{};
    Worker w(g, fabric, recorders[i]);
    JobContext ctx{cfg, w, start, generated[i], last_time, nullptr, 0, nullptr};
    RecordLatencySampler per_record(cfg.latency_record_every);
    if (per_record.on()) ctx.record_latency = &per_record;
    ctx.on_probe = [this, i, c = &ctx, &per_record](Time old, Time now_f) {
      c->probe_frontier = now_f;
      record_latency(i, old, now_f, per_record);
    };
    ctx.emit_result = [this, i](KeyCounts&& part) { parts[i].push_back(std::move(part)); };
    try {
      job.build(ctx);
      w.finish_build();
    } catch (...) {
      built.arrive_and_drop();  // the others go on (and stop on the abort)
      throw;
    }
    built.arrive_and_wait();
    if (i == 0) {
      std::lock_guard<std::mutex> lock(mu);
      op_names = w.operator_names();
    }
    try {
      drive(w, abort, park_max, &cfg.on_trace_events, cfg.trace_flush_ns, injected_failure(g),
            start, cfg.trace_hold_ns);
    } catch (const std::exception& e) {  // name the worker (and its process) that failed
      throw std::runtime_error(fmt::format("worker-{}: {}", g, e.what()));
    }
    w.counters().clamped_receipts = w.recorder().clamped();
    std::lock_guard<std::mutex> lock(mu);
    add(result.counters, w.counters());
    result.generated[i] = generated[i].load();
    finished.fetch_add(1);
  }
};

// Several processes: rank 0 gets every process's counters, per-worker record counts,
// output and end time (`end`: this process's, ns); W: workers per process.
void gather_ranks(Transport& tr, int64_t end, uint32_t W, RunResult& result) {
  std::vector<uint64_t> mine = {
      static_cast<uint64_t>(end),      result.counters.frontier_regressions,
      result.counters.early_records,   result.counters.steps,
      result.counters.idle_steps,      result.latency_max_ns,
      result.counters.clamped_receipts};
  mine.insert(mine.end(), result.generated.begin(), result.generated.end());
  for (const auto& [k, v] : result.output) {
    mine.push_back(k);
    mine.push_back(v);
  }
  const std::vector<uint64_t> all = tr.gather(mine);
  const std::vector<uint64_t> sizes = tr.gather({static_cast<uint64_t>(mine.size())});
  if (tr.rank() != 0) return;
  result.counters = {};
  result.generated.clear();
  result.output.clear();
  uint64_t last_end = 0;
  size_t at = 0;
  for (uint64_t n : sizes) {
    const uint64_t* p = all.data() + at;
    last_end = std::max(last_end, p[0]);
    add(result.counters, {p[1], p[2], p[3], p[4], p[6]});
    result.latency_max_ns = std::max(result.latency_max_ns, p[5]);
    result.generated.insert(result.generated.end(), p + 7, p + 7 + W);
    for (size_t k = 7 + W; k + 1 < n; k += 2) result.output.emplace_back(p[k], p[k + 1]);
    at += n;
  }
  result.seconds = static_cast<double>(last_end) * 1e-9;
}

// The workers' parts of the output, one after the other.
void join_parts(std::vector<std::vector<KeyCounts>>& parts, KeyCounts& output) {
  size_t n = 0;
  for (const auto& w : parts)
    for (const auto& p : w) n += p.size();
  output.reserve(n);
  for (auto& w : parts)
    for (auto& p : w) {
      output.insert(output.end(), p.begin(), p.end());
      KeyCounts().swap(p);
    }
}

// Sorts by key, one entry per key: the workers' values added.
void add_up_by_key(KeyCounts& output) {
  std::sort(output.begin(), output.end());
  size_t kept = 0;
  for (size_t i = 0; i < output.size(); ++i) {
    if (kept > 0 && output[kept - 1].first == output[i].first)
      output[kept - 1].second += output[i].second;
    else
      output[kept++] = output[i];
  }
  output.resize(kept);
}

// Every worker's events in time order into result.events.
void merge_traces(std::vector<Recorder>& recorders, RunResult& result) {
  size_t total = 0;
  for (auto& r : recorders) total += r.events().size();
  result.events.reserve(total);
  for (auto& r : recorders)
    result.events.insert(result.events.end(), r.events().begin(), r.events().end());
  std::stable_sort(result.events.begin(), result.events.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
}

}  // namespace

int64_t park_max_ns(int64_t ns) {
  if (ns <= 0) {
    ns = 1'000'000;
    if (const char* v = environment_value("SNAILTRAIL_FLOW_PARK_MAX_US")) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long us = std::strtoull(v, &end, 10);
      if (end == v || *end != '\0' || *v == '-' || errno == ERANGE || us == 0 || us > kMaxParkUs)
        throw std::invalid_argument(fmt::format(
            "SNAILTRAIL_FLOW_PARK_MAX_US={}: expected microseconds from 1 to {}", v, kMaxParkUs));
      ns = static_cast<int64_t>(us) * 1000;
    }
  }
  return std::max(kParkMinNs, ns);
}

void run_dataflow(uint32_t workers, const std::function<void(Worker&)>& build,
                  std::vector<WorkerCounters>* counters, size_t ring_capacity, Transport* transport,
                  int64_t park_max) {
  park_max = park_max_ns(park_max);
  Fabric fabric(workers, transport, ring_capacity);
  std::atomic<bool> abort{false};
  if (counters) counters->assign(workers, {});
  try {
    if (transport) transport->start();
    const auto origin = Clock::now();
    on_threads(workers, abort, [&](uint32_t i) {
      const uint32_t g = fabric.base() + i;
      Recorder rec(g, false, origin);
      Worker w(g, fabric, rec);
      build(w);
      w.finish_build();
      drive(w, abort, park_max);
      if (counters) (*counters)[i] = w.counters();
    });
  } catch (const std::exception& e) {
    if (!transport) throw;
    // The other processes' workers would wait for ours forever: end the whole job.
    std::fprintf(stderr, "snailtrail: rank %u: %s\n", transport->rank(), e.what());
    transport->abort(1);
  }
  if (transport) transport->finish();  // every process's dataflow is complete
}

RunResult run_job(const RunConfig& cfg) {
  const JobSpec* job = find_job(cfg.job);
  if (!job) throw std::invalid_argument("unknown job '" + cfg.job + "'");
  const uint32_t W = cfg.workers;  // threads of this process
  Transport* tr = cfg.transport;
  park_max_ns(cfg.park_max_ns);  // a bad SNAILTRAIL_FLOW_PARK_MAX_US fails before the run
  Fabric fabric(W, tr);
  RunResult result;
  result.generated.assign(W, 0);
  std::vector<Recorder> recorders;
  recorders.reserve(W);
  // Published once `start` is known; shared with the transport's clock, which may outlive
  // this function on an error.
  auto transport_origin = std::make_shared<std::atomic<int64_t>>(INT64_MIN);
  if (tr) {
    if (cfg.trace) trace_transport_codec(*tr, recorders, fabric.base(), transport_origin);
    tr->start();  // every process is here: the clocks start together
  }
  const auto start = tr && tr->origin_ns() >= 0
                         ? Clock::time_point(std::chrono::nanoseconds(tr->origin_ns()))
                         : Clock::now();
  result.clock_origin_ns = start.time_since_epoch().count();
  for (uint32_t i = 0; i < W; ++i) recorders.emplace_back(fabric.base() + i, cfg.trace, start);
  transport_origin->store(result.clock_origin_ns, std::memory_order_release);

  RunWorkers run(cfg, *job, fabric, start, result, recorders);
  std::exception_ptr error;
  std::thread runner([&] {
    try {
      on_threads(W, run.abort, [&](uint32_t i) { run.run_worker(i); });
    } catch (...) {
      error = std::current_exception();
      run.finished = W + 1;
    }
  });
  IntervalStatsCollector stats(cfg, result, tr, fabric.base(), run.hist, run.generated);
  RssSampler rss(cfg.rss_sample_ns);
  int64_t next = cfg.stats_interval_ns;  // the end of the next interval
  try {
    while (run.finished.load() < W) {
      const int64_t now = since(start);
      rss.sample(now, result.rss_timeline);
      if (now >= next) {
        stats.interval(next);
        next += cfg.stats_interval_ns;
      }
      stats.collect(false);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  } catch (...) {  // stop the workers before leaving
    run.abort = true;
    runner.join();
    throw;
  }
  runner.join();
  if (error) std::rethrow_exception(error);
  const int64_t end = since(start);
  join_parts(run.parts, result.output);
  if (end > next - cfg.stats_interval_ns) stats.interval(end);  // sent before finish(): it arrives
  if (tr) tr->finish();  // every process agrees that the dataflow is complete
  stats.collect(true);
  result.seconds = static_cast<double>(end) * 1e-9;
  result.latency = stats.total_hist();     // every rank's samples on rank 0
  result.latency_max_ns = run.hist.max();  // this rank's; gather_ranks takes the largest
  if (tr) gather_ranks(*tr, end, W, result);
  for (uint64_t g : result.generated) result.records += g;
  add_up_by_key(result.output);
  if (cfg.trace) {
    merge_traces(recorders, result);
    for (uint32_t i = 0; i < fabric.workers(); ++i)
      result.worker_names.push_back(fmt::format("worker-{}", i));
    result.operator_names = run.op_names;
  }
  return result;
}

KeyCounts reference_output(const RunConfig& cfg, const std::vector<uint64_t>& per_worker) {
  const JobSpec* job = find_job(cfg.job);
  if (!job) throw std::invalid_argument("unknown job '" + cfg.job + "'");
  if (job->reference_run) return job->reference_run(cfg, per_worker);
  FlatMap<uint64_t> state;  // the runs' data structure: a fair comparison
  for (uint32_t w = 0; w < per_worker.size(); ++w) job->reference(cfg, w, 0, per_worker[w], state);
  KeyCounts out(state.begin(), state.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::pair<uint64_t, double> reference_throughput(const RunConfig& cfg, KeyCounts* out) {
  const JobSpec* job = find_job(cfg.job);
  if (!job) throw std::invalid_argument("unknown job '" + cfg.job + "'");
  if (job->reference_run) {  // the whole input at once: needs its size
    if (cfg.records == 0)
      throw UsageError({field("reference"), " of " + cfg.job + " needs ", field("records")});
    const auto start = Clock::now();
    KeyCounts o = job->reference_run(cfg, {cfg.records});
    const double seconds = static_cast<double>(since(start)) * 1e-9;
    if (out) *out = std::move(o);
    return {cfg.records, seconds};
  }
  FlatMap<uint64_t> state;  // the runs' data structure: a fair comparison
  const auto start = Clock::now();
  // Reserved as the dataflow's workers reserve theirs (while building, on their clock).
  if (job->distinct_keys) state.reserve(reserved_keys(job->distinct_keys(cfg)));
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
