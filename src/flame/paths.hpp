// The samples' root-to-leaf paths (root frames of TreeOptions, the stack, an off-CPU
// leaf) with their summed weights, sorted by frame names: the flame tree is built from
// them in one sweep, and folded output written without a tree (docs/FLAME.md,
// "Performance").
#pragma once

#include <string>
#include <vector>

#include "flame/flamegraph.hpp"
#include "flame/samples.hpp"

namespace snailtrail::flame {

// Whose a sample is, when paths (or time-ordered lanes) are kept apart: its worker, else
// kThreadBit | its thread.
inline constexpr uint64_t kThreadBit = uint64_t{1} << 32;
inline uint64_t who_of(const StackSample& s) {
  return s.worker != kNoId ? s.worker : (kThreadBit | s.thread);
}

struct PathSet {
  // Names of the frames used, and their order: equal names have equal ranks.
  std::vector<std::string> names;
  std::vector<uint32_t> rank;
  std::vector<uint32_t> frame_name;             // SampleSet frame id -> name id (after shortening)
  std::vector<std::vector<uint32_t>> prefixes;  // root frames (name ids) above a stack
  struct Path {
    uint32_t prefix = 0;    // index into prefixes
    uint32_t stack = 0;     // SampleSet stack
    uint32_t leaf = kNoId;  // name id of a leaf below the stack (off-CPU), or kNoId
    // With TreeOptions::split_by_who: who_of(the sample);
    // paths of different ones are kept apart. 0 otherwise.
    uint64_t who = 0;
    double weight = 0;
  };
  std::vector<Path> paths;  // sorted by their names' ranks, root first
  double total = 0;

  // Name ids of path p, root first, into `out`.
  void names_of(const SampleSet& set, const Path& p, std::vector<uint32_t>& out) const;
};

// The paths of the samples with weight > 0 that pass the options' filters. With
// `sample_path`: per sample, the index of its path in `paths` (kNoId if left out), for
// views that keep the samples' order (time_order.hpp).
PathSet collect_paths(const SampleSet& set, const std::vector<double>& weights,
                      const TreeOptions& options, std::vector<uint32_t>* sample_path = nullptr);

}  // namespace snailtrail::flame
