// The verdict (docs/OUTPUT.md): one finding per window and for the whole run, naming
// the bottleneck, its evidence (CP share against the conventional profile, the what-if
// saving when computed) and the next step. Decided from the summaries by fixed rules, in
// this order: no CP; unknown time; a dominant activity other than processing and input;
// the job keeping up with its input; a straggler worker; a bottleneck operator;
// communication; otherwise nothing stands out.
#pragma once

#include <cstdint>
#include <vector>

#include "summary/what_if.hpp"

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
};

struct Verdict {
  VerdictKind kind = VerdictKind::balanced;
  uint32_t id = 0;          // worker (dense index), operator id or ActivityType, per kind
  double cp = 0;            // the subject's CP share
  double busy = 0;          // its conventional share (busy time for workers/operators)
  uint32_t busy_rank = 0;   // its rank in the conventional profile (1 = first)
  uint32_t top_worker = 0;  // for activity verdicts: the worker with the most CP
  double top_worker_cp = 0;
  const WhatIf* what_if = nullptr;  // the largest saving about the subject, if computed
};

Verdict decide_verdict(const Groups& cp, const Groups& conventional, bool has_paths,
                       const std::vector<WhatIf>& what_if);

const char* name_of(VerdictKind kind);

}  // namespace snailtrail
