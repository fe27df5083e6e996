// The model's names and look-ups (model.hpp): states, causes, threads by tid or comm.
#include <algorithm>
#include <stdexcept>

#include "kernel/model.hpp"

namespace snailtrail::kernel {

std::string_view name_of(ThreadState s) {
  switch (s) {
    case ThreadState::running:
      return "running";
    case ThreadState::preempted:
      return "preempted";
    case ThreadState::blocked:
      return "blocked";
  }
  return "?";
}

std::string_view name_of(WakeCause c) {
  switch (c) {
    case WakeCause::none:
      return "none";
    case WakeCause::thread:
      return "thread";
    case WakeCause::timer:
      return "timer";
    case WakeCause::block_device:
      return "block_device";
    case WakeCause::network:
      return "network";
    case WakeCause::interrupt:
      return "interrupt";
  }
  return "?";
}

std::vector<int32_t> KernelModel::find_tid(int32_t tid) const {
  std::vector<int32_t> out;
  for (size_t i = 0; i < threads.size(); ++i)
    if (threads[i].tid == tid) out.push_back(static_cast<int32_t>(i));
  return out;
}

std::string KernelModel::thread_label(int32_t thread) const {
  const Thread& t = threads[thread];
  std::string label = strings.str(t.comm) + ":" + std::to_string(t.tid);
  if (multi_host()) label = hosts[t.host] + "/" + label;
  return label;
}

std::vector<int32_t> KernelModel::find_comm(std::string_view name) const {
  std::vector<int32_t> out;
  for (size_t i = 0; i < threads.size(); ++i)
    if (strings.str(threads[i].comm) == name) out.push_back(static_cast<int32_t>(i));
  return out;
}

}  // namespace snailtrail::kernel
