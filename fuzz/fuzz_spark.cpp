// libFuzzer target for the Spark event log importer. TraceError is the only acceptable
// failure. A log that imports must give valid events that build a PAG (each worker's events
// in time order, every message type on send/recv) and survive a JSONL round trip, and the
// streaming importer fed the log in pieces must give the same events.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "importers/spark/spark_importer.hpp"
#include "importers/streaming.hpp"
#include "pag/timeline.hpp"
#include "trace/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  if (size == 0) return 0;
  // The first byte picks the scheduler-delay split, the rest is the log.
  importers::spark::SparkOptions options;
  options.launch_weight = data[0] & 0x0F;
  options.result_weight = (data[0] >> 4) | (options.launch_weight == 0 ? 1 : 0);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  Trace trace;
  try {
    trace = importers::spark::parse_event_log(text, "fuzz", options);
  } catch (const TraceError&) {
    return 0;
  }
  for (const Event& e : trace.events) {
    if (e.is_message() != is_communication(e.activity)) std::abort();
    if (e.is_message() && !(e.has(kHasCorrelator) && e.has(kHasRemote))) std::abort();
  }
  // Not inside the try: the importer's own output must always build.
  if (!trace.events.empty()) build_pag(trace);
  const std::string once = to_jsonl(trace);
  if (to_jsonl(parse_jsonl(once, "again.jsonl")) != once) std::abort();

  // The same log as a stream (serve --follow), fed in pieces whose sizes come from the
  // input itself: the same events.
  importers::ImportOptions stream_options;
  stream_options.spark_delay_split =
      std::to_string(options.launch_weight) + ":" + std::to_string(options.result_weight);
  Trace streamed;
  try {
    auto stream = importers::spark::make_stream("fuzz", stream_options);
    for (size_t at = 0, k = 0; at < text.size(); ++k) {
      const size_t piece = std::min<size_t>(text.size() - at, 1 + data[k % size] % 97);
      stream->feed(text.substr(at, piece), streamed);
      at += piece;
    }
    stream->finish(streamed);
  } catch (const TraceError&) {
    std::abort();  // the whole log imported, so its pieces must too
  }
  streamed.worker_names = trace.worker_names;
  streamed.operator_names = trace.operator_names;
  if (to_jsonl(streamed) != once) std::abort();
  return 0;
}
