// The subcommands of `snailtrail`. Each lives in its own file and registers itself
// with the CLI11 app; the returned function runs it after parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace snailtrail::cli {

// Runs a parsed subcommand; returns the process exit code. May throw TraceError
// (exit 1), std::invalid_argument (exit 2; UsageError among them) or other
// std::exception (exit 1; InputError among them). main() prints setting errors with the
// flags of cli/setting_flags.hpp.
using CommandRunner = std::function<int()>;

CommandRunner add_analyze_command(CLI::App& app);
CommandRunner add_convert_command(CLI::App& app);
CommandRunner add_bench_command(CLI::App& app);
CommandRunner add_simulate_command(CLI::App& app);
CommandRunner add_scale_command(CLI::App& app);
CommandRunner add_critical_path_command(CLI::App& app);
CommandRunner add_serve_command(CLI::App& app);
CommandRunner add_send_command(CLI::App& app);
CommandRunner add_report_command(CLI::App& app);
CommandRunner add_run_command(CLI::App& app);
CommandRunner add_kernel_command(CLI::App& app);
CommandRunner add_logs_command(CLI::App& app);
CommandRunner add_flamegraph_command(CLI::App& app);

}  // namespace snailtrail::cli
