// The verdict: its sentence (one per verdict kind, filled from the same fields), the
// run's tally of what its windows find, and the verdict object of the JSON outputs
// (docs/OUTPUT.md). The table prints the same sentences (output/verdict_text.hpp).
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "output/format.hpp"
#include "output/verdict_text.hpp"
#include "output/writers.hpp"
#include "summary/hints.hpp"
#include "summary/verdict.hpp"

namespace snailtrail {

using Buf = fmt::memory_buffer;
using output_detail::format_ns;
using output_detail::put;

namespace {

// The next step for a dominant activity type.
const char* activity_advice(ActivityType t) {
  switch (t) {
    case ActivityType::scheduling:
      return "cut the delay between work being ready and being run (fewer, larger tasks; a "
             "less loaded machine, driver or scheduler)";
    case ActivityType::serialization:
    case ActivityType::deserialization:
      return "make records cheaper to (de)serialize, or avoid the exchange that needs it";
    case ActivityType::buffer:
      return "look at buffer management (buffer sizes, memory pressure)";
    case ActivityType::io:
      return "make the I/O cheaper (faster storage, fewer or larger reads and writes)";
    case ActivityType::fault_tolerance:
      return "make checkpoints cheaper or less frequent";
    case ActivityType::barrier_processing:
      return "shorten the barriers (alignment, checkpoint barriers)";
    case ActivityType::busy_waiting:
      return "replace the busy waiting, or find what it waits for";
    default:
      return "make it cheaper";
  }
}

// The name the verdict is about, as the trace has it (the JSON "name"); its sentence
// shows it printable() (shown_name).
std::string verdict_name(const Verdict& v, const Names& names) {
  switch (v.kind) {
    case VerdictKind::straggler:
    case VerdictKind::worker:
    case VerdictKind::balanced:
    case VerdictKind::wait:
      return v.id < names.worker.size() ? names.worker[v.id] : std::string();
    case VerdictKind::op:
      return names.op(v.id);
    case VerdictKind::no_cp:
      return {};
    default:
      return std::string(name_of(static_cast<ActivityType>(v.id)));
  }
}

std::string shown_name(const Verdict& v, const Names& names) {
  return printable(verdict_name(v, names));
}

std::string pct(double v) {
  return fmt::format("{:.1f}%", v * 100);
}

std::string rank_text(uint32_t rank) {
  return rank == 1 ? "first" : fmt::format("#{}", rank);
}

// "Twice as fast", "3 times as fast", or `peers` (a peer-median what-if); lower case
// inside a sentence.
std::string speedup_words(const WhatIf& w, const char* peers, bool capital) {
  if (w.peer_median) return peers;
  if (w.speedup == 2) return capital ? "Twice as fast" : "twice as fast";
  return fmt::format("{:g} times as fast", w.speedup);
}

// The what-if sentence: "{lead}, ... would (not) shorten the critical path ...".
std::string saving_sentence(const WhatIf& w, const std::string& lead) {
  if (!(w.saved_ns > 0))
    return fmt::format(" {} would not shorten the critical path: other work holds it.", lead);
  return fmt::format(" {} would shorten the critical path by {}.", lead,
                     format_ns(std::llround(w.saved_ns)));
}

std::string saving_text(const WhatIf* w, const char* subject) {
  if (!w) return {};
  return saving_sentence(
      *w, fmt::format("{}, {}", speedup_words(*w, "As fast as its peers' median", true), subject));
}

// A wait verdict (kernel traces): what the threads waited for, in words, and the next
// step for it. {cp} is the share of all waits of the cause, {name} the pseudo-worker
// with the most of it.
struct WaitSentence {
  WaitCause cause;
  const char* text;
};
constexpr WaitSentence kWaitSentences[] = {
    {WaitCause::timer,
     "Waiting on timers (sleeps) limits latency: threads sleeping until a timer fires are "
     "{cp} of the critical paths, most on {name} ({worker_cp}).{saving} Next: the threads "
     "sleep on purpose: shorten or remove the sleeps and poll intervals, or wake the "
     "threads by an event instead of a timer."},
    {WaitCause::block_device,
     "Block I/O limits latency: threads waiting for a disk's reads and writes are {cp} of "
     "the critical paths, most on {name} ({worker_cp}).{saving} Next: faster storage or "
     "fewer synchronous reads and writes (cache, read ahead, batch or defer writes)."},
    {WaitCause::network,
     "Waiting on the network limits latency: threads waiting for packets are {cp} of the "
     "critical paths, most on {name} ({worker_cp}).{saving} Next: look at the network or "
     "the sender (when the packets leave it, and why not sooner)."},
    {WaitCause::interrupt,
     "Waiting on device interrupts limits latency: threads woken by an interrupt are {cp} "
     "of the critical paths, most on {name} ({worker_cp}).{saving} Next: find the device "
     "behind the interrupt and what it waits for (a slow device, interrupt coalescing)."},
};

// The what-if of a wait's pseudo-worker: waking the threads sooner.
std::string wait_saving_text(const WhatIf* w) {
  if (!w) return {};
  return saving_sentence(
      *w, fmt::format("Woken {}, they", speedup_words(*w, "as fast as their peers'", false)));
}

std::string wait_text(const Verdict& v, const Names& names) {
  const auto* it = std::find_if(std::begin(kWaitSentences), std::end(kWaitSentences),
                                [&](const WaitSentence& x) { return x.cause == v.cause; });
  if (it == std::end(kWaitSentences)) return {};
  return fmt::format(fmt::runtime(it->text), fmt::arg("name", shown_name(v, names)),
                     fmt::arg("cp", pct(v.cp)), fmt::arg("worker_cp", pct(v.top_worker_cp)),
                     fmt::arg("saving", wait_saving_text(v.what_if)));
}

// One sentence per verdict kind, filled by name from the same fields: {name} (what the
// verdict is about), {cp} (its share of the critical paths), {busy} (its conventional
// share), {rank} (its conventional rank), {worker} and {worker_cp} (where most of it
// runs), {saving} (the what-if sentence, or nothing) and {advice} (the next step).
struct VerdictSentence {
  VerdictKind kind;
  const char* text;
};
constexpr VerdictSentence kVerdictSentences[] = {
    {VerdictKind::no_cp,
     "No transient critical path: at some instant every worker waits with no message in "
     "flight, or messages are unmatched; nothing can be ranked (see DIAGNOSTICS)."},
    {VerdictKind::instrumentation,
     "Most critical time is unknown ({cp} of the critical paths): the trace misses "
     "activities. Next: instrument the gaps, or map names to activity types with --map."},
    {VerdictKind::activity,
     "{name} limits latency: {cp} of the critical paths, {busy} of all time (conventional "
     "profiling ranks it {rank}); most on {worker} ({worker_cp}).{saving} Next: {advice}."},
    {VerdictKind::straggler,
     "{name} is the straggler: on {cp} of the critical paths while doing {busy} of the work "
     "(conventional profiling ranks it {rank}).{saving} Next: look for a hot key or a skewed "
     "partition on it (split the key, rebalance)."},
    {VerdictKind::op,
     "{unit}{name} {verb}: {cp} of the critical paths, {busy} of the busy time "
     "(conventional profiling ranks it {rank}).{saving}{tasks} Next: {op_advice}."},
    {VerdictKind::worker,
     "{name} limits latency: on {cp} of the critical paths while doing {busy} of the work "
     "(conventional profiling ranks it {rank}).{saving} Next: make its work cheaper (its "
     "operators and activities are in the tables above)."},
    {VerdictKind::input,
     "The job keeps up with its input: {cp} of the critical paths are sources reading "
     "input; no worker or operator stands out."},
    {VerdictKind::balanced,
     "Nothing stands out: the critical paths spread over workers, operators and "
     "activities (the most critical worker, {name}, holds {cp})."},
};

// A Spark stage is named "stage N (…)" by its importer: the job's unit is the stage.
bool is_stage(const std::string& name) {
  return name.rfind("stage ", 0) == 0;
}

// Its tasks are uniform when the slowest takes at most this much over the median.
constexpr double kSkewOverMedian = 1.5;

bool skewed(const WhatIf& w) {
  return w.tasks >= 2 && w.task_max > kSkewOverMedian * w.task_median;
}

// The operator's task durations as evidence: uniform work or skew.
std::string tasks_text(const WhatIf* w, const char* tasks) {
  if (!w || w->kind != WhatIfKind::op || w->tasks < 2) return {};
  auto ns = [](float x) { return format_ns(std::llround(static_cast<double>(x))); };
  if (!skewed(*w))
    return fmt::format(
        " Its {} {} are uniform, not skew (min / median / p95 / max: {} / {} / {} / {}).", w->tasks,
        tasks, ns(w->task_min), ns(w->task_median), ns(w->task_p95), ns(w->task_max));
  return fmt::format(
      " Its {} are skewed: the slowest takes {} ({:.1f}x the median {}; p95 {}, min {}, {} {}).",
      tasks, ns(w->task_max), w->task_max / w->task_median, ns(w->task_median), ns(w->task_p95),
      ns(w->task_min), w->tasks, tasks);
}

// The next step for an operator verdict: DS2's number when the trace's rates gave one.
std::string op_advice(const Verdict& v, const std::string& name) {
  if (is_stage(name))
    return v.what_if && skewed(*v.what_if)
               ? "split the hot keys or repartition the stage's slowest partitions"
               : "make the stage's work cheaper, or give it more cores (more executors "
                 "or partitions)";
  if (v.no_source_rates)  // one run of a program: more instances do not apply
    return v.what_if ? fmt::format("make {} cheaper, or run it less often", name)
                     : fmt::format(
                           "make {} cheaper, or run it less often (`--what-if` says "
                           "what a speed-up would save)",
                           name);
  if (v.ds2_needed == 0)
    return fmt::format(
        "add instances of {} (`snailtrail scale policy` gives the number when rates are known)",
        name);
  if (v.ds2_needed > v.ds2_now)
    return fmt::format("add instances of {}: DS2 says {} (now {})", name, v.ds2_needed, v.ds2_now);
  return fmt::format(
      "DS2 says {} instance{} of {} keep up with the sources' observed rate (now {}); for a "
      "higher rate, `snailtrail scale policy --source-rates` sizes it",
      v.ds2_needed, v.ds2_needed == 1 ? "" : "s", name, v.ds2_now);
}

}  // namespace

// One sentence for the verdict (output/verdict_text.hpp).
std::string verdict_text(const Verdict& v, const Names& names) {
  if (v.kind == VerdictKind::communication) {
    auto worker = [&](uint32_t w) {
      return w < names.worker.size() ? printable(names.worker[w]) : std::string("?");
    };
    const bool pair = v.top_pair_cp > 0;
    const std::string from = worker(v.top_pair.first), to = worker(v.top_pair.second);
    const std::string most =
        pair ? fmt::format(", most from {} to {} ({})", from, to, pct(v.top_pair_cp)) : "";
    if (v.one_process)
      return fmt::format(
          "Hand-offs between threads limit latency: messages are {} of the critical paths{}. "
          "In one process they go through memory: look at {} (a receiver busy elsewhere, a "
          "queue that fills).",
          pct(v.cp), most,
          pair ? fmt::format("the queue from {} to {}", from, to)
               : std::string("the queues between the threads that wait for each other most"));
    return fmt::format(
        "Communication limits latency: messages are {} of the critical paths{}. Next: "
        "co-locate the operators that talk most, batch messages, or check the network.",
        pct(v.cp), most);
  }
  if (v.kind == VerdictKind::wait) return wait_text(v, names);
  if (v.kind == VerdictKind::input && v.input_idle > 0)
    return fmt::format(
        "The job keeps up with its input: every worker waited, some for input, {} of the "
        "time. Next: nothing limits it at this rate; load it more to find what would.",
        pct(v.input_idle));
  const auto* it = std::find_if(std::begin(kVerdictSentences), std::end(kVerdictSentences),
                                [&](const VerdictSentence& x) { return x.kind == v.kind; });
  if (it == std::end(kVerdictSentences)) return {};
  const bool activity = v.kind == VerdictKind::activity;
  const bool stage = v.kind == VerdictKind::op && is_stage(verdict_name(v, names));
  return fmt::format(
      fmt::runtime(it->text), fmt::arg("name", shown_name(v, names)), fmt::arg("cp", pct(v.cp)),
      fmt::arg("busy", pct(v.busy)), fmt::arg("rank", rank_text(v.busy_rank)),
      fmt::arg("worker", v.top_worker < names.worker.size() ? printable(names.worker[v.top_worker])
                                                            : std::string("?")),
      fmt::arg("worker_cp", pct(v.top_worker_cp)), fmt::arg("saving", saving_text(v.what_if, "it")),
      fmt::arg("verb", stage ? "limits the job" : "is the bottleneck"),
      fmt::arg("unit", v.kind != VerdictKind::op ? ""
                       : stage                   ? "Spark "
                                                 : "Operator "),
      fmt::arg("tasks", v.kind == VerdictKind::op
                            ? tasks_text(v.what_if, stage ? "tasks" : "instances")
                            : std::string()),
      fmt::arg("advice", activity ? activity_advice(static_cast<ActivityType>(v.id)) : ""),
      fmt::arg("op_advice",
               v.kind == VerdictKind::op ? op_advice(v, shown_name(v, names)) : std::string()));
}

namespace {

// A window's finding in a few words, for the run verdict's tally of its windows.
std::string finding_text(const VerdictTally::Entry& e, const Names& names) {
  Verdict v;
  v.kind = e.kind;
  v.id = e.id;
  switch (e.kind) {
    case VerdictKind::straggler:
      return "straggler " + shown_name(v, names);
    case VerdictKind::worker:
      return shown_name(v, names);
    case VerdictKind::wait:
      return "waits on " + shown_name(v, names);
    case VerdictKind::op:
      return "operator " + shown_name(v, names);
    case VerdictKind::activity:
      return shown_name(v, names);
    case VerdictKind::instrumentation:
      return "unknown time";
    case VerdictKind::communication:
      return "communication";
    case VerdictKind::input:
      return "the input";
    case VerdictKind::balanced:
      return "nothing standing out";
    case VerdictKind::no_cp:
      break;
  }
  return "no critical path";
}

}  // namespace

namespace output_detail {

std::string run_verdict_text(const RunVerdict& r, const Names& names) {
  std::string text = verdict_text(r.verdict, names);
  const uint64_t m = r.windows_with_paths;
  if (m <= 1) return text;
  const bool balanced = r.verdict.kind == VerdictKind::balanced;
  const std::string what = balanced ? "find nothing standing out" : "find this";
  if (r.windows == m)
    text += fmt::format(" Windows: all {} {}", m, what);
  else
    text += fmt::format(" Windows: {} of {} {}", r.windows, m, what);
  for (size_t k = 0; k < r.others.size(); ++k)
    text +=
        fmt::format("{} {} {} {}", k ? "," : ";", r.others[k].windows,
                    r.others[k].windows == 1 ? "finds" : "find", finding_text(r.others[k], names));
  return text + ".";
}

std::vector<WaitCause> wait_causes(const Names& names) {
  std::vector<WaitCause> causes;
  for (size_t w = 0; w < names.worker.size(); ++w) {
    const WaitCause c = wait_cause_of(names.worker[w]);
    if (c == WaitCause::none) continue;
    causes.resize(names.worker.size(), WaitCause::none);
    causes[w] = c;
  }
  return causes;
}

RunVerdict run_verdict(const Aggregate& agg, const Names& names, const VerdictEnricher& enrich) {
  RunVerdict r = decide_run_verdict(agg.verdicts, agg.cp, agg.conventional, agg.what_if);
  r.verdict = name_the_wait(r.verdict, wait_causes(names), agg.cp, agg.conventional, agg.what_if);
  if (r.verdict.kind == VerdictKind::input && agg.covered_ns > 0)
    r.verdict.input_idle =
        static_cast<double>(agg.diagnostics.input_idle_ns) / static_cast<double>(agg.covered_ns);
  if (enrich) enrich(r.verdict);
  return r;
}

}  // namespace output_detail

using output_detail::run_verdict;
using output_detail::run_verdict_text;

namespace {

// The verdict object (docs/OUTPUT.md): a run's adds how many windows find it and what the
// others find.
void put_verdict(Buf& out, const Verdict& v, const Names& names, const std::vector<Hint>& hints,
                 const RunVerdict* run = nullptr) {
  put(out, "{\"kind\":");
  append_json_string(out, name_of(v.kind));
  put(out, ",\"name\":");
  const std::string name = verdict_name(v, names);
  if (name.empty())
    put(out, "null");
  else
    append_json_string(out, name, kJsonNames);
  put(out, ",\"text\":");
  append_json_string(out, run ? run_verdict_text(*run, names) : verdict_text(v, names), kJsonNames);
  if (v.kind == VerdictKind::wait) {
    put(out, ",\"cause\":");
    append_json_string(out, name_of(v.cause));
  }
  if (v.ds2_needed > 0)
    fmt::format_to(std::back_inserter(out), ",\"ds2\":{{\"instances\":{},\"now\":{}}}",
                   v.ds2_needed, v.ds2_now);
  if (run) {
    fmt::format_to(std::back_inserter(out), ",\"windows\":{},\"windows_with_paths\":{}",
                   run->windows, run->windows_with_paths);
    put(out, ",\"others\":[");
    for (size_t k = 0; k < run->others.size(); ++k) {
      const VerdictTally::Entry& e = run->others[k];
      put(out, k ? ",{\"kind\":" : "{\"kind\":");
      append_json_string(out, name_of(e.kind));
      put(out, ",\"name\":");
      Verdict x;
      x.kind = e.kind;
      x.id = e.id;
      append_json_string(out, verdict_name(x, names), kJsonNames);
      fmt::format_to(std::back_inserter(out), ",\"windows\":{}}}", e.windows);
    }
    out.push_back(']');
  }
  if (!hints.empty()) {
    put(out, ",\"hints\":[");
    for (size_t i = 0; i < hints.size(); ++i) {
      put(out, i ? ",{\"kind\":" : "{\"kind\":");
      append_json_string(out, name_of(hints[i].kind));
      put(out, ",\"text\":");
      append_json_string(out, hints[i].text, kJsonNames);
      out.push_back('}');
    }
    out.push_back(']');
  }
  out.push_back('}');
}

}  // namespace

void write_verdict_json(Buf& out, const WindowSummary& w, const Names& names) {
  const Verdict v = decide_verdict(w.cp, w.conventional, w.has_paths, w.what_if,
                                   static_cast<double>(w.cp_ns), input_idle_share(w));
  put_verdict(
      out, name_the_wait(v, output_detail::wait_causes(names), w.cp, w.conventional, w.what_if),
      names, decide_hints(w.cp, w.diagnostics, w.has_paths, w.window.end - w.window.start, 1));
}

void write_run_verdict_json(Buf& out, const Aggregate& agg, const Names& names,
                            const VerdictEnricher& enrich) {
  const RunVerdict r = run_verdict(agg, names, enrich);
  put_verdict(out, r.verdict, names,
              decide_hints(agg.cp, agg.diagnostics, agg.windows_with_paths > 0, agg.diag_weight_ns,
                           agg.windows),
              &r);
}

}  // namespace snailtrail
