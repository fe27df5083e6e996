// libFuzzer target for the live path of `serve`, in two parts run on every input:
//
// 1. Ingestion: the input is also a producer's byte stream (JSONL or .snail), received by
//    two connections in pieces of input-chosen sizes through the admission protocol of
//    the TCP event loops (serve/ingest.hpp, ConnectionInput) with a shared buffer budget.
//    Checked: a connection is never refused for good (no deadlock), its buffered input
//    stays within its allowance, the budget is never exceeded, every batch is bounded
//    (one batch of events plus one block), and the events queued are the ones decoded.
//    Run with -rss_limit_mb and -timeout to bound memory and time as well (docs/SERVE.md).
// 2. Windowing (differential): the input describes events (5 bytes each) and an arrival
//    interleaving; the windows `serve` would emit must equal the ones `analyze` computes
//    from the same events, byte for byte. Lateness is larger than any message delay the
//    input can express, so nothing is late (docs/SERVE.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "output/empty_windows.hpp"
#include "output/writers.hpp"
#include "serve/ingest.hpp"
#include "serve/live_analyzer.hpp"
#include "trace/trace_io_detail.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void fuzz_ingestion(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  using serve::ConnectionInput;
  serve::BatchQueue queue(SIZE_MAX);
  serve::IngestCounters counters;
  // Room for the largest unit of both connections at once: neither may wait for good.
  constexpr size_t kUnit = detail::snail::kMaxBlockBytes + 16 + (size_t{1} << 20);
  serve::MemoryBudget budget(2 * kUnit);
  ConnectionInput a("a", queue, counters, budget), b("b", queue, counters, budget);
  const size_t piece_a = 1 + (size ? data[0] : 0) % 97, piece_b = 1 + (size > 1 ? data[1] : 0);
  size_t pos_a = 0, pos_b = 0;
  bool ok_a = true, ok_b = true;
  uint64_t queued = 0;
  auto drain = [&] {
    while (std::optional<serve::Batch> batch = queue.pop(0)) {
      check(batch->events.size() <= (size_t{1} << 16) + detail::snail::kMaxBlockEvents);
      queued += batch->events.size();
    }
  };
  auto step = [&](ConnectionInput& in, size_t& pos, size_t piece, bool& ok) {
    if (!ok || pos == size) return;
    check(in.admit());
    const size_t n = std::min({piece, in.room(), size - pos});
    check(n > 0);
    ok = in.feed(data + pos, n);
    pos += n;
    check(in.buffered() <= std::max(ConnectionInput::kFreeBytes, in.reserved()));
    check(budget.used() <= budget.limit());
    drain();
  };
  while ((ok_a && pos_a < size) || (ok_b && pos_b < size)) {
    step(a, pos_a, piece_a, ok_a);
    step(b, pos_b, piece_b, ok_b);
  }
  if (ok_a) a.finish();
  if (ok_b) b.finish();
  drain();
  check(queued == counters.events.load());
  check(static_cast<uint64_t>(counters.buffered_bytes.load()) == a.buffered() + b.buffered());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  fuzz_ingestion(data, size);
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
