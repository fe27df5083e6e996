// Aggregated critical-path stacks (folded.hpp).
#include "requests/folded.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace snailtrail::requests {

std::vector<size_t> traces_around(const PathCollection& all, double percentile, double bucket) {
  const auto& traces = all.traces();
  std::vector<size_t> out;
  if (percentile <= 0) {
    for (size_t i = 0; i < traces.size(); ++i) out.push_back(i);
    return out;
  }
  if (traces.empty()) return out;
  std::vector<int64_t> sorted;
  sorted.reserve(traces.size());
  for (const auto& t : traces) sorted.push_back(t.duration_ns);
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  auto value = [&](double x) {
    x = std::clamp(x, 0.0, 100.0);
    // 1e-9: 95 % of 20 is 19 exactly, not 19.000000000000004.
    const double rank = std::ceil(x / 100.0 * n - 1e-9);
    const size_t r = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
    return sorted[std::min(r, sorted.size() - 1)];
  };
  const int64_t lo = value(percentile - bucket), hi = value(percentile + bucket);
  for (size_t i = 0; i < traces.size(); ++i)
    if (traces[i].duration_ns >= lo && traces[i].duration_ns <= hi) out.push_back(i);
  return out;
}

std::vector<int64_t> context_weights(const PathCollection& all, const std::vector<size_t>& traces) {
  std::vector<int64_t> w(all.contexts().size(), 0);
  for (size_t t : traces)
    for (const PathCollection::Step& s : all.traces()[t].path)
      if (s.context != kNoSpan) w[s.context] += s.self_ns;
  return w;
}

std::string context_stack(const PathCollection& all, uint32_t context) {
  std::vector<uint32_t> chain;
  for (uint32_t c = context; c != kNoSpan; c = all.contexts()[c].parent) chain.push_back(c);
  std::string s;
  for (size_t k = chain.size(); k-- > 0;) {
    const UnitPaths::Context& c = all.contexts()[chain[k]];
    if (!s.empty()) s += ';';
    // ';' separates frames and the last ' ' the weight: neither may appear in a frame.
    for (const std::string* part : {&all.name(c.service), &all.name(c.operation)}) {
      for (char ch : *part) s += ch == ';' ? ',' : ch == '\n' ? ' ' : ch;
      if (part == &all.name(c.service)) s += ':';
    }
  }
  return s;
}

namespace {
int64_t us(double ns) {
  return std::llround(ns / 1000.0);
}
}  // namespace

std::vector<FoldedRow> folded_rows(const PathCollection& all, double percentile, double bucket,
                                   size_t* traces) {
  const std::vector<size_t> chosen = traces_around(all, percentile, bucket);
  if (traces) *traces = chosen.size();
  const std::vector<int64_t> w = context_weights(all, chosen);
  std::map<std::string, int64_t> lines;  // sorted, and two contexts may print alike
  for (uint32_t c = 0; c < w.size(); ++c)
    if (w[c] > 0) lines[context_stack(all, c)] += w[c];
  std::vector<FoldedRow> out;
  out.reserve(lines.size());
  for (const auto& [stack, ns] : lines) out.push_back({stack, us(static_cast<double>(ns))});
  return out;
}

std::string folded_stacks(const PathCollection& all, double percentile, double bucket) {
  std::string out;
  for (const FoldedRow& r : folded_rows(all, percentile, bucket))
    out += r.stack + ' ' + std::to_string(r.us) + '\n';
  return out;
}

std::vector<FoldedDiffRow> folded_diff_rows(const PathCollection& all, double a, double b,
                                            double bucket, size_t* traces_a, size_t* traces_b) {
  const std::vector<size_t> ta = traces_around(all, a, bucket), tb = traces_around(all, b, bucket);
  if (traces_a) *traces_a = ta.size();
  if (traces_b) *traces_b = tb.size();
  const std::vector<int64_t> wa = context_weights(all, ta), wb = context_weights(all, tb);
  std::map<std::string, std::pair<int64_t, int64_t>> lines;
  for (uint32_t c = 0; c < wa.size(); ++c)
    if (wa[c] > 0 || wb[c] > 0) {
      auto& [x, y] = lines[context_stack(all, c)];
      x += wa[c];
      y += wb[c];
    }
  const double na = static_cast<double>(std::max<size_t>(ta.size(), 1));
  const double nb = static_cast<double>(std::max<size_t>(tb.size(), 1));
  std::vector<FoldedDiffRow> out;
  out.reserve(lines.size());
  for (const auto& [stack, w] : lines)
    out.push_back(
        {stack, us(static_cast<double>(w.first) / na), us(static_cast<double>(w.second) / nb)});
  return out;
}

std::string folded_diff(const PathCollection& all, double a, double b, double bucket) {
  std::string out;
  for (const FoldedDiffRow& r : folded_diff_rows(all, a, b, bucket))
    out += r.stack + ' ' + std::to_string(r.a_us) + ' ' + std::to_string(r.b_us) + '\n';
  return out;
}

}  // namespace snailtrail::requests
