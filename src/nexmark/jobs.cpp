// nexmark-qN: source (the generator, open loop at --rate or closed loop) -> query N
// (native keyed state) -> digest (the output per logical time, and the latency probe).
#include "nexmark/jobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <stdexcept>

#include "flow/open_loop.hpp"
#include "nexmark/built_queries.hpp"
#include "nexmark/megaphone_keyed.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::nexmark {
namespace {

using flow::Time;

// Under --rate max a source may run ahead of the output probe by this many epochs, or by
// the logical time of this many events, whichever is longer: enough records in flight
// to fill batches when an epoch holds few events (at the default 10^6 events/s of
// event-time schedule, an epoch of 1 ms holds 1000).
constexpr Time kMaxLagEpochs = 4;
constexpr uint64_t kMaxLagEvents = 65536;

// Worker w's events w, w + G, ...: open loop (each given when due, at its logical time)
// or, under --rate max, as fast as the probe allows, on the nominal schedule.
flow::Stream<Event> nexmark_source(flow::JobContext& ctx, const QueryConfig& qc) {
  struct Logic {
    flow::JobContext* ctx;
    Generator gen;
    bool open_loop;
    uint64_t produced = 0, limit = 0;
    void operator()(flow::Capability& cap, flow::Output<Event>& out) {
      const flow::RunConfig& c = ctx->cfg;
      const auto now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - ctx->start)
                                                 .count());
      const auto duration = static_cast<uint64_t>(c.duration_ns);
      const uint32_t w = ctx->worker.index(), G = ctx->worker.peers();
      if (produced >= limit || (!open_loop && now >= duration)) {
        cap.drop();
        return;
      }
      const Time lag = std::max<Time>(kMaxLagEpochs * static_cast<Time>(c.epoch_ns),
                                      gen.intended_ns(kMaxLagEvents));
      uint64_t given = 0;
      Time last = 0;
      bool ended = false;
      for (; given < 16 * flow::kBatch && produced < limit; ++given) {
        const uint64_t n = w + produced * G;
        const uint64_t due = gen.intended_ns(n);
        if (open_loop && due >= duration) {
          ended = true;
          break;
        }
        if (open_loop && due > now) break;
        const Time t = gen.logical_time(n);
        if (!open_loop && t > lag && ctx->probe_frontier < t - lag) {
          cap.downgrade(std::max(cap.time(), t));
          break;
        }
        if (t != cap.time()) cap.downgrade(std::max(cap.time(), t));
        if (ctx->record_latency)
          ctx->record_latency->given(produced, t, static_cast<int64_t>(open_loop ? due : now));
        out.give(cap, gen.event(n));  // at t (the events' times never decrease)
        last = t;
        ++produced;
      }
      if (given > 0) {
        ctx->generated.fetch_add(given, std::memory_order_relaxed);
        Time prev = ctx->last_time.load(std::memory_order_relaxed);
        while (last > prev &&
               !ctx->last_time.compare_exchange_weak(prev, last, std::memory_order_relaxed)) {
        }
      }
      if (ended || produced >= limit) {
        cap.drop();
        return;
      }
      // Nothing before the next event's time.
      const Time next = gen.logical_time(w + produced * G);
      cap.downgrade(std::max(cap.time(), next));
      if (open_loop) ctx->worker.set_source_active(true);
    }
  };
  Logic l{&ctx, Generator(qc.gen), ctx.cfg.rate > 0};
  l.limit = ctx.record_limit();
  return flow::source<Event>(ctx.worker, "source", std::move(l));
}

// Digests the output per logical time (output_digests' encoding) and reports the
// stream's frontier to the latency probe.
void digest_and_probe(flow::JobContext& ctx, const flow::Stream<Row>& rows,
                      std::function<void(Time, Time)> also = {}) {
  struct Logic {
    flow::JobContext* ctx;
    std::function<void(Time, Time)> also;
    std::map<Time, std::pair<uint64_t, uint64_t>> per_time;
    Time frontier = 0;
    bool reported = false;
    void operator()(flow::ReadInput<Row>& in, flow::Output<char>&) {
      in.for_each([&](Time t, std::span<const Row> data) {
        auto& [sum, count] = per_time[t];
        for (const Row& r : data) sum += row_hash(r);
        count += data.size();
      });
      const Time f = in.frontier();
      if (f != frontier) {
        ctx->on_probe(frontier, f);
        if (also) also(frontier, f);
        frontier = f;
      }
      if (f == flow::kTimeMax && !reported) {
        reported = true;
        flow::KeyCounts out;
        for (const auto& [t, sc] : per_time) {
          out.emplace_back(2 * t, sc.first);
          out.emplace_back(2 * t + 1, sc.second);
        }
        ctx->emit_result(std::move(out));
      }
    }
  };
  rows.template unary<char>(flow::Read{}, "digest", Logic{&ctx, std::move(also), {}, 0, false});
}

flow::JobSpec query_job(int q) {
  flow::JobSpec j;
  j.name = fmt::format("nexmark-q{}", q);
  j.description = kQueryDescriptions[q];
  j.build = [q](flow::JobContext& ctx) {
    const QueryConfig qc = query_config(ctx.cfg);
    auto events = nexmark_source(ctx, qc);
    digest_and_probe(ctx, build_native_query(q, events, qc));
  };
  j.reference_run = [q](const flow::RunConfig& cfg, const std::vector<uint64_t>& per_stream) {
    const QueryConfig qc = query_config(cfg);
    return output_digests(reference_query(q, qc, run_events(Generator(qc.gen), per_stream)));
  };
  return j;
}

}  // namespace

std::string register_megaphone_job(int q, const megaphone::JobOptions& opts,
                                   std::shared_ptr<megaphone::MigrationLog> log) {
  if (q < 3 || q >= kQueries)
    throw UsageError(
        {field("log_bins"), fmt::format(": nexmark-q{} has no keyed state (Megaphone versions: "
                                        "nexmark-q3 ... q8)",
                                        q)});
  if (opts.log_bins > 20) throw UsageError({field("log_bins"), ": at most 2^20"});
  if (!log) log = std::make_shared<megaphone::MigrationLog>();
  flow::JobSpec j = query_job(q);
  j.name += "-megaphone";
  j.description += " (Megaphone's migratable state)";
  j.build = [q, opts, log](flow::JobContext& ctx) {
    const QueryConfig qc = query_config(ctx.cfg);
    auto events = nexmark_source(ctx, qc);
    auto data = flow::probe(events, "source-probe", [](Time, Time) {});
    MegaphoneKeyed k{megaphone::make_controller(ctx, opts, log, data), {}};
    k.opts.log_bins = opts.log_bins;
    // Bytes by the step time they moved at: under mpirun every rank's share reaches rank
    // 0's records (gathered in run_command.cpp), as for keycount/hashcount.
    k.opts.on_bin_sent_at = [log](Time t, uint32_t, uint64_t bytes) {
      log->add_bytes_at(t, bytes);
    };
    digest_and_probe(
        ctx, build_megaphone_query(q, events, qc, k),
        [c = &ctx, log](Time old, Time now) { megaphone::log_probe_latency(*c, *log, old, now); });
  };
  const std::string name = j.name;
  flow::register_job(std::move(j));
  return name;
}

QueryConfig query_config(const flow::RunConfig& cfg) {
  QueryConfig qc;
  qc.gen.seed = cfg.seed;
  qc.gen.epoch_ns = cfg.epoch_ns;
  auto param = [&](const char* name, double dflt) {
    auto it = cfg.params.find(name);
    return it == cfg.params.end() ? dflt : it->second;
  };
  qc.gen.rate = cfg.rate > 0 ? cfg.rate : param("event_rate", 1e6);
  qc.gen.apply(cfg.params);
  const double window = param("window_ns", 10e9), slide = param("window_slide_ns", 5e9);
  if (!(window >= 1 && window <= 1e18) || !(slide >= 1 && slide <= window))
    throw std::invalid_argument(
        "nexmark: --window and --window-slide must be positive, slide <= window");
  qc.window_ns = static_cast<uint64_t>(window);
  qc.slide_ns = static_cast<uint64_t>(slide);
  if (qc.window_ns % qc.slide_ns != 0)
    throw std::invalid_argument(
        fmt::format("nexmark: the window ({} ns) must be a multiple of the slide ({} ns)",
                    qc.window_ns, qc.slide_ns));
  return qc;
}

std::vector<Event> run_events(const Generator& gen, const std::vector<uint64_t>& per_stream) {
  const auto G = static_cast<uint64_t>(per_stream.size());
  uint64_t total = 0;
  for (uint64_t c : per_stream) total += c;
  std::vector<Event> ev;
  ev.reserve(total);
  // Event n belongs to stream n mod G, which gave its first per_stream[n mod G] events.
  uint64_t bound = 0;
  for (uint64_t w = 0; w < G; ++w)
    if (per_stream[w] > 0) bound = std::max(bound, w + (per_stream[w] - 1) * G + 1);
  for (uint64_t n = 0; n < bound; ++n)
    if (n / G < per_stream[n % G]) ev.push_back(gen.event(n));
  return ev;
}

flow::KeyCounts output_digests(const std::vector<std::pair<Time, Row>>& rows) {
  std::map<Time, std::pair<uint64_t, uint64_t>> per_time;
  for (const auto& [t, r] : rows) {
    auto& [sum, count] = per_time[t];
    sum += row_hash(r);
    ++count;
  }
  flow::KeyCounts out;
  for (const auto& [t, sc] : per_time) {
    out.emplace_back(2 * t, sc.first);
    out.emplace_back(2 * t + 1, sc.second);
  }
  return out;
}

void register_jobs() {
  for (int q = 0; q < kQueries; ++q) flow::register_job(query_job(q));
}

}  // namespace snailtrail::nexmark
