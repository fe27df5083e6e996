// libFuzzer target for the original SnailTrail MessagePack importer. TraceError is the only
// acceptable failure. A log that imports must give valid events grouped by worker in time
// order (so the PAG builds) that survive a JSONL round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "importers/msgpack/msgpack_importer.hpp"
#include "pag/timeline.hpp"
#include "trace/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  Trace trace;
  try {
    trace = importers::msgpack_log::parse_log(std::span<const uint8_t>(data, size), "fuzz");
  } catch (const TraceError&) {
    return 0;
  }
  for (const Event& e : trace.events)
    if (e.is_message() != is_communication(e.activity)) std::abort();
  if (!trace.events.empty()) build_pag(trace);
  const std::string once = to_jsonl(trace);
  if (to_jsonl(parse_jsonl(once, "again.jsonl")) != once) std::abort();
  return 0;
}
