// `snailtrail kernel`: views of Linux kernel traces (docs/KERNEL.md).
//   kernel critical-path TRACE --thread TID|NAME [--from --to] [--format table|json]
//   kernel threads TRACE
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/output_file.hpp"
#include "kernel/critical_path.hpp"
#include "kernel/load.hpp"
#include "output/names.hpp"
#include "output/writers.hpp"

namespace snailtrail::cli {
namespace {

struct KernelArgs {
  std::string trace;
  std::string format = "table";
  std::string input_format = "auto";
  std::string thread;
  std::string from, to;
  std::string output;
  size_t limit = 40;
};

std::string ms(int64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6);
}
std::string secs(int64_t ns) {
  return fmt::format("{}.{:09d}", ns / 1'000'000'000, ns % 1'000'000'000);
}

int32_t pick_thread(const kernel::KernelModel& m, std::string sel) {
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

int64_t resolve(const std::string& text, int64_t origin) {
  const Instant i = parse_instant(text);
  return i.relative ? origin + i.ns : i.ns;
}

// A critical path with its totals per thread (largest first) and per state.
struct PathView {
  const kernel::KernelModel& m;
  int32_t t;  // the thread whose path this is
  int64_t from, to;
  const kernel::CriticalPathResult& r;
  std::vector<std::pair<int32_t, int64_t>> threads;
  std::array<int64_t, kernel::kPathStateCount> per_state{};
  double total;
  PathView(const kernel::KernelModel& model, int32_t thread, int64_t f, int64_t e,
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
  void write_json(OutputFile& out) const;
  // The table with the first `limit` segments.
  void write_table(fmt::memory_buffer& buf, size_t limit) const;
};

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
    fmt::format_to(it, ", \"state\": \"{}\"}}", kernel::name_of(s.state));
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
                 printable(m.thread_label(t)), secs(from), secs(to), ms(to - from), r.path.size(),
                 r.waker_hops);
  if (r.packet_hops) fmt::format_to(it, ", {} packet hops", r.packet_hops);
  fmt::format_to(it, ")\n");
  for (size_t h = 0; m.multi_host() && h < m.hosts.size(); ++h)
    fmt::format_to(it, "host {}: clock offset {} ms\n", printable(m.hosts[h]),
                   ms(h < m.host_offsets_ns.size() ? m.host_offsets_ns[h] : 0));
  fmt::format_to(it, "\n{:>20} {:>12}  {:<24} {}\n", "start (s)", "ms", "thread", "state");
  const size_t shown = std::min(r.path.size(), limit);
  for (size_t k = 0; k < shown; ++k) {
    const kernel::PathSegment& s = r.path[k];
    fmt::format_to(it, "{:>20} {:>12}  {:<24} {}\n", secs(s.start), ms(s.end - s.start),
                   printable(m.thread_label(s.thread)), kernel::name_of(s.state));
  }
  if (shown < r.path.size())
    fmt::format_to(it, "{:>20} ({} more segments; --limit N, or --format json)\n", "...",
                   r.path.size() - shown);
  fmt::format_to(it, "\nshare per thread\n");
  for (const auto& [thr, ns] : threads)
    fmt::format_to(it, "  {:<24} {:>12} ms {:>6.1f} %\n", printable(m.thread_label(thr)), ms(ns),
                   100.0 * ns / total);
  fmt::format_to(it, "\nshare per state\n");
  for (int s = 0; s < kernel::kPathStateCount; ++s)
    if (per_state[s])
      fmt::format_to(it, "  {:<24} {:>12} ms {:>6.1f} %\n",
                     kernel::name_of(static_cast<kernel::PathState>(s)), ms(per_state[s]),
                     100.0 * per_state[s] / total);
  if (!m.diagnostics.items().empty()) {
    fmt::format_to(it, "\ndiagnostics\n");
    for (const auto& [k, v] : m.diagnostics.items())
      fmt::format_to(it, "  {:<40} {}\n", printable(k), v);
  }
  if (r.inconsistent)
    fmt::format_to(it, "  {:<40} {}\n", "kernel.inconsistent_waker", r.inconsistent);
}

int run_critical_path(const KernelArgs& a) {
  const kernel::KernelModel m = kernel::load_kernel_model(a.trace, a.input_format);
  const int32_t t = pick_thread(m, a.thread);
  const kernel::Thread& th = m.threads[t];
  int64_t from = th.intervals.empty() ? m.begin : th.intervals.front().start;
  int64_t to = th.intervals.empty() ? m.end : th.intervals.back().end;
  if (!a.from.empty()) from = resolve(a.from, m.begin);
  if (!a.to.empty()) to = resolve(a.to, m.begin);
  if (to <= from)
    throw std::invalid_argument(
        fmt::format("empty range: --from {} is not before --to {}", secs(from), secs(to)));
  const kernel::CriticalPathResult r = kernel::critical_path(m, t, from, to);
  const PathView view(m, t, from, to, r);
  OutputFile out(a.output);
  if (a.format == "json")
    view.write_json(out);
  else
    view.write_table(out.buf(), a.limit);
  return 0;
}

int run_threads(const KernelArgs& a) {
  const kernel::KernelModel m = kernel::load_kernel_model(a.trace, a.input_format);
  OutputFile out(a.output);
  auto it = std::back_inserter(out.buf());
  fmt::format_to(it, "{} events, {} threads, {} wake-ups, {} .. {} s\n", m.events, m.threads.size(),
                 m.wakeups, secs(m.begin), secs(m.end));
  if (m.multi_host())
    fmt::format_to(it, "{} hosts, {} packet wake-ups matched to their sender\n", m.hosts.size(),
                   m.packets_matched);
  fmt::format_to(it, "\n");
  fmt::format_to(it, "{:>8}  {:<24} {:>12} {:>12} {:>12}\n", "tid", "comm", "running ms",
                 "preempted ms", "blocked ms");
  for (size_t t = 0; t < m.threads.size(); ++t) {
    int64_t by[3] = {0, 0, 0};
    for (const kernel::Interval& iv : m.threads[t].intervals)
      by[static_cast<int>(iv.state)] += iv.end - iv.start;
    const std::string comm =
        m.multi_host() ? m.hosts[m.threads[t].host] + "/" + m.comm(static_cast<int32_t>(t))
                       : m.comm(static_cast<int32_t>(t));
    fmt::format_to(it, "{:>8}  {:<24} {:>12} {:>12} {:>12}\n", m.threads[t].tid, printable(comm),
                   ms(by[0]), ms(by[1]), ms(by[2]));
  }
  return 0;
}

}  // namespace

CommandRunner add_kernel_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "kernel", "Linux kernel traces (perf script text, LTTng CTF): a thread's critical path");
  cmd->require_subcommand(1);
  auto args = std::make_shared<KernelArgs>();
  const std::string formats = "Input format: auto, perf-sched (perf script text), lttng (CTF dir)";

  CLI::App* cp = cmd->add_subcommand(
      "critical-path",
      "Critical path of one thread (Giraldeau's bounded backward algorithm): running, "
      "preempted, and blocked time replaced by the waker's own path, recursively");
  cp->add_option("TRACE", args->trace,
                 "`perf script` text of sched tracepoints, or an LTTng CTF directory")
      ->required();
  cp->add_option(
        "--thread,--tid", args->thread,
        "The thread: its tid, or its comm if unique (several hosts: HOST/TID or HOST/COMM)")
      ->required();
  cp->add_option("--from", args->from,
                 "Start of the range: '12345.6s' (trace clock), '+1s' (from the first "
                 "event); default: the thread's first event");
  cp->add_option("--to", args->to, "End of the range (same forms); default: its last event");
  cp->add_option("--format,-f", args->format, "Output: table or json")
      ->check(CLI::IsMember({"table", "json"}));
  cp->add_option("--input-format", args->input_format, formats)
      ->check(CLI::IsMember({"auto", "perf-sched", "lttng"}));
  cp->add_option("--limit", args->limit, "Table: show the first N path segments (default 40)");
  cp->add_option("--output,-o", args->output, "Write results to FILE instead of stdout");

  CLI::App* th = cmd->add_subcommand("threads", "Threads of a kernel trace with their times");
  th->add_option("TRACE", args->trace,
                 "`perf script` text of sched tracepoints, or an LTTng CTF directory")
      ->required();
  th->add_option("--input-format", args->input_format, formats)
      ->check(CLI::IsMember({"auto", "perf-sched", "lttng"}));
  th->add_option("--output,-o", args->output, "Write results to FILE instead of stdout");

  return [cmd, cp, th, args]() {
    if (!*cmd) return -1;
    if (*cp) return run_critical_path(*args);
    if (*th) return run_threads(*args);
    return -1;
  };
}

}  // namespace snailtrail::cli
