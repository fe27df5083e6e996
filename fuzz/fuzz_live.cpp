// Differential libFuzzer target for live windowing: the input describes events (5 bytes
// each) and an arrival interleaving; the windows `serve` would emit must equal the ones
// `analyze` computes from the same events, byte for byte. Lateness is larger than any
// message delay the input can express, so nothing is late (docs/SERVE.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "output/empty_windows.hpp"
#include "output/writers.hpp"
#include "serve/live_analyzer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  if (size < 2) return 0;
  LiveOptions lo;
  lo.window_ns = 50 + data[0] * 4;
  lo.pag.gap_threshold_ns = 1 + data[1];
  lo.lateness_ns = 1 << 20;
  // Per event: worker (2 bits), kind (2 bits), activity (3 bits), ts step, correlator.
  std::vector<std::vector<Event>> per_worker(4);
  std::vector<int64_t> clock(4, 0);
  size_t pos = 2;
  for (; pos + 5 <= size && pos < 2 + 5 * 2000; pos += 5) {
    const uint8_t a = data[pos];
    Event e;
    e.worker = a & 3u;
    e.kind = static_cast<EventKind>((a >> 2) & 3u);
    clock[e.worker] += data[pos + 1] % 64;
    e.ts = clock[e.worker];
    if (e.is_message()) {
      e.activity = (a >> 4) & 1 ? ActivityType::control_message : ActivityType::data_message;
      e.remote = data[pos + 2] & 3u;
      e.flags = kHasRemote;
      if (!(data[pos + 2] & 0x80)) {
        e.correlator = data[pos + 3] % 16;
        e.flags |= kHasCorrelator;
      }
    } else {
      e.activity = static_cast<ActivityType>(((a >> 4) & 7u) % 6);
      if (data[pos + 4] & 1) {
        e.op = data[pos + 4] >> 5;
        e.flags = kHasOperator;
      }
    }
    per_worker[e.worker].push_back(e);
  }
  Trace trace;
  for (const auto& w : per_worker)
    for (const Event& e : w) trace.events.push_back(e);
  if (trace.events.empty()) return 0;

  std::vector<std::string> expected;
  try {
    const Pag pag = build_pag(trace, lo.pag);
    AnalysisOptions opt;
    opt.pag = lo.pag;
    opt.windows.width_ns = lo.window_ns;
    const Names names(trace, pag);
    analyze_pag(pag, opt, [&](const WindowView& v) {
      fmt::memory_buffer buf;
      if (v.summary.window.empty_run > 0)  // a run of windows without events
        write_empty_windows_json(buf, v.summary);
      else
        write_window_json(buf, v.summary, names, lo.selection);
      expected.emplace_back(buf.data(), buf.size());
    });
  } catch (const TraceError&) {
    return 0;
  }

  // Arrival: the remaining bytes pick which worker's stream delivers its next event;
  // windows may close after every event (once all workers have shown up).
  std::vector<std::string> got;
  LiveAnalyzer live(lo, [&](LiveWindow& w) { got.push_back(w.json); });
  live.hold(true);
  std::vector<size_t> next(4, 0);
  size_t seen = 0, left = trace.events.size(), active = 0;
  for (const auto& w : per_worker) active += !w.empty();
  for (size_t k = 0; left > 0; ++k) {
    size_t w = pos + k < size ? data[pos + k] & 3u : k & 3u;
    while (next[w] == per_worker[w].size()) w = (w + 1) & 3u;
    if (next[w] == 0 && ++seen == active) live.hold(false);
    live.add(per_worker[w][next[w]++]);
    --left;
    live.advance();
  }
  live.finish();
  if (got != expected) __builtin_trap();
  return 0;
}
