#include "flame/samples.hpp"

namespace snailtrail::flame {

uint32_t SampleSet::intern_frame(std::string_view name) {
  std::string key(name);
  auto it = frame_index_.find(key);
  if (it != frame_index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(frames_.size());
  frames_.push_back(key);
  frame_index_.emplace(std::move(key), id);
  return id;
}

uint32_t SampleSet::intern_stack(const std::vector<uint32_t>& frames) {
  std::string key(reinterpret_cast<const char*>(frames.data()), frames.size() * sizeof(uint32_t));
  auto it = stack_index_.find(key);
  if (it != stack_index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(stack_count());
  stack_frames_.insert(stack_frames_.end(), frames.begin(), frames.end());
  stack_begin_.push_back(static_cast<uint32_t>(stack_frames_.size()));
  stack_index_.emplace(std::move(key), id);
  return id;
}

void SampleSet::count_problem(const std::string& kind, uint64_t line) {
  for (auto& [k, n] : diagnostics)
    if (k == kind) {
      ++n;
      return;
    }
  diagnostics.emplace_back(kind, 1);
  if (line) first_line.emplace(kind, line);
}

}  // namespace snailtrail::flame
