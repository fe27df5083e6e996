// `snailtrail analyze`: CP analysis of a trace file, window by window.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.hpp"
#include "cli/duration.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/streamed_input.hpp"
#include "cli/trace_input.hpp"
#include "cli/verdict_ds2.hpp"
#include "importers/auto_window.hpp"
#include "importers/importer.hpp"
#include "mpi/rank_group.hpp"
#include "output/empty_windows.hpp"
#include "output/writers.hpp"
#include "summary/streamed.hpp"
#include "summary/summary_wire.hpp"
#include "trace/snail_index.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {
namespace {

struct AnalyzeArgs {
  TraceInputArgs in;
  std::string format = "table";
  std::string summary = "all";
  size_t top = 10;
  std::string dump_edges;
  bool per_window = false;
  std::string output;
  bool no_progress = false;
  bool timings = false;
  bool what_if = false;
  double what_if_speedup = 2;
};

// This process's peak resident set (VmHWM). Unlike getrusage's ru_maxrss it does not
// include the parent's memory when the process was spawned with vfork semantics.
uint64_t peak_rss_kb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lu kB", &kb) == 1) break;
  std::fclose(f);
  return kb;
}

// A window as one rank sends it to rank 0: kind (0 window, 1 run of windows without
// events), index, start, end, empty_run, text length, summary length, text, and the
// window's summary (summary/summary_wire.hpp) when rank 0 aggregates the windows.
void append_record(std::string& out, const RenderedWindow& r, bool with_summary) {
  auto put = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  const bool run = r.summary.window.empty_run > 0;
  put(static_cast<uint8_t>(run));
  put(static_cast<uint64_t>(r.summary.index));
  put(r.summary.window.start);
  put(r.summary.window.end);
  put(r.summary.window.empty_run);
  put(static_cast<uint64_t>(run ? 0 : r.text.size()));
  const size_t summary_len_at = out.size();
  put(uint64_t{0});
  if (run) return;
  out.append(r.text);
  if (!with_summary) return;
  const size_t before = out.size();
  append_summary(out, r.summary);
  const uint64_t len = out.size() - before;
  std::memcpy(out.data() + summary_len_at, &len, sizeof len);
}

// Replays the complete records (append_record) at the front of `in` into `consume`;
// returns the bytes they took (a record cut at the end of `in` is left).
size_t replay_records(std::string_view in, const std::function<void(RenderedWindow&)>& consume) {
  constexpr size_t kHead = 1 + 6 * sizeof(uint64_t);
  size_t pos = 0;
  auto get = [&](auto& v) {
    std::memcpy(&v, in.data() + pos, sizeof v);
    pos += sizeof v;
  };
  RenderedWindow r;
  while (in.size() - pos >= kHead) {
    const size_t begin = pos;
    uint8_t run = 0;
    uint64_t index = 0, len = 0, summary_len = 0;
    get(run);
    get(index);
    get(r.summary.window.start);
    get(r.summary.window.end);
    get(r.summary.window.empty_run);
    get(len);
    get(summary_len);
    if (in.size() - pos < len || in.size() - pos - len < summary_len) return begin;
    const Window window = r.summary.window;
    r.text.assign(in.data() + pos, len);
    pos += len;
    if (summary_len > 0) {
      size_t at = 0;
      read_summary(in.substr(pos, summary_len), at, r.summary);
      if (at != summary_len) throw std::runtime_error("MPI: malformed window summary");
      pos += summary_len;
    }
    r.summary.index = static_cast<size_t>(index);
    r.summary.window = window;
    consume(r);
  }
  return pos;
}

// Replays rank `from`'s whole stream of records, piece by piece as it arrives.
void replay_rank(mpi::RankGroup& group, int from,
                 const std::function<void(RenderedWindow&)>& consume) {
  std::string carry;  // a record cut between two pieces
  while (std::optional<std::string> piece = group.receive_from(from)) {
    if (carry.empty()) {
      const size_t used = replay_records(*piece, consume);
      carry.assign(piece->data() + used, piece->size() - used);
    } else {
      carry += *piece;
      carry.erase(0, replay_records(carry, consume));
    }
    group.give_buffer(std::move(*piece));
  }
  if (!carry.empty()) throw std::runtime_error("MPI: truncated window record");
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int run(const AnalyzeArgs& args, mpi::RankGroup* group) {
  AnalyzeArgs a = args;
  // --window auto: 1 s until the importer is known (a .snail file read block by block is
  // a stream); then the choice of importers/auto_window.hpp.
  const bool auto_window = a.in.window == "auto";
  AutoWindowChoice auto_choice;
  AnalysisOptions opt;
  apply_window_options(a.in, opt);
  if (auto_window) a.in.window = "1s";
  SummarySelection sel = SummarySelection::parse(a.summary);
  opt.summary.top_k = a.top;
  opt.what_if.enabled = sel.what_if = a.what_if;
  opt.what_if.speedup = a.what_if_speedup;

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  StageTimes stage;
  if (a.timings) opt.times = &stage;
  const bool progress = !a.no_progress && isatty(STDERR_FILENO) && !(group && group->rank() > 0);
  // Edges are dumped from the whole trace's PAG.
  std::unique_ptr<SnailFile> snail =
      a.dump_edges.empty() ? open_streamed_trace(a.in, opt) : nullptr;
  // Under mpirun only a streamed analysis is split; otherwise rank 0 does it all.
  if (group && group->rank() > 0 && !(snail && a.format != "table")) return 0;
  Trace trace;
  Pag pag;  // in memory: the whole trace's; streamed: only the worker ids, for the names
  size_t event_count = 0;
  if (snail) {
    const TraceFacts& facts = snail->index().facts;
    trace = snail->names();
    pag = names_pag(facts);
    event_count = facts.events;
    if (auto_window) auto_choice = resolve_auto_window("snail", opt);
  } else {
    std::string_view used;
    trace = read_whole_trace(a.in, progress, &used);
    if (auto_window) {
      auto_choice = resolve_auto_window(used, opt);
      a.in.window = auto_choice.label;
    }
  }
  const auto t_read = Clock::now();
  if (!snail) {
    if (progress) fmt::print(stderr, "\rbuilding the PAG of {} events...", trace.events.size());
    pag = build_pag(trace, opt.pag);
    if (progress) fmt::print(stderr, "\r\033[K");
    // The events are in the PAG now; their memory is reused for the windows.
    event_count = trace.events.size();
    BigVector<Event>().swap(trace.events);
  }
  const auto t_pag = Clock::now();
  resolve_time_range(a.in, pag, opt);
  Names names(trace, pag);

  // Under mpirun, ranks share the windows of a streamed analysis (not the table, whose
  // totals need every window's summary): rank 0 writes everything.
  const bool split = group && snail && a.format != "table";
  const bool helper_rank = group && group->rank() > 0;
  if (helper_rank && !split) return 0;  // rank 0 does it all
  OutputFile out(helper_rank ? "/dev/null" : a.output);
  std::unique_ptr<OutputFile> edges;
  if (!a.dump_edges.empty()) edges = std::make_unique<OutputFile>(a.dump_edges);
  Aggregate agg;
  auto last = std::chrono::steady_clock::now();
  TableContext ctx{a.in.trace, a.in.window, a.top, 12, a.per_window, pag.first_ts};
  if (auto_window) {
    // Marked in the table's heading (80 columns: the reason goes to stderr, as for the
    // other formats).
    ctx.window_label += " (--window auto)";
    if (!helper_rank)
      fmt::print(stderr, "snailtrail: note: --window auto chose {}: {} (--window sets another)\n",
                 a.in.window == "whole" ? "the whole trace" : a.in.window, auto_choice.reason);
  }

  if (a.format == "csv") write_csv_header(out.buf());

  StreamedPlan splan;
  if (snail) splan = plan_streamed(snail->index().facts, opt.windows);
  if (!helper_rank && (snail ? splan.empty() : plan_windows(pag, opt.windows).empty()))
    fmt::print(stderr, "snailtrail: warning: {}\n", no_window_message(pag));
  // Windows are rendered on worker threads; output is written here, in window order.
  const unsigned threads = analysis_threads(a.in);
  // The table's totals and JSONL's last line (the run and its verdict) need every window's
  // summary (under mpirun the other ranks send theirs with their windows).
  const bool keep_summary = a.format == "table" || a.format == "jsonl";
  if (sel.verdict && keep_summary)
    ctx.enrich = ds2_enricher(a.in.trace, a.in.importer, a.in.import, opt.windows.width_ns);
  uint64_t empty_runs = 0, empty_windows = 0;
  // A run of windows without events.
  auto render_run = [&](const WindowSummary& summary, RenderedWindow& r) {
    fmt::memory_buffer text;
    if (a.format == "jsonl") {
      write_empty_windows_json(text, summary);
      text.push_back('\n');
    } else if (a.format == "table" && a.per_window) {
      fmt::format_to(std::back_inserter(text),
                     "== windows {} to {} [{}, {}]: no events, not analyzed\n\n", summary.index,
                     summary.index + summary.window.empty_run - 1, summary.window.start,
                     summary.window.end);
    }
    r.text.assign(text.data(), text.size());
    r.edges.clear();
  };
  const std::function<void(const WindowView&, RenderedWindow&)> render = [&](const WindowView& view,
                                                                             RenderedWindow& r) {
    if (view.summary.window.empty_run > 0) {
      render_run(view.summary, r);
      return;
    }
    // The importer's repairs concern the whole trace: reported with the first window.
    const bool first = view.summary.index == 0 && !trace.import_diagnostics.empty();
    WindowSummary with_import;
    if (first) {
      with_import = view.summary;
      for (const auto& [kind, n] : trace.import_diagnostics)
        with_import.diagnostics.add_input(kind, n);
    }
    const WindowView v{view.pag, view.snapshot, view.cp, first ? with_import : view.summary};
    fmt::memory_buffer text;
    if (a.format == "jsonl") {
      write_window_json(text, v.summary, names, sel);
      text.push_back('\n');
    } else if (a.format == "csv") {
      write_window_csv(text, v.summary, names, sel);
    } else if (a.per_window) {
      Aggregate one;
      one.add(v.summary, a.top);
      one.finish();
      TableContext window_ctx = ctx;
      window_ctx.column_key = false;  // once, in the table of the whole run
      window_ctx.enrich = {};         // DS2's number is the whole trace's
      write_table(text, one, names, sel, window_ctx,
                  fmt::format("== window {} [{}, {}]", v.summary.index, v.summary.window.start,
                              v.summary.window.end)
                      .c_str());
      text.push_back('\n');
    }
    r.text.assign(text.data(), text.size());
    if (edges) {
      fmt::memory_buffer e;
      write_edges_jsonl(e, v);
      r.edges.assign(e.data(), e.size());
    }
  };
  const std::function<void(RenderedWindow&)> consume_one = [&](RenderedWindow& r) {
    if (r.summary.window.empty_run > 0) {
      ++empty_runs;
      empty_windows += r.summary.window.empty_run;
      out.buf().append(r.text.data(), r.text.data() + r.text.size());
      out.maybe_flush();
      return;
    }
    if (r.summary.index == 0)
      for (const auto& [kind, n] : trace.import_diagnostics)
        r.summary.diagnostics.add_input(kind, n);
    if (keep_summary) agg.add(r.summary, a.top);
    out.buf().append(r.text.data(), r.text.data() + r.text.size());
    out.maybe_flush();
    if (edges) {
      edges->buf().append(r.edges.data(), r.edges.data() + r.edges.size());
      edges->maybe_flush();
    }
  };
  const std::function<void(size_t, size_t)> on_progress = [&](size_t done, size_t total) {
    if (!progress) return;
    auto now = std::chrono::steady_clock::now();
    if (done == total || now - last > std::chrono::milliseconds(200)) {
      last = now;
      // Remaining time at the rate so far (windows of a trace cost about the same).
      const double spent = seconds(t0, now);
      const double eta = done > 0 ? spent * static_cast<double>(total - done) / done : 0.0;
      fmt::print(stderr, "\ranalyzing {}: window {}/{}, {:.0f} s left\033[K{}", a.in.trace, done,
                 total, eta, done == total ? "\n" : "");
    }
  };
  StreamedStats sstats;
  // --timings under mpirun: where this rank's time went (seconds since this process
  // started its run, and its CPU time).
  double cpu_own = 0;
  auto print_rank_timings = [&](int64_t kb, int64_t ke, Clock::time_point own,
                                Clock::time_point gathered) {
    const auto now = Clock::now();
    fmt::print(stderr,
               "rank {} of {}: windows {}..{} ({} events in its blocks); MPI_Init done at "
               "{:.3f}s, own windows done at {:.3f}s (cpu {:.3f}s), others' written at "
               "{:.3f}s, end {:.3f}s; cpu {:.3f}s, of which MPI thread {:.3f}s; lookback {} ns, "
               "{} blocks read\n",
               group->rank(), group->size(), kb, ke, sstats.events_read, group->init_seconds(),
               seconds(t0, own), cpu_own, seconds(t0, gathered), seconds(t0, now), cpu_seconds(),
               group->mpi_thread_cpu_seconds(), sstats.lookback_ns, sstats.blocks_read);
  };
  if (snail) {
    // Runs of windows without events that meet where two cuts meet are one run.
    RenderedWindow run;
    auto flush_run = [&] {
      if (run.summary.window.empty_run == 0) return;
      render_run(run.summary, run);
      consume_one(run);
      run = RenderedWindow{};
    };
    const std::function<void(RenderedWindow&)> consume = [&](RenderedWindow& r) {
      if (r.summary.window.empty_run > 0) {
        if (run.summary.window.empty_run == 0) {
          run = std::move(r);
        } else {
          run.summary.window.end = r.summary.window.end;
          run.summary.window.empty_run += r.summary.window.empty_run;
        }
        return;
      }
      flush_run();
      consume_one(r);
    };
    if (!split) {
      sstats = analyze_snail_streamed(*snail, opt, splan, splan.k0, splan.k1, threads, render,
                                      consume, on_progress);
    } else {
      // Rank r takes the r-th share of the windows, in order, by events (the block
      // index's counts). Rank 0 also writes every other rank's output (about 15 % of the
      // work of analysing the windows that produced it, measured at two ranks): its share
      // is smaller by that much per other rank (docs/PERFORMANCE.md, "Scaling over ranks").
      const int64_t size = group->size(), rank = group->rank();
      std::vector<double> weights(static_cast<size_t>(size), 1.0);
      weights[0] = std::max(0.1, 1.0 - 0.15 * static_cast<double>(size - 1));
      const std::vector<int64_t> b = split_windows_by_events(snail->index(), splan, weights);
      const int64_t kb = b[static_cast<size_t>(rank)], ke = b[static_cast<size_t>(rank) + 1] - 1;
      if (helper_rank) {
        // Records go to rank 0 in pieces as windows are done (sent in the background).
        constexpr size_t kSendPiece = size_t{4} << 20;
        std::string records;
        records.reserve(kSendPiece + (kSendPiece >> 2));
        if (ke >= kb)
          sstats = analyze_snail_streamed(*snail, opt, splan, kb, ke, threads, render,
                                          [&](RenderedWindow& r) {
                                            append_record(records, r, keep_summary);
                                            if (records.size() >= kSendPiece) {
                                              group->send_to_root(std::move(records));
                                              records = group->take_buffer();
                                              records.reserve(kSendPiece + (kSendPiece >> 2));
                                            }
                                          });
        group->send_to_root(std::move(records));
        cpu_own = cpu_seconds();
        if (a.timings) print_rank_timings(kb, ke, Clock::now(), Clock::now());
        return 0;
      }
      group->start_receiving();
      if (ke >= kb)
        sstats = analyze_snail_streamed(*snail, opt, splan, kb, ke, threads, render, consume,
                                        on_progress);
      const auto t_own = Clock::now();
      cpu_own = cpu_seconds();
      for (int r = 1; r < group->size(); ++r) replay_rank(*group, r, consume);
      if (a.timings) print_rank_timings(kb, ke, t_own, Clock::now());
    }
    flush_run();
  } else {
    analyze_pag_parallel(pag, opt, threads, render, consume_one, on_progress);
  }
  if (empty_windows > 0)
    fmt::print(stderr,
               "snailtrail: note: {} windows without events (in {} run(s) following a window "
               "without events) were not analyzed{}\n",
               empty_windows, empty_runs,
               a.format == "jsonl" ? ": one \"empty_windows\" line per run (docs/OUTPUT.md)" : "");
  if (a.format == "jsonl" && keep_summary) {
    agg.finish();
    write_run_json(out.buf(), agg, names, sel, ctx.enrich);
    out.buf().push_back('\n');
  }
  if (a.format == "table") {
    agg.finish();
    write_table(out.buf(), agg, names, sel, ctx,
                fmt::format("snailtrail analyze {}", a.in.trace).c_str());
  }
  out.flush();
  if (a.timings) {
    const auto t_end = Clock::now();
    fmt::print(stderr,
               "timings: read {:.3f}s, pag {:.3f}s; per-thread sums: snapshots {:.3f}s, cp "
               "{:.3f}s, summaries {:.3f}s, render {:.3f}s; total {:.3f}s for {} events; "
               "peak_rss_kb={}\n",
               seconds(t0, t_read), seconds(t_read, t_pag), stage.snapshot_s, stage.cp_s,
               stage.summary_s, stage.callback_s, seconds(t0, t_end), event_count, peak_rss_kb());
    if (snail)
      fmt::print(stderr,
                 "streamed: {} of {} bytes read in {} blocks, lookback {} ns, at most {} PAG "
                 "nodes held\n",
                 snail->bytes_read(), snail->file_size(), sstats.blocks_read, sstats.lookback_ns,
                 sstats.peak_retained_nodes);
  }
  return 0;
}

}  // namespace

CommandRunner add_analyze_command(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  AnalyzeArgs& an = *args;
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Rank activities by critical participation (CP), window by window");
  add_trace_input_options(cmd, an.in, "output");
  cmd->add_option("--format,-f", an.format, "Output: table, jsonl or csv")
      ->check(CLI::IsMember({"table", "jsonl", "csv"}))
      ->capture_default_str();
  cmd->add_option("--summary", an.summary,
                  "Comma list of activity, worker, operator, communication, top, diagnostics, "
                  "or all")
      ->capture_default_str();
  cmd->add_option("--top", an.top, "Number of top critical activities")->capture_default_str();
  cmd->add_option("--dump-edges", an.dump_edges, "Write every PAG edge as JSONL to FILE");
  cmd->add_flag("--per-window", an.per_window, "Table: also print every window's table");
  cmd->add_flag("--what-if", an.what_if,
                "For the most critical workers, operators and activity types: how much shorter "
                "each window's critical path would be if they were faster (docs/OUTPUT.md)");
  cmd->add_option("--what-if-speedup", an.what_if_speedup,
                  "With --what-if: the speed-up tried (k times faster)")
      ->default_val(2)
      ->check(CLI::Range(1.01, 1e6));
  cmd->add_option("--output,-o", an.output, "Write results to FILE instead of stdout");
  cmd->add_flag("--no-progress", an.no_progress, "Never print progress on stderr");
  cmd->add_flag("--timings", an.timings, "Print the time spent in each stage on stderr");
  return [cmd, args]() {
    if (!*cmd) return -1;
    const std::unique_ptr<mpi::RankGroup> group = mpi::RankGroup::join_if_launched();
    if (!group) return run(*args, nullptr);
    try {
      return run(*args, group.get());
    } catch (const std::exception& e) {
      // The other ranks wait for this one: end the job.
      fmt::print(stderr, "snailtrail: error (rank {} of {}): {}\n", group->rank(), group->size(),
                 e.what());
      std::fflush(stderr);
      group->abort(1);
    }
  };
}

}  // namespace snailtrail::cli
