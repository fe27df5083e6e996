// The critical path's table and JSON (kernel_path_view.hpp).
#include "cli/kernel_path_view.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "cli/duration.hpp"
#include "output/names.hpp"
#include "output/writers.hpp"

namespace snailtrail::cli {

std::string path_ms(int64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6);
}
std::string path_secs(int64_t ns) {
  return fmt::format("{}.{:09d}", ns / 1'000'000'000, ns % 1'000'000'000);
}

int32_t pick_kernel_thread(const kernel::KernelModel& m, std::string sel) {
  // HOST/TID or HOST/NAME picks among the threads of one machine.
  int host = -1;
  const size_t slash = sel.find('/');
  if (m.multi_host() && slash != std::string::npos) {
    const std::string name = sel.substr(0, slash);
    for (size_t h = 0; h < m.hosts.size(); ++h)
      if (m.hosts[h] == name) host = static_cast<int>(h);
    if (host < 0) throw std::invalid_argument("no host '" + name + "' in " + m.source);
    sel = sel.substr(slash + 1);
  }
  std::vector<int32_t> found;
  const bool numeric = !sel.empty() && std::all_of(sel.begin(), sel.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  if (numeric) found = m.find_tid(static_cast<int32_t>(std::stol(sel)));
  if (found.empty()) found = m.find_comm(sel);
  if (host >= 0) std::erase_if(found, [&](int32_t t) { return m.threads[t].host != host; });
  if (found.empty())
    throw std::invalid_argument("no thread with tid or comm '" + sel + "' in " + m.source +
                                " (see `snailtrail kernel threads`)");
  if (found.size() > 1 && !numeric) {
    std::string tids;
    for (int32_t t : found) tids += (tids.empty() ? "" : ", ") + printable(m.thread_label(t));
    throw std::invalid_argument("comm '" + sel + "' names " + std::to_string(found.size()) +
                                " threads (" + tids + "): pick one with --thread " +
                                (m.multi_host() ? "HOST/TID" : "TID"));
  }
  if (found.size() > 1 && numeric && m.multi_host() && host < 0 &&
      m.threads[found.front()].host != m.threads[found.back()].host)
    throw std::invalid_argument("tid " + sel + " is on several hosts: pick one with --thread " +
                                "HOST/" + sel);
  return found.front();  // a reused tid: its first thread
}

int64_t resolve_kernel_instant(const std::string& text, int64_t origin) {
  const Instant i = parse_instant(text);
  return i.relative ? origin + i.ns : i.ns;
}

PathView::PathView(const kernel::KernelModel& model, int32_t thread, int64_t f, int64_t e,
                   const kernel::CriticalPathResult& result)
    : m(model), t(thread), from(f), to(e), r(result), total(static_cast<double>(e - f)) {
  std::map<int32_t, int64_t> per_thread;
  for (const kernel::PathSegment& s : r.path) {
    per_thread[s.thread] += s.end - s.start;
    per_state[static_cast<int>(s.state)] += s.end - s.start;
  }
  threads.assign(per_thread.begin(), per_thread.end());
  std::sort(threads.begin(), threads.end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
}

void PathView::write_json(OutputFile& out) const {
  const kernel::Thread& th = m.threads[t];
  auto& buf = out.buf();
  auto it = std::back_inserter(buf);
  // "host" fields only when the trace holds several machines.
  auto host = [&](int32_t thr) {
    if (!m.multi_host()) return;
    fmt::format_to(it, ", \"host\": ");
    append_json_string(buf, m.hosts[m.threads[thr].host], kJsonNames);
  };
  fmt::format_to(it, "{{\"thread\": {{\"tid\": {}, \"comm\": ", th.tid);
  append_json_string(buf, m.comm(t), kJsonNames);
  host(t);
  fmt::format_to(it, "}}, \"from_ns\": {}, \"to_ns\": {}, \"path\": [", from, to);
  for (size_t k = 0; k < r.path.size(); ++k) {
    const kernel::PathSegment& s = r.path[k];
    fmt::format_to(it,
                   "{}{{\"start_ns\": {}, \"end_ns\": {}, \"tid\": {}, \"comm\": ", k ? ", " : "",
                   s.start, s.end, m.threads[s.thread].tid);
    append_json_string(buf, m.comm(s.thread), kJsonNames);
    host(s.thread);
    fmt::format_to(it, ", \"state\": \"{}\"", kernel::name_of(s.state));
    if (s.irq.kind != kernel::IrqKind::none) {
      fmt::format_to(it, ", \"irq\": ");
      append_json_string(buf, kernel::irq_label(m.strings, s.irq), kJsonNames);
    }
    fmt::format_to(it, "}}");
    out.maybe_flush();
  }
  fmt::format_to(it, "], \"threads\": [");
  for (size_t k = 0; k < threads.size(); ++k) {
    fmt::format_to(it, "{}{{\"tid\": {}, \"comm\": ", k ? ", " : "",
                   m.threads[threads[k].first].tid);
    append_json_string(buf, m.comm(threads[k].first), kJsonNames);
    host(threads[k].first);
    fmt::format_to(it, ", \"ns\": {}, \"share\": {:.6f}}}", threads[k].second,
                   threads[k].second / total);
  }
  fmt::format_to(it, "], \"states\": {{");
  for (int s = 0; s < kernel::kPathStateCount; ++s)
    fmt::format_to(it, "{}\"{}\": {}", s ? ", " : "",
                   kernel::name_of(static_cast<kernel::PathState>(s)), per_state[s]);
  fmt::format_to(it, "}}, \"waker_hops\": {}, \"inconsistent_wakers\": {}, ", r.waker_hops,
                 r.inconsistent);
  if (m.multi_host() || r.packet_hops) {
    fmt::format_to(it, "\"packet_hops\": {}, \"hosts\": [", r.packet_hops);
    for (size_t h = 0; h < m.hosts.size(); ++h) {
      fmt::format_to(it, "{}{{\"name\": ", h ? ", " : "");
      append_json_string(buf, m.hosts[h], kJsonNames);
      fmt::format_to(it, ", \"clock_offset_ns\": {}}}",
                     h < m.host_offsets_ns.size() ? m.host_offsets_ns[h] : 0);
    }
    fmt::format_to(it, "], ");
  }
  fmt::format_to(it, "\"diagnostics\": ");
  put_counts(buf, m.diagnostics.items());
  fmt::format_to(it, "}}\n");
}

void PathView::write_table(fmt::memory_buffer& buf, size_t limit) const {
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "critical path of {} from {} to {} ({} ms, {} segments, {} waker hops",
                 printable(m.thread_label(t)), path_secs(from), path_secs(to), path_ms(to - from),
                 r.path.size(), r.waker_hops);
  if (r.packet_hops) fmt::format_to(it, ", {} packet hops", r.packet_hops);
  fmt::format_to(it, ")\n");
  for (size_t h = 0; m.multi_host() && h < m.hosts.size(); ++h)
    fmt::format_to(it, "host {}: clock offset {} ms\n", printable(m.hosts[h]),
                   path_ms(h < m.host_offsets_ns.size() ? m.host_offsets_ns[h] : 0));
  fmt::format_to(it, "\n{:>20} {:>12}  {:<24} {}\n", "start (s)", "ms", "thread", "state");
  const size_t shown = std::min(r.path.size(), limit);
  for (size_t k = 0; k < shown; ++k) {
    const kernel::PathSegment& s = r.path[k];
    const std::string irq = kernel::irq_label(m.strings, s.irq);
    fmt::format_to(it, "{:>20} {:>12}  {:<24} {}{}\n", path_secs(s.start), path_ms(s.end - s.start),
                   printable(m.thread_label(s.thread)), kernel::name_of(s.state),
                   irq.empty() ? "" : " (" + printable(irq) + ")");
  }
  if (shown < r.path.size())
    fmt::format_to(it, "{:>20} ({} more segments; --limit N, or --format json)\n", "...",
                   r.path.size() - shown);
  fmt::format_to(it, "\nshare per thread\n");
  size_t tiny = 0;  // rows that would print as 0.000 ms and 0.0 %
  for (const auto& [thr, ns] : threads) {
    if (ns < 500 && 1000.0 * ns / total < 0.5) {
      ++tiny;
      continue;
    }
    fmt::format_to(it, "  {:<24} {:>12} ms {:>6.1f} %\n", printable(m.thread_label(thr)),
                   path_ms(ns), 100.0 * ns / total);
  }
  if (tiny)
    fmt::format_to(it, "  ({} threads under 0.001 ms left out; --format json lists them)\n", tiny);
  fmt::format_to(it, "\nshare per state\n");
  for (int s = 0; s < kernel::kPathStateCount; ++s)
    if (per_state[s])
      fmt::format_to(it, "  {:<24} {:>12} ms {:>6.1f} %\n",
                     kernel::name_of(static_cast<kernel::PathState>(s)), path_ms(per_state[s]),
                     100.0 * per_state[s] / total);
  if (!m.diagnostics.items().empty()) {
    fmt::format_to(it, "\ndiagnostics\n");
    for (const auto& [k, v] : m.diagnostics.items())
      fmt::format_to(it, "  {:<40} {}\n", printable(k), v);
  }
  if (r.inconsistent)
    fmt::format_to(it, "  {:<40} {}\n", "kernel.inconsistent_waker", r.inconsistent);
}

}  // namespace snailtrail::cli
