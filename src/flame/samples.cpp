#include "flame/samples.hpp"

#include <algorithm>

namespace snailtrail::flame {
namespace {

uint32_t intern(std::string_view name, std::deque<std::string>& names,
                std::unordered_map<std::string_view, uint32_t>& index) {
  auto it = index.find(name);
  if (it != index.end()) return it->second;
  const auto id = static_cast<uint32_t>(names.size());
  names.emplace_back(name);
  index.emplace(names.back(), id);
  return id;
}

}  // namespace

uint32_t SampleSet::intern_frame(std::string_view name) {
  return intern(name, frames_, frame_index_);
}

uint32_t SampleSet::intern_comm(std::string_view name) {
  return intern(name, comms_, comm_index_);
}

uint64_t SampleSet::hash_stack(const uint32_t* b, const uint32_t* e) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(e - b);
  for (; b != e; ++b) h = (h ^ *b) * 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}

void SampleSet::grow_stack_slots() {
  std::vector<uint32_t> slots(std::max<size_t>(1024, stack_slots_.size() * 2), 0);
  const size_t mask = slots.size() - 1;
  for (uint32_t s = 0; s < stack_count(); ++s) {
    auto [b, e] = stack(s);
    size_t i = hash_stack(b, e) & mask;
    while (slots[i] != 0) i = (i + 1) & mask;
    slots[i] = s + 1;
  }
  stack_slots_.swap(slots);
}

uint32_t SampleSet::intern_stack(const std::vector<uint32_t>& frames) {
  if ((stack_count() + 1) * 2 > stack_slots_.size()) grow_stack_slots();
  const size_t mask = stack_slots_.size() - 1;
  const uint32_t* fb = frames.data();
  const uint32_t* fe = fb + frames.size();
  size_t i = hash_stack(fb, fe) & mask;
  for (; stack_slots_[i] != 0; i = (i + 1) & mask) {
    auto [b, e] = stack(stack_slots_[i] - 1);
    if (std::equal(b, e, fb, fe)) return stack_slots_[i] - 1;
  }
  const auto id = static_cast<uint32_t>(stack_count());
  stack_frames_.insert(stack_frames_.end(), fb, fe);
  stack_begin_.push_back(static_cast<uint32_t>(stack_frames_.size()));
  stack_slots_[i] = id + 1;
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
