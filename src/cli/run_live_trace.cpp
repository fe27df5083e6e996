#include "cli/run_live_trace.hpp"

#include <unistd.h>

#include <cstring>
#include <functional>
#include <type_traits>

namespace snailtrail::cli {

std::vector<Event> gather_trace(flow::Transport& tr, std::vector<Event>&& mine, int64_t origin_ns) {
  static_assert(sizeof(Event) % sizeof(uint64_t) == 0 && std::is_trivially_copyable_v<Event>);
  constexpr size_t kWords = sizeof(Event) / sizeof(uint64_t);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::vector<uint64_t> words = {static_cast<uint64_t>(origin_ns), std::hash<std::string>{}(host),
                                 mine.size()};
  words.resize(3 + mine.size() * kWords);
  if (!mine.empty()) std::memcpy(words.data() + 3, mine.data(), mine.size() * sizeof(Event));
  std::vector<Event>().swap(mine);
  const std::vector<uint64_t> all = tr.gather(words);
  std::vector<Event> out;
  if (tr.rank() != 0) return out;
  // Pass 1: the ranks' origins and hosts.
  std::vector<std::pair<int64_t, uint64_t>> heads;
  size_t total = 0;
  for (size_t at = 0; at + 3 <= all.size(); at += 3 + all[at + 2] * kWords) {
    heads.emplace_back(static_cast<int64_t>(all[at]), all[at + 1]);
    total += all[at + 2];
  }
  bool one_host = true;
  int64_t first = heads.empty() ? 0 : heads[0].first;
  for (const auto& [origin, h] : heads) {
    one_host = one_host && h == heads[0].second;
    first = std::min(first, origin);
  }
  out.resize(total);
  size_t n = 0, rank = 0;
  for (size_t at = 0; at + 3 <= all.size(); at += 3 + all[at + 2] * kWords, ++rank) {
    const size_t count = all[at + 2];
    std::memcpy(static_cast<void*>(out.data() + n), all.data() + at + 3, count * sizeof(Event));
    const int64_t shift = one_host ? heads[rank].first - first : 0;
    for (size_t i = n; i < n + count; ++i) out[i].ts += shift;
    n += count;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& x, const Event& y) { return x.ts < y.ts; });
  return out;
}

}  // namespace snailtrail::cli
