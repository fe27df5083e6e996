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

}  // namespace

VerdictEnricher ds2_enricher(const std::string& trace, const std::string& importer,
                             const importers::ImportOptions& options, int64_t interval_ns) {
  if (trace == "-") return {};
  auto cache = std::make_shared<std::optional<Ds2Run>>();
  return [trace, importer, options, interval_ns, cache](Verdict& v) {
    if (v.kind != VerdictKind::op) return;
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
