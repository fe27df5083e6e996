// libFuzzer target for the JSONL reader. TraceError is the only acceptable failure; anything
// else (crash, sanitizer report, other exception) escapes so the fuzzer reports it.
// A successful parse must also survive write/read round trips (JSONL and .snail) unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "trace/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Trace trace;
  try {
    trace = parse_jsonl(text, "fuzz.jsonl");
  } catch (const TraceError&) {
    return 0;
  }
  // Not inside the try: an error while re-reading our own output is a bug.
  const std::string once = to_jsonl(trace);
  if (to_jsonl(parse_jsonl(once, "again.jsonl")) != once) std::abort();
  const std::string image = to_snail(trace);
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(image.data()),
                                       image.size());
  if (to_jsonl(parse_snail(bytes, "again.snail")) != once) std::abort();
  return 0;
}
