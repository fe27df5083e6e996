// libFuzzer target for the `perf script` sched reader (src/kernel). TraceError is the only
// acceptable failure; whatever parses must build a model whose critical paths partition
// their range, and whose trace (threads as workers) the PAG builder accepts. The same
// bytes are also fed to the streaming reader (serve --follow) in chunks: every worker's
// events must come out in time order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "kernel/critical_path.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/perf_stream.hpp"
#include "kernel/to_trace.hpp"
#include "pag/timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    kernel::PerfSchedStream stream("fuzz.perf");
    Trace streamed;
    const size_t chunk = size ? 1 + data[0] % 61 : 1;
    for (size_t at = 0; at < size; at += chunk) stream.feed(text.substr(at, chunk), streamed);
    stream.finish(streamed);
    std::unordered_map<uint32_t, int64_t> last;
    for (const Event& e : streamed.events) {
      auto [it, fresh] = last.emplace(e.worker, e.ts);
      if (!fresh && e.ts < it->second) std::abort();
      it->second = e.ts;
    }
  } catch (const TraceError&) {
  }
  kernel::KernelEvents events;
  try {
    events = kernel::parse_perf_script(text, "fuzz.perf");
  } catch (const TraceError&) {
    return 0;
  }
  const kernel::KernelModel model = kernel::build_model(std::move(events));
  for (size_t t = 0; t < model.threads.size() && t < 8; ++t) {
    const kernel::CriticalPathResult r =
        kernel::critical_path(model, static_cast<int32_t>(t), model.begin, model.end);
    int64_t covered = 0, at = model.begin;
    for (const kernel::PathSegment& s : r.path) {
      if (s.start != at || s.end <= s.start) std::abort();
      covered += s.end - s.start;
      at = s.end;
    }
    if (model.end > model.begin && covered != model.end - model.begin) std::abort();
  }
  const Trace trace = kernel::to_trace(model);
  if (!trace.events.empty()) (void)build_pag(trace);
  return 0;
}
