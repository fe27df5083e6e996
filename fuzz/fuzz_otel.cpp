// libFuzzer target for the OTLP/JSON and Jaeger JSON importers and the critical path.
// The first byte picks the parser (bit 0), and (bit 1) also reads the text as a stream
// (stream_spans, as `critical-path` does: jaeger_stream, otlp_stream) in read chunks of
// 8 to 38 bytes (bits 3-7; all set: 1 MiB), so that Jaeger traces are read span by span
// (jaeger_big_trace), with an OTLP trace gap of 1 document (bit 2: traces cut into
// pieces) or 64: it must keep every span the whole-file import keeps when it skips no
// trace. TraceError is the only acceptable failure; every diagnostic counted must be
// declared by its importer; a successful import must map onto events the PAG builder
// accepts, and every critical path must account for exactly its trace's duration.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "pag/timeline.hpp"
#include "requests/critical_path.hpp"

namespace {

void check_declared(const std::vector<std::pair<std::string, uint64_t>>& diagnostics) {
  for (const auto& [kind, n] : diagnostics)
    if (!snailtrail::importers::find_diagnostic_kind(kind)) std::abort();
}

}  // namespace

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
  if (data[0] & 2) {
    const int fd = ::memfd_create("fuzz-spans", 0);
    if (fd < 0) std::abort();
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) std::abort();
    // Bits 3-7 all set: 1 MiB chunks, so traces are whole units (push_trace).
    const size_t chunk_bits = data[0] >> 3;
    importers::set_stream_chunk_bytes(chunk_bits == 31 ? size_t(1) << 20 : 8 + chunk_bits);
    size_t spans = 0;
    try {
      const importers::SpanStream s = importers::stream_spans(
          "/proc/self/fd/" + std::to_string(fd), (data[0] & 1) ? "jaeger" : "otlp", 1,
          [&](size_t, const importers::SpanSet& unit) {
            spans += unit.spans.size();
            check_declared(unit.diagnostics);
          },
          (data[0] & 4) ? 1 : 64);
      if (s.skipped.empty() && spans != set.spans.size()) std::abort();
      check_declared(s.diagnostics);
    } catch (const TraceError&) {
    }
    ::close(fd);
  }
  const Trace trace = importers::spans_to_trace(set, {});
  check_declared(trace.import_diagnostics);
  if (!trace.events.empty()) (void)build_pag(trace);
  for (const requests::CriticalPath& p : requests::critical_paths(set)) {
    int64_t sum = 0;
    for (const requests::PathStep& s : p.path) sum += s.critical_ns;
    if (sum != p.duration_ns) std::abort();
  }
  return 0;
}
