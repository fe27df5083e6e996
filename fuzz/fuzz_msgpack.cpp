// libFuzzer target for the original SnailTrail MessagePack importer. TraceError is the only
// acceptable failure. A log that imports must give valid events grouped by worker in time
// order (so the PAG builds) that survive a JSONL round trip, and the streaming importer fed
// the log in pieces must give the same events (in the batch import's order).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "importers/msgpack/msgpack_importer.hpp"
#include "importers/streaming.hpp"
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

  // The same log as a stream (serve --follow), fed in pieces whose sizes come from the
  // input itself: the same events.
  Trace streamed;
  try {
    auto stream = importers::msgpack_log::make_stream("fuzz");
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    for (size_t at = 0, k = 0; at < size; ++k) {
      const size_t piece = std::min<size_t>(size - at, 1 + data[k % size] % 61);
      stream->feed(bytes.substr(at, piece), streamed);
      at += piece;
    }
    stream->finish(streamed);
  } catch (const TraceError&) {
    std::abort();  // the whole log imported, so its pieces must too
  }
  // The stream keeps the file's order; the batch import then sorts a log that is not in
  // time order by worker (docs/IMPORTERS.md): do the same before comparing.
  auto& ev = streamed.events;
  if (!std::is_sorted(ev.begin(), ev.end(),
                      [](const Event& a, const Event& b) { return a.ts < b.ts; }))
    std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
      return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
    });
  if (to_jsonl(streamed) != once) std::abort();
  return 0;
}
