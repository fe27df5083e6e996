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
  std::optional<scale::PolicyEpoch> epoch;  // the whole trace's, if any
};

Ds2Run ds2_over_whole_trace(const std::string& trace, const std::string& importer) {
  Ds2Run run;
  PolicyArgs args;  // scale policy's defaults
  args.trace = trace;
  args.importer = importer;
  const scale::PolicyOptions po = policy_options(args);
  std::unique_ptr<EventSource> events;
  std::unique_ptr<scale::ObservationSource> source =
      trace_source(trace, importer, kWholeTrace, events);
  run.topology = source->topology();
  if (run.topology.size() == 0) return run;
  std::vector<scale::PolicyEpoch> epochs = policy_epochs(*source, run.topology, {}, po);
  if (epochs.size() == 1) run.epoch = std::move(epochs.front());
  return run;
}

}  // namespace

VerdictEnricher ds2_enricher(const std::string& trace, const std::string& importer) {
  if (trace == "-") return {};
  auto cache = std::make_shared<std::optional<Ds2Run>>();
  return [trace, importer, cache](Verdict& v) {
    if (v.kind != VerdictKind::op) return;
    if (!*cache) {
      try {
        *cache = ds2_over_whole_trace(trace, importer);
      } catch (const std::exception&) {
        *cache = Ds2Run{};  // no rates DS2 can use: the verdict stays without a number
      }
    }
    const Ds2Run& run = **cache;
    if (!run.epoch) return;
    const std::optional<uint32_t> op = run.topology.find_id(std::to_string(v.id));
    if (!op || *op >= run.epoch->decision.parallelism.size() || *op >= run.epoch->current.size())
      return;
    v.ds2_needed = run.epoch->decision.parallelism[*op];
    v.ds2_now = run.epoch->current[*op];
  };
}

}  // namespace snailtrail::cli
