// libFuzzer target for the Chrome Trace Event Format importer. TraceError is the only
// acceptable failure; a successful import must give per-worker ordered events that the
// PAG builder accepts (it throws on a worker going back in time), and count only the
// diagnostics the importer declares.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "importers/chrome/chrome_importer.hpp"
#include "importers/importer.hpp"
#include "pag/timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Trace trace;
  try {
    trace = importers::parse_chrome(text, "fuzz.json");
  } catch (const TraceError&) {
    return 0;
  }
  for (const auto& [kind, n] : trace.import_diagnostics)
    if (!importers::find_diagnostic_kind(kind)) std::abort();
  // Not inside the try: our own events must always build.
  if (!trace.events.empty()) (void)build_pag(trace);
  return 0;
}
