// speedscope's file format (docs/FLAME.md, "speedscope"): the merged root-to-leaf paths
// as "sampled" profiles over one shared frames table, written in one pass over the
// sorted paths (no tree, no DOM).
#include <fmt/format.h>

#include <iterator>
#include <map>

#include "flame/flamegraph.hpp"
#include "flame/paths.hpp"
#include "output/names.hpp"

namespace snailtrail::flame {
namespace {

std::string who_name(const SampleSet& set, const SpeedscopeOptions& so, uint64_t who) {
  const auto id = static_cast<uint32_t>(who);
  if (!(who & kThreadBit)) {
    auto n = so.worker_names.find(id);
    return n != so.worker_names.end() && !n->second.empty() ? n->second
                                                            : fmt::format("worker {}", id);
  }
  if (id == kNoId) return "no thread";
  auto n = set.thread_names.find(id);
  return n != set.thread_names.end() ? fmt::format("thread {} {}", id, n->second)
                                     : fmt::format("thread {}", id);
}

}  // namespace

std::string to_speedscope(const SampleSet& set, const std::vector<double>& weights,
                          TreeOptions options, Mode mode, const SpeedscopeOptions& so) {
  options.split_by_who = true;
  const PathSet ps = collect_paths(set, weights, options);
  // Frames are numbered as first used, so the table holds only frames of written stacks.
  std::vector<uint32_t> frame_of(ps.names.size(), kNoId), frame_names;
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "{{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\", "
                 "\"exporter\": \"snailtrail flamegraph\", \"name\": ");
  append_json_string(out, so.name, kJsonNames);
  fmt::format_to(it, ", \"activeProfileIndex\": 0, \"profiles\": [");

  std::vector<uint32_t> names;
  // One profile of the paths `idx` (in name order): neighbours with equal frame names
  // (the same path of several workers, or names equal after shortening) are one stack.
  std::vector<std::pair<std::vector<uint32_t>, double>> stacks;
  bool first_profile = true;
  auto put_profile = [&](const std::string& name, const std::vector<uint32_t>& idx) {
    stacks.clear();
    double total = 0;
    for (uint32_t i : idx) {
      const PathSet::Path& p = ps.paths[i];
      ps.names_of(set, p, names);
      if (stacks.empty() || stacks.back().first != names) stacks.emplace_back(names, 0.0);
      stacks.back().second += p.weight;
      total += p.weight;
    }
    fmt::format_to(it, "{}{{\"type\": \"sampled\", \"name\": ", first_profile ? "" : ", ");
    first_profile = false;
    append_json_string(out, name, kJsonNames);
    fmt::format_to(it, ", \"unit\": \"{}\", \"startValue\": 0, \"endValue\": {}, \"samples\": [",
                   mode == Mode::on_cpu ? "none" : "nanoseconds", total);
    for (size_t s = 0; s < stacks.size(); ++s) {
      fmt::format_to(it, "{}[", s ? ", " : "");
      const std::vector<uint32_t>& st = stacks[s].first;
      for (size_t d = 0; d < st.size(); ++d) {
        uint32_t& f = frame_of[st[d]];
        if (f == kNoId) {
          f = static_cast<uint32_t>(frame_names.size());
          frame_names.push_back(st[d]);
        }
        fmt::format_to(it, "{}{}", d ? "," : "", f);
      }
      out.push_back(']');
    }
    fmt::format_to(it, "], \"weights\": [");
    for (size_t s = 0; s < stacks.size(); ++s)
      fmt::format_to(it, "{}{}", s ? ", " : "", stacks[s].second);
    fmt::format_to(it, "]}}");
  };

  std::vector<uint32_t> all(ps.paths.size());
  std::map<uint64_t, std::vector<uint32_t>> by_who;
  for (uint32_t i = 0; i < ps.paths.size(); ++i) {
    all[i] = i;
    by_who[ps.paths[i].who].push_back(i);
  }
  put_profile(fmt::format("all, {}", mode_name(mode)), all);
  if (by_who.size() > 1)
    for (const auto& [who, idx] : by_who)
      put_profile(fmt::format("{}, {}", who_name(set, so, who), mode_name(mode)), idx);

  fmt::format_to(it, "], \"shared\": {{\"frames\": [");
  for (size_t f = 0; f < frame_names.size(); ++f) {
    fmt::format_to(it, "{}{{\"name\": ", f ? ", " : "");
    append_json_string(out, ps.names[frame_names[f]], kJsonNames);
    out.push_back('}');
  }
  fmt::format_to(it, "]}}}}\n");
  return std::string(out.data(), out.size());
}

}  // namespace snailtrail::flame
