// A simulation scenario: the dataflow (operators, edges), its costs and the execution
// model, read from a TOML file (docs/SIMULATOR.md documents every key).
//
//   Scenario s = load_scenario("examples/wordcount-skew-30.toml");
//   apply_overrides(s, {.duration_ns = 5'000'000'000});
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/rng.hpp"

namespace snailtrail::sim {

// A problem in a scenario file: names the file, line and key.
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Model : uint8_t { pipelined, microbatch, timely };
enum class Partitioning : uint8_t { forward, round_robin, hash };

std::string_view name_of(Model m);
std::string_view name_of(Partitioning p);

// Per-record costs in nanoseconds.
struct Costs {
  Distribution input;            // sources: reading a record from the external input
  Distribution deserialization;  // per record received
  Distribution processing;       // per record processed
  Distribution serialization;    // per record produced (when sent to another worker)
  Distribution io;               // per record produced by an operator without successors
};

struct RateChange {
  int64_t at_ns;
  double rate;  // records/s over all instances
};

struct OperatorSpec {
  std::string name;
  uint32_t parallelism = 1;
  Costs cost;
  Distribution selectivity = Distribution::constant(1);  // records out per record in
  uint32_t record_bytes = 100;                           // size of an output record
  bool is_source = false;                                // has no incoming edge
  double rate = 0;  // sources: records/s over all instances; 0 = as fast as possible
  std::vector<RateChange> rate_changes;  // sorted by time
  bool notify = false;                   // timely: emit outputs only when the input is complete
  // Pipelined: every cost instance i draws is divided by instance_speed[i] (missing: 1).
  // Set by simulate --speed-up; not a scenario key.
  std::vector<double> instance_speed;
  int line = 0;  // in the scenario file, for messages
};

struct EdgeSpec {
  uint32_t from = 0;  // operator indices
  uint32_t to = 0;
  Partitioning partitioning = Partitioning::round_robin;
  double skew = 0;            // hash: share of records that carry the hot key
  uint32_t hot_instance = 0;  // hash: the instance of `to` that owns the hot key (pipelined;
                              // taken modulo the parallelism)
};

struct NetworkSpec {
  int64_t latency_ns = 100'000;  // one way
  double bytes_per_second = 1.25e9;
  uint32_t control_bytes = 64;  // size of a control message
};

struct PipelinedSpec {
  uint32_t batch_records = 100;                 // records per network buffer (message)
  uint32_t buffer_capacity = 2;                 // buffers per input channel (credits)
  int64_t flush_interval_ns = 10'000'000;       // partial buffers older than this are sent
  int64_t watermark_interval_ns = 200'000'000;  // 0 disables watermarks
  Distribution watermark_cost = Distribution::constant(20'000);  // barrier processing, ns
  Distribution buffer_cost;            // per full buffer handed to the network, ns
  int64_t checkpoint_interval_ns = 0;  // 0 disables checkpoints
  Distribution checkpoint_cost = Distribution::constant(1'000'000);  // state snapshot, ns
};

struct MicrobatchSpec {
  uint32_t executors = 4;
  int64_t batch_interval_ns = 1'000'000'000;
  Distribution scheduling_cost = Distribution::constant(1'000'000);   // driver, per task
  Distribution stage_barrier_cost = Distribution::constant(200'000);  // driver, per stage
  Distribution task_launch_cost = Distribution::constant(50'000);     // executor, per task
};

struct TimelySpec {
  uint32_t workers = 4;
  uint32_t processes = 1;
  uint32_t iterations = 1;                  // passes of each epoch through the loop
  int64_t epoch_interval_ns = 100'000'000;  // sources close an epoch this often
  Distribution scheduling_cost = Distribution::constant(2'000);  // per scheduler round
  Distribution progress_cost = Distribution::constant(5'000);    // per progress broadcast
  int64_t spin_ns = 20'000;  // an idle worker busy-waits this long before it parks
  std::optional<Partitioning> loop_partitioning;  // default: that of the edge into the loop
  double loop_skew = 0;
};

struct Scenario {
  std::string source = "<memory>";  // file name, for messages
  std::string name;
  std::string description;
  Model model = Model::pipelined;
  int64_t duration_ns = 10'000'000'000;
  uint64_t seed = 1;
  NetworkSpec network;
  PipelinedSpec pipelined;
  MicrobatchSpec microbatch;
  TimelySpec timely;
  std::vector<OperatorSpec> operators;  // in file order; operator id = index
  std::vector<EdgeSpec> edges;
  std::vector<uint32_t> topo_order;  // operator indices, sources first

  // Edges leaving / entering an operator.
  std::vector<uint32_t> out_edges(uint32_t op) const;
  std::vector<uint32_t> in_edges(uint32_t op) const;
};

// Reads and validates a scenario. Throws ScenarioError naming the file, line and key.
Scenario load_scenario(const std::string& path);
Scenario parse_scenario(std::string_view toml_text, const std::string& source);

// Command-line overrides (snailtrail simulate --duration/--seed/--workers/--rate).
struct Overrides {
  std::optional<int64_t> duration_ns;
  std::optional<uint64_t> seed;
  std::optional<uint32_t> workers;  // total workers; operators scale proportionally
  std::optional<double> rate;       // total source rate, records/s
  // simulate --speed-up TARGET=K, applied after --workers: TARGET k times faster (its
  // per-record and per-step costs divided by k). TARGET is an operator (all its
  // instances, tasks or activities), a pipelined instance `OPERATOR-INDEX`, or the
  // micro-batch `driver` (scheduling and stage barrier costs).
  std::vector<std::pair<std::string, double>> speedups;
};
// Throws std::invalid_argument for values out of range.
void apply_overrides(Scenario& scenario, const Overrides& overrides);

// Number of workers the scenario runs on (including a micro-batch driver).
uint32_t worker_count(const Scenario& scenario);

}  // namespace snailtrail::sim
