// snailtrail command-line entry point: dispatches to the subcommands in this folder.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/setting_flags.hpp"
#include "trace/trace.hpp"

int main(int argc, char** argv) {
  using namespace snailtrail;
  CLI::App app{"snailtrail: critical participation analysis of distributed dataflow traces"};
  app.set_version_flag("--version", "0.1.0");
  app.require_subcommand(1);
  std::vector<cli::CommandRunner> commands = {
      cli::add_analyze_command(app), cli::add_convert_command(app),
      cli::add_bench_command(app),   cli::add_simulate_command(app),
      cli::add_scale_command(app),   cli::add_critical_path_command(app),
      cli::add_serve_command(app),   cli::add_send_command(app),
      cli::add_report_command(app),  cli::add_run_command(app),
      cli::add_kernel_command(app),  cli::add_logs_command(app),
  };
  commands.push_back(cli::add_flamegraph_command(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with code 0; every usage error exits 2.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (auto& run : commands) {
      int rc = run();
      if (rc >= 0) return rc;
    }
  } catch (const TraceError& e) {
    fmt::print(stderr, "snailtrail: error: {}\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {  // UsageError among them
    fmt::print(stderr, "snailtrail: error: {}\n", cli::error_message(e));
    return 2;
  } catch (const std::exception& e) {  // InputError among them
    fmt::print(stderr, "snailtrail: error: {}\n", cli::error_message(e));
    return 1;
  }
  return 0;
}
