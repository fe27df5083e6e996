// `snailtrail simulate`: run a scenario (docs/SIMULATOR.md) and write its trace and,
// optionally, the ground truth as JSON.
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/output_file.hpp"
#include "sim/simulator.hpp"
#include "sim/units.hpp"
#include "trace/plural.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

struct SimulateArgs {
  std::string scenario;
  std::string output;
  std::string duration;
  std::optional<uint64_t> seed;
  std::string truth;
  std::optional<uint32_t> workers;
  std::string rate;
  std::vector<std::string> speedups;
  bool compress = false;
  bool quiet = false;
};

double parse_rate_arg(const std::string& text) {
  try {
    return sim::parse_rate_text(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--rate: ") + e.what());
  }
}

int run(const SimulateArgs& a) {
  // Check the arguments before spending time on the simulation.
  try {
    format_from_path(a.output);
  } catch (const TraceError& e) {
    throw std::invalid_argument(std::string("--output: ") + e.what());
  }
  sim::Overrides o;
  if (!a.duration.empty()) {
    try {
      o.duration_ns = parse_duration(a.duration);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--duration: ") + e.what());
    }
    if (*o.duration_ns <= 0) throw std::invalid_argument("--duration must be positive");
  }
  o.seed = a.seed;
  o.workers = a.workers;
  if (!a.rate.empty()) o.rate = parse_rate_arg(a.rate);
  for (const std::string& text : a.speedups) {
    const size_t eq = text.rfind('=');
    const double k =
        eq != std::string::npos && eq > 0 ? parse_number(text.substr(eq + 1)).value_or(0.0) : 0.0;
    if (!(k > 0))
      throw std::invalid_argument("--speed-up " + text +
                                  ": expected TARGET=K with a factor K > 0 (e.g. count-0=2)");
    o.speedups.emplace_back(text.substr(0, eq), k);
  }

  sim::Scenario scenario = sim::load_scenario(a.scenario);
  sim::apply_overrides(scenario, o);
  std::unique_ptr<OutputFile> truth;
  if (!a.truth.empty()) truth = std::make_unique<OutputFile>(a.truth);

  const auto t0 = std::chrono::steady_clock::now();
  sim::SimResult r = sim::simulate(scenario);
  const auto t1 = std::chrono::steady_clock::now();
  SnailWriteOptions wo;
  wo.compress = a.compress;
  write_trace(r.trace, a.output, wo);
  if (truth) {
    const std::string json = sim::to_json(r.truth);
    truth->buf().append(json.data(), json.data() + json.size());
    truth->flush();
  }
  const auto t2 = std::chrono::steady_clock::now();
  if (!a.quiet) {
    const double sim_s = std::chrono::duration<double>(t1 - t0).count();
    const double all_s = std::chrono::duration<double>(t2 - t0).count();
    fmt::print(stderr,
               "simulated {} ({}, {}): {} events, {:.3g} s simulated, {:.2f} s wall "
               "({:.2f} M events/s; {:.2f} s with writing) -> {}\n",
               scenario.name, sim::name_of(scenario.model),
               counted(sim::worker_count(scenario), "worker", "workers"), r.trace.events.size(),
               static_cast<double>(scenario.duration_ns) * 1e-9, sim_s,
               sim_s > 0 ? static_cast<double>(r.trace.events.size()) / sim_s * 1e-6 : 0.0, all_s,
               a.output);
  }
  return 0;
}

}  // namespace

CommandRunner add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  SimulateArgs& a = *args;
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Simulate a dataflow scenario (TOML) and write its trace with ground truth");
  cmd->add_option("SCENARIO", a.scenario,
                  "Scenario file (TOML; see docs/SIMULATOR.md and examples/*.toml)")
      ->required();
  cmd->add_option("--output,-o", a.output, "Trace file to write (.jsonl or .snail)")->required();
  cmd->add_option("--duration,-d", a.duration,
                  "Simulated time (e.g. 60s, 500ms); overrides the scenario's 'duration'");
  cmd->add_option("--seed", a.seed,
                  "Random seed; overrides the scenario's 'seed' (same seed, same trace)");
  cmd->add_option("--truth", a.truth,
                  "Write the ground truth as JSON to FILE (hot worker, bottleneck operator, "
                  "true rates per operator instance)");
  cmd->add_option("--workers", a.workers,
                  "Total workers: scales every operator's parallelism proportionally "
                  "(micro-batch: executors = N - 1; timely: workers = N)")
      ->check(CLI::Range(1u, 100000u));
  cmd->add_option("--rate", a.rate,
                  "Total source rate in records/s (e.g. 200000 or 12000000/min); sources keep "
                  "their proportions and rate changes scale with it");
  cmd->add_option("--speed-up", a.speedups,
                  "TARGET=K: make TARGET K times faster (its costs divided by K), to check "
                  "analyze --what-if against the simulation (docs/SIMULATOR.md): an operator, "
                  "a pipelined instance OPERATOR-INDEX (e.g. count-0=2), or the micro-batch "
                  "driver; repeatable")
      ->allow_extra_args(false)
      ->take_all();
  cmd->add_flag("--compress,-z", a.compress, "zstd-compress .snail event blocks");
  cmd->add_flag("--quiet,-q", a.quiet, "Do not print the summary line on stderr");
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace snailtrail::cli
