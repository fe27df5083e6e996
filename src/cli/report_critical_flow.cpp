// The "Critical flow" view of `snailtrail report` for kernel traces (report_critical_flow.hpp).
#include "cli/report_critical_flow.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "cli/kernel_path_view.hpp"
#include "kernel/load.hpp"
#include "report/critical_flow.hpp"

namespace snailtrail::cli {

int run_critical_flow(const TraceInputArgs& in, const std::string& thread,
                      const std::string& format,
                      const std::function<int(const std::string&)>& write) {
  if (in.importer_option != "auto" && in.importer_option != "perf-sched" &&
      in.importer_option != "lttng")
    throw std::invalid_argument(
        "--view critical-flow needs a kernel trace (--importer perf-sched or lttng)");
  const kernel::KernelModel m = kernel::load_kernel_model(in.trace, in.importer_option);
  report::CriticalFlowOptions o;
  o.source = in.trace;
  o.format = in.importer_option;
  std::error_code ec;
  if (o.format == "auto")
    o.format =
        in.trace != "-" && std::filesystem::is_directory(in.trace, ec) ? "lttng" : "perf-sched";
  if (!thread.empty()) o.thread = pick_kernel_thread(m, thread);
  o.from_given = !in.from.empty();
  o.to_given = !in.to.empty();
  if (o.from_given) o.from = resolve_kernel_instant(in.from, m.begin);
  if (o.to_given) o.to = resolve_kernel_instant(in.to, m.begin);
  if (o.from_given && o.to_given && o.to <= o.from)
    throw std::invalid_argument("empty range: --from " + path_secs(o.from) +
                                " is not before --to " + path_secs(o.to));
  const report::CriticalFlow flow = report::build_critical_flow(m, o);
  const std::string json = report::critical_flow_json(m, flow, o);
  return write(format == "json" ? json : report::render_critical_flow_html(json));
}

}  // namespace snailtrail::cli
