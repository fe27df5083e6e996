#include "summary/verdict.hpp"

#include <algorithm>

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

const WhatIf* best_what_if(const std::vector<WhatIf>& what_if, WhatIfKind kind, uint32_t id) {
  const WhatIf* best = nullptr;
  for (const WhatIf& x : what_if)
    if (x.kind == kind && x.id == id && (!best || x.saved_ns > best->saved_ns)) best = &x;
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
  }
  return "?";
}

Verdict decide_verdict(const Groups& cp, const Groups& conv, bool has_paths,
                       const std::vector<WhatIf>& what_if) {
  Verdict v;
  if (!has_paths) {
    v.kind = VerdictKind::no_cp;
    return v;
  }
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
  auto worker_verdict = [&](VerdictKind kind) {
    v.kind = kind;
    v.id = w1;
    v.cp = c1;
    v.busy = w1 < conv.worker.size() ? conv.worker[w1] : 0;
    v.busy_rank =
        rank_of(conv.worker.begin(), conv.worker.end(), v.busy, [](double x) { return x; });
    v.what_if = best_what_if(what_if, WhatIfKind::worker, w1);
  };
  auto activity_verdict = [&](VerdictKind kind, ActivityType t, double share) {
    v.kind = kind;
    v.id = static_cast<uint32_t>(t);
    v.cp = share;
    v.busy = at(conv.activity, t);
    v.busy_rank =
        rank_of(conv.activity.begin(), conv.activity.end(), v.busy, [](double x) { return x; });
    v.top_worker = w1;
    v.top_worker_cp = std::max(c1, 0.0);
    v.what_if = best_what_if(what_if, WhatIfKind::activity, v.id);
  };

  const double unknown = at(cp.activity, ActivityType::unknown);
  if (unknown >= kUnknownDominates) {
    activity_verdict(VerdictKind::instrumentation, ActivityType::unknown, unknown);
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
  if (top_share >= kActivityDominates) {
    activity_verdict(VerdictKind::activity, top_type, top_share);
    return v;
  }
  const double input = at(cp.activity, ActivityType::input);
  if (input >= kInputDominates) {
    activity_verdict(VerdictKind::input, ActivityType::input, input);
    return v;
  }
  if (cp.worker.size() >= 2 && c1 >= kStragglerMin && c1 >= kStragglerOverNext * c2 &&
      w1 < conv.worker.size() && c1 >= kStragglerOverBusy * conv.worker[w1]) {
    worker_verdict(VerdictKind::straggler);
    return v;
  }
  const auto top_op = std::max_element(
      cp.op.begin(), cp.op.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top_op != cp.op.end() && top_op->first != kNone && top_op->second >= kOperatorDominates) {
    v.kind = VerdictKind::op;
    v.id = top_op->first;
    v.cp = top_op->second;
    for (const auto& [id, share] : conv.op)
      if (id == v.id) v.busy = share;
    v.busy_rank =
        rank_of(conv.op.begin(), conv.op.end(), v.busy, [](const auto& p) { return p.second; });
    v.what_if = best_what_if(what_if, WhatIfKind::op, v.id);
    return v;
  }
  const double comm =
      at(cp.activity, ActivityType::data_message) + at(cp.activity, ActivityType::control_message);
  if (comm >= kCommunicationDominates) {
    const ActivityType t = at(cp.activity, ActivityType::data_message) >=
                                   at(cp.activity, ActivityType::control_message)
                               ? ActivityType::data_message
                               : ActivityType::control_message;
    activity_verdict(VerdictKind::communication, t, comm);
    return v;
  }
  v.kind = VerdictKind::balanced;
  v.id = w1;
  v.cp = std::max(c1, 0.0);
  return v;
}

}  // namespace snailtrail
