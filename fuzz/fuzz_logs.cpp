// libFuzzer target for plain logs (src/logs): header detection and matching (every
// preset, the loghub datasets' too), Drain (with --mask and the indexed leaves),
// identifier inference (sampled logs too) and flows (--id on whole lines, --node-field),
// and the logs importer. No exception is acceptable on
// any bytes (bad lines are counted, not fatal); the importer's events must build a PAG.
#include <cstddef>
#include <cstdint>
#include <string>

#include "importers/logs/logs_importer.hpp"
#include "logs/flows.hpp"
#include "logs/log_set.hpp"
#include "pag/timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Two "nodes": the input and its second half, so that flows cross files.
  logs::LogOptions options;
  options.max_line_bytes = 512;
  // The first byte's bits choose options: a node field, a mask, an --id on whole lines.
  const uint8_t knobs = size ? data[0] : 0;
  if (knobs & 1) options.node_field = "Component";
  if (knobs & 2) options.drain.masks = {"[a-z]+-[0-9]+"};
  logs::FlowOptions flow_options;
  if (knobs & 4) flow_options.id_regex = "(?:req|blk)[-_][0-9a-f-]+";
  const logs::LogSet set =
      logs::parse_logs({{"a.log", text}, {"b.log", text.substr(size / 2)}}, options);
  const logs::FlowSet flows = logs::build_flows(set, flow_options);
  const Trace trace = importers::logs_to_trace(set, flows, "fuzz");
  if (!trace.events.empty()) (void)build_pag(trace);
  return 0;
}
