// libFuzzer target for the live-stream decoder: any bytes, cut into pieces at
// input-chosen places, must decode without throwing or crashing.
#include <cstddef>
#include <cstdint>
#include <span>

#include "trace/stream_decoder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  if (size == 0) return 0;
  // The first byte chooses the piece size, the rest is the stream.
  const size_t piece = 1 + data[0] % 64;
  StreamDecoder d("fuzz");
  Trace out;
  for (size_t pos = 1; pos < size; pos += piece) {
    const size_t n = pos + piece <= size ? piece : size - pos;
    d.feed(std::span<const uint8_t>(data + pos, n), out);
  }
  d.finish(out);
  if (out.events.size() != d.stats().events) __builtin_trap();
  return 0;
}
