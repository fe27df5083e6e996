// `snailtrail bench`: the performance suite (docs/PERFORMANCE.md).
#include <fmt/format.h>

#include <fstream>
#include <memory>

#include "bench/perf_suite.hpp"
#include "bench/synthetic.hpp"
#include "cli/commands.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {

CommandRunner add_bench_command(CLI::App& app) {
  struct Args {
    bench::PerfOptions perf;
    std::string format = "table";
    std::string svg;
    std::string json;
    std::string floor;
    std::string generate;
    int64_t generate_seconds = 10;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure analyze on synthetic traces against the SnailTrail paper and a floor");
  cmd->add_option("--windows", args->perf.window_seconds, "Window sizes in seconds")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--repeat", args->perf.repeat, "Runs per measurement (median reported)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--throughput-seconds", args->perf.throughput_seconds,
                  "Length of the trace analyzed back to back for throughput")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cmd->add_option("--work-dir", args->perf.work_dir,
                  "Where to keep generated traces (default: a temporary directory)");
  cmd->add_flag("--keep", args->perf.keep_files, "Keep generated traces");
  cmd->add_option("--binary", args->perf.binary, "snailtrail executable to measure");
  cmd->add_option("--format,-f", args->format, "Output: table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--svg", args->svg, "Also write the latency plot (SVG) to FILE");
  cmd->add_option("--json", args->json, "Also write the results as JSON to FILE");
  cmd->add_flag("--quiet,-q", args->perf.quiet, "No progress on stderr");
  cmd->add_option("--floor", args->floor,
                  "Only run the floor on FILE: read it and group its events per worker");
  cmd->add_option("--generate", args->generate,
                  "Only write the synthetic benchmark trace (48 workers, ~30 K events/s) to FILE "
                  "(.snail or .jsonl)");
  cmd->add_option("--seconds", args->generate_seconds, "Length of the --generate trace")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}))
      ->capture_default_str();
  return [cmd, args]() {
    if (!*cmd) return -1;
    if (!args->generate.empty()) {
      bench::SyntheticOptions so;
      so.duration_ns = args->generate_seconds * 1'000'000'000;
      const Trace t = bench::make_synthetic_trace(so);
      write_trace(t, args->generate);
      fmt::print(stderr, "wrote {} events ({} s) to {}\n", t.events.size(), args->generate_seconds,
                 args->generate);
      return 0;
    }
    if (!args->floor.empty()) {
      fmt::print("{} events\n", bench::run_floor(args->floor));
      return 0;
    }
    for (int w : args->perf.window_seconds)
      if (w <= 0) throw std::invalid_argument("--windows: sizes must be positive");
    bench::PerfReport report = bench::run_perf_suite(args->perf);
    fmt::print("{}",
               args->format == "json" ? bench::format_json(report) : bench::format_table(report));
    auto write = [](const std::string& path, const std::string& text) {
      std::ofstream f(path);
      f << text;
      if (!f) throw std::runtime_error("cannot write " + path);
    };
    if (!args->svg.empty()) write(args->svg, bench::format_svg(report));
    if (!args->json.empty()) write(args->json, bench::format_json(report));
    return 0;
  };
}

}  // namespace snailtrail::cli
