// libFuzzer target for the OTLP/JSON and Jaeger JSON importers and the critical path.
// The first byte picks the parser. TraceError is the only acceptable failure; a
// successful import must map onto events the PAG builder accepts, and every critical path
// must account for exactly its trace's duration.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "importers/otel/critical_path.hpp"
#include "importers/otel/otel_importer.hpp"
#include "pag/timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  importers::SpanSet set;
  try {
    set = (data[0] & 1) ? importers::parse_jaeger(text, "fuzz.json")
                        : importers::parse_otlp(text, "fuzz.json");
  } catch (const TraceError&) {
    return 0;
  }
  const Trace trace = importers::spans_to_trace(set, {});
  if (!trace.events.empty()) (void)build_pag(trace);
  for (const importers::CriticalPath& p : importers::critical_paths(set)) {
    int64_t sum = 0;
    for (const importers::PathStep& s : p.path) sum += s.critical_ns;
    if (sum != p.duration_ns) std::abort();
  }
  return 0;
}
