// The verdict (docs/OUTPUT.md): one finding per window and for the whole run, naming
// the bottleneck, its evidence (CP share against the conventional profile, the what-if
// saving when computed) and the next step. Decided from the summaries by fixed rules, in
// this order: no CP; unknown time; a dominant activity other than processing and input;
// the job keeping up with its input; a straggler worker; a bottleneck operator;
// communication; otherwise nothing stands out. With what-if rows, a straggler and a
// bottleneck are the ones whose speed-up saves most (docs/PAG.md §verdict).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "summary/what_if.hpp"
#include "trace/wait_cause.hpp"

namespace snailtrail {

struct Groups;

enum class VerdictKind : uint8_t {
  no_cp,            // no transient critical path: nothing to rank
  instrumentation,  // most critical time is `unknown`
  activity,         // one activity type other than processing dominates (scheduling, …)
  straggler,        // one worker on the critical paths far beyond its share of work
  op,               // one operator holds most critical paths
  communication,    // messages hold many of the critical paths
  input,            // the sources' input paces the job; operators keep up
  balanced,         // nothing stands out
  worker,  // one worker (a thread of a capture) saves most, with no peers to be slow against
  wait,    // kernel trace: threads waiting on a timer, a disk, the network or an interrupt
};

struct Verdict {
  VerdictKind kind = VerdictKind::balanced;
  uint32_t id = 0;          // worker (dense index), operator id or ActivityType, per kind
  double cp = 0;            // the subject's CP share
  double busy = 0;          // its conventional share (busy time for workers/operators)
  uint32_t busy_rank = 0;   // its rank in the conventional profile (1 = first)
  uint32_t top_worker = 0;  // for activity verdicts: the worker with the most CP
  double top_worker_cp = 0;
  // For communication verdicts: the (sender, receiver) pair whose messages hold the most
  // CP (dense worker indices), and that share; 0 when no pair has any.
  std::pair<uint32_t, uint32_t> top_pair{0, 0};
  double top_pair_cp = 0;
  const WhatIf* what_if = nullptr;  // the largest saving about the subject, if computed
  // For operator verdicts, when the trace carries rates: DS2's parallelism for the
  // operator and its current one (0: not known). Set by who can run DS2 (cli/verdict_ds2).
  uint32_t ds2_needed = 0, ds2_now = 0;
  // The workers are threads of one process (or machine): a message is a hand-off through
  // memory, not the network. Set by who knows the input's kind (cli/verdict_ds2).
  bool one_process = false;
  // The input has no sources to size operators for (a profiler capture, a batch job, a span
  // or kernel trace): no "add instances". Set by who knows the input's kind.
  bool no_source_rates = false;
  // For input verdicts: the share of the time every worker waited, some for its input
  // (the job keeps up), when that decided it; 0 when the sources' CP did.
  double input_idle = 0;
  // For wait verdicts (id: the pseudo-worker with the most CP, see trace/wait_cause.hpp):
  // what the threads waited for; `cp` is the share of the critical paths on all
  // pseudo-workers of that cause, `top_worker_cp` the named one's.
  WaitCause cause = WaitCause::none;
};

// `span_ns`: the time the CP is spread over (WindowSummary::cp_ns; for a run, the sum
// over its windows, as its what-if savings are), against which savings are weighed.
// `input_idle`: the share of the window every worker waited, some for its input
// (Diagnostics::input_idle_ns): from kInputIdleMin on, the job keeps up with its input.
Verdict decide_verdict(const Groups& cp, const Groups& conventional, bool has_paths,
                       const std::vector<WhatIf>& what_if, double span_ns = 0,
                       double input_idle = 0);
inline constexpr double kInputIdleMin = 0.5;

// Thresholds of the what-if rules (docs/PAG.md §verdict): a straggler's or bottleneck's 2x
// saving is at least kSavingMin of the span, and a straggler's at least kStragglerOfBest of
// the best saving of any worker or operator.
inline constexpr double kSavingMin = 0.05;
inline constexpr double kStragglerOfBest = 0.5;

const char* name_of(VerdictKind kind);

// The verdict about a given subject (kind and id, as decide_verdict sets them) with the
// evidence of these summaries: its CP and conventional shares, rank, top worker, saving.
Verdict verdict_about(VerdictKind kind, uint32_t id, const Groups& cp, const Groups& conventional,
                      const std::vector<WhatIf>& what_if);

// Kernel traces (docs/PAG.md §verdict): their waits on timers, disks, the network and
// interrupts are the `io` of pseudo-workers (trace/wait_cause.hpp). `causes[w]` is what
// worker w stands for (none for a thread; empty when the trace has no pseudo-worker). A
// verdict about such a worker (an io verdict, a worker or a straggler) becomes a wait
// verdict naming the cause and its pseudo-worker with the most CP; a balanced verdict
// names the most critical thread instead. Other verdicts are returned as they are.
Verdict name_the_wait(const Verdict& v, const std::vector<WaitCause>& causes, const Groups& cp,
                      const Groups& conventional, const std::vector<WhatIf>& what_if);

// The windows' verdicts of a run, tallied for the whole run's (Aggregate keeps one).
struct VerdictTally {
  struct Entry {
    VerdictKind kind = VerdictKind::balanced;
    uint32_t id = 0;
    uint64_t windows = 0;    // windows whose verdict it is
    double weight_ns = 0;    // their summed cp_ns (the time CP is spread over)
    double critical_ns = 0;  // the subject's CP share x cp_ns summed over them
  };
  std::vector<Entry> entries;  // in order of first appearance
  uint64_t windows = 0;        // windows with paths
  double weight_ns = 0;        // their summed cp_ns
  // A window with paths and its verdict. The balanced kind is one entry, whatever its id.
  void add(const Verdict& v, int64_t cp_ns);
};

// The whole run's verdict, derived from its windows' (docs/OUTPUT.md): the finding with
// the most critical time summed over the windows it was the verdict of stands for the
// run when those windows cover at least kRunCoverage of the run's CP time and no less
// than the windows where nothing stands out; otherwise nothing stands out. The evidence
// is the run's (`cp`, `conventional`: the means over the windows; `what_if`: the savings
// summed over them).
inline constexpr double kRunCoverage = 0.25;
// Another finding is mentioned when its windows cover at least this share of the run.
inline constexpr double kRunMention = 0.2;

struct RunVerdict {
  Verdict verdict;
  uint64_t windows = 0;             // windows with paths whose verdict it is
  uint64_t windows_with_paths = 0;  // all windows with paths
  // Other findings of windows, most critical time first (at most 2): when the run has a
  // bottleneck, those that cover at least kRunMention; when nothing stands out, any.
  std::vector<VerdictTally::Entry> others;
};

RunVerdict decide_run_verdict(const VerdictTally& tally, const Groups& cp,
                              const Groups& conventional, const std::vector<WhatIf>& what_if);

}  // namespace snailtrail
