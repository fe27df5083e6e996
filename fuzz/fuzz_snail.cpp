// libFuzzer target for the .snail reader. TraceError is the only acceptable failure; anything
// else (crash, sanitizer report, other exception) escapes so the fuzzer reports it.
// A successful parse must also survive write/read round trips (raw, zstd, JSONL) unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "trace/trace_io.hpp"

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  Trace trace;
  try {
    trace = parse_snail(std::span<const uint8_t>(data, size), "fuzz.snail");
  } catch (const TraceError&) {
    return 0;
  }
  // Not inside the try: an error while re-reading our own output is a bug.
  const std::string text = to_jsonl(trace);
  if (to_jsonl(parse_jsonl(text, "again.jsonl")) != text) std::abort();
  SnailWriteOptions options;
  options.events_per_block = 3;
  if (to_jsonl(parse_snail(bytes_of(to_snail(trace, options)), "raw.snail")) != text) std::abort();
  options.compress = true;
  options.compression_level = 1;
  if (to_jsonl(parse_snail(bytes_of(to_snail(trace, options)), "zstd.snail")) != text) std::abort();
  return 0;
}
