#include "summary/verdict.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "summary/summary.hpp"

namespace snailtrail {
namespace {

// Thresholds of the rules (shares of the critical paths).
constexpr double kUnknownDominates = 0.5;
constexpr double kActivityDominates = 0.4;
constexpr double kStragglerMin = 0.5;       // a straggler holds most of the CP,
constexpr double kStragglerOverNext = 2.0;  // twice the next worker's,
constexpr double kStragglerOverBusy = 2.0;  // and twice its share of the work
constexpr double kOperatorDominates = 0.4;
constexpr double kCommunicationDominates = 0.3;
constexpr double kInputDominates = 0.5;

double at(const std::array<double, kActivityTypeCount>& a, ActivityType t) {
  return a[static_cast<int>(t)];
}

// Rank (1 = largest) of `value` among `values`.
template <typename It, typename Get>
uint32_t rank_of(It begin, It end, double value, Get get) {
  uint32_t r = 1;
  for (It it = begin; it != end; ++it)
    if (get(*it) > value) ++r;
  return r;
}

// The row about (kind, id) that saves most; with `peer`, only rows of that basis.
const WhatIf* best_what_if(const std::vector<WhatIf>& what_if, WhatIfKind kind, uint32_t id,
                           std::optional<bool> peer = std::nullopt) {
  const WhatIf* best = nullptr;
  for (const WhatIf& x : what_if)
    if (x.kind == kind && x.id == id && (!peer || x.peer_median == *peer) &&
        (!best || x.saved_ns > best->saved_ns))
      best = &x;
  return best;
}

}  // namespace

const char* name_of(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::no_cp:
      return "no_cp";
    case VerdictKind::instrumentation:
      return "instrumentation";
    case VerdictKind::activity:
      return "activity";
    case VerdictKind::straggler:
      return "straggler";
    case VerdictKind::op:
      return "operator";
    case VerdictKind::communication:
      return "communication";
    case VerdictKind::input:
      return "input";
    case VerdictKind::balanced:
      return "balanced";
    case VerdictKind::worker:
      return "worker";
    case VerdictKind::wait:
      return "wait";
  }
  return "?";
}

namespace {

// The worker with the most CP (its index and share; -1 when there is none).
std::pair<uint32_t, double> top_worker(const Groups& cp) {
  uint32_t w1 = 0;
  double c1 = -1;
  for (size_t w = 0; w < cp.worker.size(); ++w)
    if (cp.worker[w] > c1) {
      c1 = cp.worker[w];
      w1 = static_cast<uint32_t>(w);
    }
  return {w1, c1};
}

}  // namespace

Verdict verdict_about(VerdictKind kind, uint32_t id, const Groups& cp, const Groups& conv,
                      const std::vector<WhatIf>& what_if) {
  Verdict v;
  v.kind = kind;
  v.id = id;
  const auto [w1, c1] = top_worker(cp);
  switch (kind) {
    case VerdictKind::no_cp:
      v.id = 0;
      break;
    case VerdictKind::straggler:
    case VerdictKind::worker:
    case VerdictKind::wait:
      v.cp = id < cp.worker.size() ? cp.worker[id] : 0;
      v.busy = id < conv.worker.size() ? conv.worker[id] : 0;
      v.busy_rank =
          rank_of(conv.worker.begin(), conv.worker.end(), v.busy, [](double x) { return x; });
      v.what_if = best_what_if(what_if, WhatIfKind::worker, id);
      break;
    case VerdictKind::op:
      for (const auto& [op, share] : cp.op)
        if (op == id) v.cp = share;
      for (const auto& [op, share] : conv.op)
        if (op == id) v.busy = share;
      v.busy_rank =
          rank_of(conv.op.begin(), conv.op.end(), v.busy, [](const auto& p) { return p.second; });
      // Its k-times-faster row: the one that measures its tasks (the evidence of skew).
      v.what_if = best_what_if(what_if, WhatIfKind::op, id, false);
      if (!v.what_if) v.what_if = best_what_if(what_if, WhatIfKind::op, id);
      break;
    case VerdictKind::instrumentation:
    case VerdictKind::activity:
    case VerdictKind::communication:
    case VerdictKind::input: {
      const auto t = static_cast<ActivityType>(id);
      v.cp = kind == VerdictKind::communication ? at(cp.activity, ActivityType::data_message) +
                                                      at(cp.activity, ActivityType::control_message)
                                                : at(cp.activity, t);
      v.busy = at(conv.activity, t);
      v.busy_rank =
          rank_of(conv.activity.begin(), conv.activity.end(), v.busy, [](double x) { return x; });
      v.top_worker = w1;
      v.top_worker_cp = std::max(c1, 0.0);
      v.what_if = best_what_if(what_if, WhatIfKind::activity, id);
      if (kind == VerdictKind::communication)  // the pair whose messages hold the most CP
        for (const CommCell& c : cp.communication)
          if (c.value > v.top_pair_cp) {
            v.top_pair_cp = c.value;
            v.top_pair = {c.src, c.dst};
          }
      break;
    }
    case VerdictKind::balanced:
      v.id = w1;
      v.cp = std::max(c1, 0.0);
      break;
  }
  return v;
}

namespace {

// The row of `kind` ("speedup times faster", not the peer median) that saves most.
const WhatIf* top_saving(const std::vector<WhatIf>& what_if, WhatIfKind kind) {
  const WhatIf* best = nullptr;
  for (const WhatIf& x : what_if)
    if (x.kind == kind && !x.peer_median && (!best || x.saved_ns > best->saved_ns)) best = &x;
  return best;
}

// The what-if rules: the worker or operator whose speed-up saves most. A worker is the
// straggler only when it is slower than peers running the same operators (its peer-median
// row saves something) and its saving is a real part of the span and of the best one;
// else the operator that saves most, else the worker (no operator saves enough: a thread
// of a capture without operators). Returns false when no saving reaches kSavingMin.
bool decide_by_saving(const Groups& cp, const std::vector<WhatIf>& what_if, double span_ns,
                      VerdictKind& kind, uint32_t& id) {
  const WhatIf* w = top_saving(what_if, WhatIfKind::worker);
  const WhatIf* o = top_saving(what_if, WhatIfKind::op);
  if (o && o->id == kNone) o = nullptr;
  const double ws = w ? w->saved_ns : 0, os = o ? o->saved_ns : 0;
  const double best = std::max(ws, os);
  if (!(span_ns > 0) || best < kSavingMin * span_ns) return false;
  if (w && cp.worker.size() >= 2 && ws >= kSavingMin * span_ns && ws >= kStragglerOfBest * best) {
    bool slower = false;
    for (const WhatIf& x : what_if)
      if (x.kind == WhatIfKind::worker && x.id == w->id && x.peer_median && x.saved_ns > 0)
        slower = true;
    if (slower) {
      kind = VerdictKind::straggler;
      id = w->id;
      return true;
    }
  }
  // Not a straggler: the operator is what one can act on (a worker's saving is all of its
  // operators'), when it saves a real part of the span.
  if (o && os >= kSavingMin * span_ns) {
    kind = VerdictKind::op;
    id = o->id;
    return true;
  }
  kind = VerdictKind::worker;
  id = w->id;
  return true;
}

bool has_saving_rows(const std::vector<WhatIf>& what_if) {
  return std::any_of(what_if.begin(), what_if.end(), [](const WhatIf& x) {
    return x.kind != WhatIfKind::activity && !x.peer_median;
  });
}

}  // namespace

Verdict decide_verdict(const Groups& cp, const Groups& conv, bool has_paths,
                       const std::vector<WhatIf>& what_if, double span_ns, double input_idle) {
  if (!has_paths) return verdict_about(VerdictKind::no_cp, 0, cp, conv, what_if);
  auto about = [&](VerdictKind kind, uint32_t id) {
    return verdict_about(kind, id, cp, conv, what_if);
  };
  // The worker with the most CP, and the next one.
  uint32_t w1 = 0;
  double c1 = -1, c2 = 0;
  for (size_t w = 0; w < cp.worker.size(); ++w) {
    if (cp.worker[w] > c1) {
      c2 = std::max(c2, c1);
      c1 = cp.worker[w];
      w1 = static_cast<uint32_t>(w);
    } else {
      c2 = std::max(c2, cp.worker[w]);
    }
  }
  const double unknown = at(cp.activity, ActivityType::unknown);
  if (unknown >= kUnknownDominates)
    return about(VerdictKind::instrumentation, static_cast<uint32_t>(ActivityType::unknown));
  // Idle most of the time, waiting for input: what the busy rest spends is not what
  // limits the job (waking up, for one, would dominate it).
  if (input_idle >= kInputIdleMin) {
    Verdict v = about(VerdictKind::input, static_cast<uint32_t>(ActivityType::input));
    v.input_idle = input_idle;
    return v;
  }
  // A dominant activity type that is not the job's own work or its input.
  ActivityType top_type = ActivityType::processing;
  double top_share = -1;
  for (int t = 0; t < kActivityTypeCount; ++t) {
    const auto type = static_cast<ActivityType>(t);
    if (type == ActivityType::processing || type == ActivityType::input ||
        type == ActivityType::unknown || type == ActivityType::waiting || is_communication(type))
      continue;
    if (cp.activity[t] > top_share) {
      top_share = cp.activity[t];
      top_type = type;
    }
  }
  if (top_share >= kActivityDominates)
    return about(VerdictKind::activity, static_cast<uint32_t>(top_type));
  const double input = at(cp.activity, ActivityType::input);
  if (input >= kInputDominates)
    return about(VerdictKind::input, static_cast<uint32_t>(ActivityType::input));
  if (has_saving_rows(what_if) && span_ns > 0) {
    VerdictKind kind = VerdictKind::balanced;
    uint32_t id = 0;
    if (decide_by_saving(cp, what_if, span_ns, kind, id)) return about(kind, id);
  } else if (cp.worker.size() >= 2 && c1 >= kStragglerMin && c1 >= kStragglerOverNext * c2 &&
             w1 < conv.worker.size() && c1 >= kStragglerOverBusy * conv.worker[w1])
    return about(VerdictKind::straggler, w1);
  const auto top_op = std::max_element(
      cp.op.begin(), cp.op.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top_op != cp.op.end() && top_op->first != kNone && top_op->second >= kOperatorDominates)
    return about(VerdictKind::op, top_op->first);
  const double comm =
      at(cp.activity, ActivityType::data_message) + at(cp.activity, ActivityType::control_message);
  if (comm >= kCommunicationDominates) {
    const ActivityType t = at(cp.activity, ActivityType::data_message) >=
                                   at(cp.activity, ActivityType::control_message)
                               ? ActivityType::data_message
                               : ActivityType::control_message;
    return about(VerdictKind::communication, static_cast<uint32_t>(t));
  }
  return about(VerdictKind::balanced, w1);
}

namespace {

WaitCause cause_of(const std::vector<WaitCause>& causes, uint32_t w) {
  return w < causes.size() ? causes[w] : WaitCause::none;
}

// The pseudo-worker whose verdict is `v`'s subject (kNone: none).
uint32_t waited_on(const Verdict& v, const std::vector<WaitCause>& causes, const Groups& cp) {
  switch (v.kind) {
    case VerdictKind::straggler:
    case VerdictKind::worker:
      return cause_of(causes, v.id) != WaitCause::none ? v.id : kNone;
    case VerdictKind::activity: {
      if (static_cast<ActivityType>(v.id) != ActivityType::io) return kNone;
      uint32_t top = kNone;  // the pseudo-worker with the most CP
      for (uint32_t w = 0; w < cp.worker.size(); ++w)
        if (cause_of(causes, w) != WaitCause::none && cp.worker[w] > 0 &&
            (top == kNone || cp.worker[w] > cp.worker[top]))
          top = w;
      return top;
    }
    default:
      return kNone;
  }
}

}  // namespace

Verdict name_the_wait(const Verdict& v, const std::vector<WaitCause>& causes, const Groups& cp,
                      const Groups& conv, const std::vector<WhatIf>& what_if) {
  if (v.kind == VerdictKind::balanced && cause_of(causes, v.id) != WaitCause::none) {
    // Nothing stands out: name the most critical thread, not a wait's pseudo-worker.
    Verdict b = v;
    b.cp = 0;
    for (uint32_t w = 0; w < cp.worker.size(); ++w)
      if (cause_of(causes, w) == WaitCause::none && cp.worker[w] > b.cp) {
        b.id = w;
        b.cp = cp.worker[w];
      }
    return b;
  }
  const uint32_t w = waited_on(v, causes, cp);
  if (w == kNone) return v;
  Verdict x = verdict_about(VerdictKind::wait, w, cp, conv, what_if);
  x.cause = causes[w];
  x.top_worker = w;
  x.top_worker_cp = x.cp;
  x.cp = 0;  // all waits of this cause
  for (uint32_t k = 0; k < cp.worker.size(); ++k)
    if (cause_of(causes, k) == x.cause) x.cp += cp.worker[k];
  x.one_process = v.one_process;
  x.no_source_rates = v.no_source_rates;
  return x;
}

void VerdictTally::add(const Verdict& v, int64_t cp_ns) {
  const double w = static_cast<double>(std::max<int64_t>(cp_ns, 1));
  ++windows;
  weight_ns += w;
  const uint32_t id = v.kind == VerdictKind::balanced ? 0 : v.id;
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const Entry& e) { return e.kind == v.kind && e.id == id; });
  if (it == entries.end()) {
    entries.push_back({v.kind, id, 0, 0, 0});
    it = entries.end() - 1;
  }
  ++it->windows;
  it->weight_ns += w;
  it->critical_ns += v.cp * w;
}

RunVerdict decide_run_verdict(const VerdictTally& tally, const Groups& cp, const Groups& conv,
                              const std::vector<WhatIf>& what_if) {
  RunVerdict r;
  r.windows_with_paths = tally.windows;
  if (tally.windows == 0) {
    r.verdict = verdict_about(VerdictKind::no_cp, 0, cp, conv, what_if);
    return r;
  }
  // The findings other than "nothing stands out", most critical time first (ties: more
  // windows, then first seen).
  std::vector<VerdictTally::Entry> found;
  double balanced_ns = 0;
  uint64_t balanced_windows = 0;
  for (const VerdictTally::Entry& e : tally.entries) {
    if (e.kind == VerdictKind::balanced) {
      balanced_ns += e.weight_ns;
      balanced_windows += e.windows;
    } else {
      found.push_back(e);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.critical_ns != b.critical_ns ? a.critical_ns > b.critical_ns : a.windows > b.windows;
  });
  const bool stands_out = !found.empty() && found[0].weight_ns >= kRunCoverage * tally.weight_ns &&
                          found[0].weight_ns >= balanced_ns;
  size_t first_other = 0;
  if (stands_out) {
    r.verdict = verdict_about(found[0].kind, found[0].id, cp, conv, what_if);
    r.windows = found[0].windows;
    first_other = 1;
  } else {
    r.verdict = verdict_about(VerdictKind::balanced, 0, cp, conv, what_if);
    r.windows = balanced_windows;
  }
  for (size_t k = first_other; k < found.size() && r.others.size() < 2; ++k)
    if (!stands_out || found[k].weight_ns >= kRunMention * tally.weight_ns)
      r.others.push_back(found[k]);
  return r;
}

}  // namespace snailtrail
