// Stack samples from any source (folded stacks, `perf script`, the runtime's own
// sampler) in one in-memory model, for `snailtrail flamegraph` (docs/FLAME.md).
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace snailtrail::flame {

inline constexpr uint32_t kNoId = std::numeric_limits<uint32_t>::max();
inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

enum class SampleKind : uint8_t {
  on_cpu = 0,   // a CPU-time sample: `count` samples of `period_ns` each
  off_cpu = 1,  // a wait: `count` is the time waited, in ns
};

struct StackSample {
  int64_t ts = kNoTime;     // ns; kNoTime when the source has no time (folded stacks)
  uint32_t stack = 0;       // index into SampleSet's stacks
  uint32_t thread = kNoId;  // tid (perf) or worker id (runtime); kNoId if unknown
  uint32_t pid = kNoId;     // process id (perf prints it with -F pid), kNoId if unknown
  // The thread's name when the sample was taken (perf's comm), an index into
  // SampleSet::comm; kNoId if unknown. Per sample: a thread that execs changes its name.
  uint32_t comm = kNoId;
  uint32_t worker = kNoId;  // worker id of the activity trace, if known
  uint32_t op = kNoId;      // operator id, if known
  uint8_t activity = 0xff;  // ActivityType the worker was in, 0xff if unknown
  SampleKind kind = SampleKind::on_cpu;
  uint64_t count = 1;  // on-CPU: samples; off-CPU: ns waited
};

// Interned frames and stacks: stack i has frames stack_frames[stack_begin[i] ..
// stack_begin[i + 1]), root first.
class SampleSet {
 public:
  SampleSet() { stack_begin_.push_back(0); }
  // Moves keep the deques' elements in place (the indexes' views stay valid); copies
  // would not.
  SampleSet(SampleSet&&) = default;
  SampleSet& operator=(SampleSet&&) = default;
  SampleSet(const SampleSet&) = delete;
  SampleSet& operator=(const SampleSet&) = delete;

  uint32_t intern_frame(std::string_view name);
  // Interns the stack made of `frames` (root first); equal stacks get one index.
  uint32_t intern_stack(const std::vector<uint32_t>& frames);

  size_t stack_count() const { return stack_begin_.size() - 1; }
  std::pair<const uint32_t*, const uint32_t*> stack(uint32_t s) const {
    return {stack_frames_.data() + stack_begin_[s], stack_frames_.data() + stack_begin_[s + 1]};
  }
  const std::string& frame(uint32_t f) const { return frames_[f]; }
  const std::string& comm(uint32_t c) const { return comms_[c]; }
  uint32_t intern_comm(std::string_view name);
  size_t frame_count() const { return frames_.size(); }

  std::vector<StackSample> samples;
  // Nanoseconds per on-CPU sample (1e9 / Hz), 0 when unknown (needed for mixed views).
  int64_t period_ns = 0;
  // Display names of threads (perf's comm), workers and operators.
  std::unordered_map<uint32_t, std::string> thread_names;
  std::unordered_map<uint32_t, std::string> operator_names;
  // Recoverable problems met while reading, by kind ("perf.bad_lines" -> 3), with the
  // first line of each kind in `first_line`.
  std::vector<std::pair<std::string, uint64_t>> diagnostics;
  std::unordered_map<std::string, uint64_t> first_line;

  void count_problem(const std::string& kind, uint64_t line = 0);

 private:
  // Names live in deques (stable addresses), so the indexes can key on views of them.
  std::deque<std::string> comms_;
  std::unordered_map<std::string_view, uint32_t> comm_index_;
  std::deque<std::string> frames_;
  std::unordered_map<std::string_view, uint32_t> frame_index_;
  std::vector<uint32_t> stack_frames_;
  std::vector<uint32_t> stack_begin_;
  // Open addressing over the stacks themselves (slot: stack id + 1, 0 empty): no key
  // copies, so 1 M distinct stacks cost their frame ids and 8 bytes of table each.
  std::vector<uint32_t> stack_slots_;
  uint64_t hash_stack(const uint32_t* b, const uint32_t* e) const;
  void grow_stack_slots();
};

}  // namespace snailtrail::flame
