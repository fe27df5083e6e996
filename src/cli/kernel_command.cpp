// `snailtrail kernel`: views of Linux kernel traces (docs/KERNEL.md).
//   kernel critical-path TRACE --thread TID|NAME [--from --to] [--format table|json]
//   kernel threads TRACE
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/kernel_path_view.hpp"
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

int run_critical_path(const KernelArgs& a) {
  const kernel::KernelModel m = kernel::load_kernel_model(a.trace, a.input_format);
  const int32_t t = pick_kernel_thread(m, a.thread);
  const kernel::Thread& th = m.threads[t];
  int64_t from = th.intervals.empty() ? m.begin : th.intervals.front().start;
  int64_t to = th.intervals.empty() ? m.end : th.intervals.back().end;
  if (!a.from.empty()) from = resolve_kernel_instant(a.from, m.begin);
  if (!a.to.empty()) to = resolve_kernel_instant(a.to, m.begin);
  if (to <= from)
    throw std::invalid_argument(fmt::format("empty range: --from {} is not before --to {}",
                                            path_secs(from), path_secs(to)));
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
                 m.wakeups, path_secs(m.begin), path_secs(m.end));
  if (m.multi_host())
    fmt::format_to(it, "{} hosts, {} packet wake-ups matched to their sender\n", m.hosts.size(),
                   m.packets_matched);
  fmt::format_to(it, "\n");
  fmt::format_to(it, "{:>8}  {:<24} {:>12} {:>12} {:>12}\n", "tid", "comm", "running ms",
                 "preempted ms", "blocked ms");
  size_t idle = 0;  // threads seen (woken, forked) but without a traced interval
  for (size_t t = 0; t < m.threads.size(); ++t) {
    int64_t by[3] = {0, 0, 0};
    for (const kernel::Interval& iv : m.threads[t].intervals)
      by[static_cast<int>(iv.state)] += iv.end - iv.start;
    if (by[0] == 0 && by[1] == 0 && by[2] == 0) {
      ++idle;
      continue;
    }
    const std::string comm =
        m.multi_host() ? m.hosts[m.threads[t].host] + "/" + m.comm(static_cast<int32_t>(t))
                       : m.comm(static_cast<int32_t>(t));
    fmt::format_to(it, "{:>8}  {:<24} {:>12} {:>12} {:>12}\n", m.threads[t].tid, printable(comm),
                   path_ms(by[0]), path_ms(by[1]), path_ms(by[2]));
  }
  if (idle) fmt::format_to(it, "({} threads without traced time left out)\n", idle);
  return 0;
}

}  // namespace

CommandRunner add_kernel_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "kernel",
      "Linux kernel traces (perf script text, LTTng or perf CTF): a thread's critical path");
  cmd->require_subcommand(1);
  auto args = std::make_shared<KernelArgs>();
  // TRACE, --input-format and --output of every subcommand.
  auto add_input = [&args](CLI::App* sub) {
    sub->add_option("TRACE", args->trace,
                    "`perf script` text of sched tracepoints, or a CTF directory (LTTng, "
                    "perf data convert --to-ctf)")
        ->required();
    sub->add_option("--input-format", args->input_format,
                    "Input format: auto, perf-sched (perf script text), lttng (CTF dir: "
                    "LTTng or perf)")
        ->check(CLI::IsMember({"auto", "perf-sched", "lttng"}));
    sub->add_option("--output,-o", args->output, "Write results to FILE instead of stdout");
  };

  CLI::App* cp = cmd->add_subcommand(
      "critical-path",
      "Critical path of one thread (Giraldeau's bounded backward algorithm): running, "
      "preempted, and blocked time replaced by the waker's own path, recursively");
  add_input(cp);
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
  cp->add_option("--limit", args->limit, "Table: show the first N path segments (default 40)");

  CLI::App* th = cmd->add_subcommand("threads", "Threads of a kernel trace with their times");
  add_input(th);

  return [cmd, cp, th, args]() {
    if (!*cmd) return -1;
    if (*cp) return run_critical_path(*args);
    if (*th) return run_threads(*args);
    return -1;
  };
}

}  // namespace snailtrail::cli
