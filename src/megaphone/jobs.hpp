// Megaphone's jobs for `snailtrail run` (docs/MEGAPHONE.md): key-count (dense arrays per
// bin) and hash-count (hash maps per bin) on Megaphone's operators with a controller that
// migrates bins at --migrate-at times, or on a plain operator (--native).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "flow/runtime.hpp"
#include "megaphone/megaphone.hpp"

namespace snailtrail::megaphone {

enum class Strategy { all_at_once, fluid, batched };
// "all-at-once", "fluid", "batched"; throws std::invalid_argument otherwise.
Strategy parse_strategy(const std::string& name);
const char* strategy_name(Strategy s);

struct JobOptions {
  std::string base = "keycount";  // keycount (dense arrays) or hashcount (hash maps)
  bool native = false;            // the plain operator, no bins
  uint32_t log_bins = 12;
  std::vector<int64_t> migrate_at_ns;  // wall-clock times since the start
  Strategy strategy = Strategy::all_at_once;
};

// One migration as the controller (worker 0) saw it. Times in seconds since the start.
struct MigrationRecord {
  std::string strategy;
  double start_s = 0, end_s = 0, duration_s = 0;
  double max_latency_ms = 0;  // max latency of the epochs completed from start_s on whose
                              // time is at most end_s
  uint64_t bins_moved = 0, bytes_moved = 0;
  uint64_t steps = 0;
  bool completed = false;
};

// Written by worker 0 (controller, latency) and by every worker (bytes sent).
class MigrationLog {
 public:
  void start(int64_t now_ns, Strategy s, uint64_t bins, uint64_t steps);
  void end(int64_t now_ns);
  void latency(int64_t now_ns, flow::Time t, int64_t latency_ns);
  void add_bytes(uint64_t bytes) { bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  std::vector<MigrationRecord> records() const;

 private:
  struct Entry {
    MigrationRecord rec;
    int64_t start_ns = 0, end_ns = -1;
    int64_t max_ns = 0;
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::atomic<uint64_t> bytes_{0};
};

// The configurations the controller alternates between: bin b on worker b % W, and
// worker 0 holding the first half of the bins (the rest round-robin on the others).
std::vector<uint32_t> round_robin_config(uint32_t bins, uint32_t workers);
std::vector<uint32_t> half_config(uint32_t bins, uint32_t workers);
// The steps that move `from` to `to` under a strategy: all-at-once one step with every
// changed bin; fluid one bin per step; batched rounds in which each worker sends at most
// one bin and receives at most one bin. Each step is a list of (bin, worker).
std::vector<std::vector<std::pair<uint32_t, uint32_t>>> plan_steps(
    const std::vector<uint32_t>& from, const std::vector<uint32_t>& to, Strategy s,
    uint32_t workers);

// Registers the job `opts.base` + "-megaphone" or + "-native" in the runtime's table
// (flow::register_job); returns its name. Migrations are recorded into `log`.
std::string register_job(const JobOptions& opts, std::shared_ptr<MigrationLog> log);

// The "migrations" array of --stats-json.
std::string migrations_json(const std::vector<MigrationRecord>& ms);

// For jobs of later stages (src/nexmark): the controller of the keycount/hashcount jobs
// as a control source (worker 0 migrates at opts.migrate_at_ns with opts.strategy between
// round-robin and half_config of 2^opts.log_bins bins; `data` is the data sources'
// frontier), and the per-epoch latency of the job's output probe into the migration log
// (call it from the probe's callback with the frontier's old and new value).
Stream<ControlUpdate> make_controller(flow::JobContext& ctx, const JobOptions& opts,
                                      std::shared_ptr<MigrationLog> log, flow::ProbeHandle data);
void log_probe_latency(flow::JobContext& ctx, MigrationLog& log, flow::Time old, flow::Time now_f);

}  // namespace snailtrail::megaphone
