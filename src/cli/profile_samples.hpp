// `run --profile`: the runtime's symbolized profile (flow/profile/sampler.hpp) into the
// trace's profile blocks (flame/profile_io.hpp), with a line on stderr.
#pragma once

#include <fmt/format.h>

#include "flame/profile_io.hpp"
#include "flow/profile/sampler.hpp"

namespace snailtrail::cli {

inline void attach_profile(const flow::profile::Profile& p, Trace& t, bool quiet) {
  flame::SampleSet set;
  set.period_ns = p.period_ns;
  std::vector<uint32_t> ids(p.frames.size());
  for (size_t f = 0; f < p.frames.size(); ++f) ids[f] = set.intern_frame(p.frames[f]);
  std::vector<uint32_t> frames;
  uint64_t on = 0, off = 0;
  for (const flow::profile::Profile::Sample& s : p.samples) {
    frames.clear();
    for (uint32_t k = 0; k < s.depth; ++k) frames.push_back(ids[p.stack[s.first + k]]);
    flame::StackSample x;
    x.stack = set.intern_stack(frames);
    x.worker = x.thread = s.worker;
    x.ts = s.ts;
    x.kind = s.off_cpu ? flame::SampleKind::off_cpu : flame::SampleKind::on_cpu;
    x.activity = s.activity;
    x.count = s.count;
    set.samples.push_back(x);
    (s.off_cpu ? off : on) += 1;
  }
  flame::samples_to_trace(set, t);
  if (!quiet)
    fmt::print(stderr,
               "profile: {} on-CPU samples ({} ns of CPU each), {} off-CPU waits, {} frames, "
               "{} samples dropped (full ring)\n",
               on, p.period_ns, off, p.frames.size(), p.dropped);
}

}  // namespace snailtrail::cli
