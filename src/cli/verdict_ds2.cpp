#include "cli/verdict_ds2.hpp"

#include <limits>
#include <memory>
#include <optional>

#include "cli/scale_policy.hpp"

namespace snailtrail::cli {

namespace {

// One policy interval longer than any trace (the collector's intervals start at the
// first event; the last ends at the last event).
constexpr int64_t kWholeTrace = std::numeric_limits<int64_t>::max() / 4;

struct Ds2Run {
  scale::Topology topology;
  std::vector<scale::PolicyEpoch> epochs;
};

Ds2Run ds2_over_trace(const std::string& trace, const std::string& importer,
                      const importers::ImportOptions& options, int64_t interval_ns) {
  Ds2Run run;
  PolicyArgs args;  // scale policy's defaults
  args.trace = trace;
  args.importer = importer;
  const scale::PolicyOptions po = policy_options(args);
  std::unique_ptr<EventSource> events;
  std::unique_ptr<scale::ObservationSource> source =
      trace_source(trace, importer, options, interval_ns > 0 ? interval_ns : kWholeTrace, events);
  run.topology = source->topology();
  if (run.topology.size() == 0) return run;
  run.epochs = policy_epochs(*source, run.topology, {}, po);
  return run;
}

// The importer that reads `trace` ("" when none does).
std::string importer_kind(const std::string& trace, const std::string& importer) {
  if (importer != "auto") return importer;
  try {
    return std::string(importers::detect_importer(trace).name);
  } catch (const std::exception&) {
    return {};
  }
}

// DS2 sizes operators for their sources' rates: only dataflow traces (our runtime's and
// its formats) have sources to size for. Profiler captures (Chrome, PyTorch), batch jobs
// (Spark), span traces and kernel traces have none: no DS2 advice there.
bool has_source_rates(const std::string& kind) {
  return kind == "snail" || kind == "jsonl" || kind == "snailtrail-msgpack";
}

// Threads of one process or one machine: a profiler capture or a kernel trace. Their
// messages are hand-offs through memory, never the network.
bool is_one_process(const std::string& kind) {
  return kind == "chrome" || kind == "perf-sched" || kind == "lttng";
}

}  // namespace

VerdictEnricher ds2_enricher(const std::string& trace, const std::string& importer,
                             const importers::ImportOptions& options, int64_t interval_ns) {
  if (trace == "-") return {};
  const std::string kind = importer_kind(trace, importer);
  const bool rates = has_source_rates(kind), one_process = is_one_process(kind);
  auto cache = std::make_shared<std::optional<Ds2Run>>();
  return [trace, importer, options, interval_ns, cache, rates, one_process](Verdict& v) {
    v.one_process = one_process;
    v.no_source_rates = !rates;
    if (!rates || v.kind != VerdictKind::op) return;
    if (!*cache) {
      try {
        *cache = ds2_over_trace(trace, importer, options, interval_ns);
      } catch (const std::exception&) {
        *cache = Ds2Run{};  // no rates DS2 can use: the verdict stays without a number
      }
    }
    const Ds2Run& run = **cache;
    const std::optional<uint32_t> op = run.topology.find_id(std::to_string(v.id));
    if (!op) return;
    // The interval that asks for the most instances (the first of equals).
    for (const scale::PolicyEpoch& e : run.epochs) {
      if (*op >= e.decision.parallelism.size() || *op >= e.current.size()) continue;
      if (e.decision.parallelism[*op] > v.ds2_needed) {
        v.ds2_needed = e.decision.parallelism[*op];
        v.ds2_now = e.current[*op];
      }
    }
  };
}

}  // namespace snailtrail::cli
