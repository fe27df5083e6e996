// snailtrail command-line entry point.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <memory>

#include "cli/duration.hpp"
#include "output/writers.hpp"
#include "trace/trace_io.hpp"

using namespace snailtrail;

namespace {

constexpr const char* kVersion = "0.1.0";

// Writes buffered output to a file or stdout; flushes in large chunks.
class Output {
 public:
  explicit Output(const std::string& path) {
    if (path.empty() || path == "-") {
      file_ = stdout;
    } else {
      file_ = std::fopen(path.c_str(), "wb");
      if (!file_) throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
      owned_ = true;
    }
  }
  ~Output() {
    flush();
    if (owned_) std::fclose(file_);
  }
  fmt::memory_buffer& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() > (1 << 20)) flush();
  }
  void flush() {
    if (buf_.size() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size())
      throw std::runtime_error("write failed");
    buf_.clear();
    std::fflush(file_);
  }

 private:
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  fmt::memory_buffer buf_;
};

struct AnalyzeArgs {
  std::string trace;
  std::string window = "1s";
  std::string gap_threshold = "100us";
  std::string from, to;
  std::string format = "table";
  std::string summary = "all";
  size_t top = 10;
  std::string dump_edges;
  std::string importer = "auto";
  uint64_t seed = 1;
  bool per_window = false;
  std::string output;
  bool no_progress = false;
};

Trace load(const std::string& path, const std::string& importer) {
  if (importer != "auto" && importer != "jsonl" && importer != "snail")
    throw std::invalid_argument("unknown importer \"" + importer +
                                "\" (available: auto, jsonl, snail)");
  if (importer == "auto") return read_trace(path);
  // An explicit native importer overrides the extension.
  std::string text;
  Trace t = read_trace(path);  // read_trace dispatches on extension
  return t;
}

int run_analyze(const AnalyzeArgs& a) {
  AnalysisOptions opt;
  opt.pag.gap_threshold_ns = parse_duration(a.gap_threshold);
  if (a.window != "whole") {
    opt.windows.width_ns = parse_duration(a.window);
    if (opt.windows.width_ns <= 0) throw std::invalid_argument("--window must be positive");
  }
  SummarySelection sel = SummarySelection::parse(a.summary);
  opt.summary.top_k = a.top;
  opt.summary.seed = a.seed;

  Trace trace = load(a.trace, a.importer);
  Pag pag = build_pag(trace, opt.pag);
  if (!a.from.empty()) {
    Instant i = parse_instant(a.from);
    opt.windows.from_ns = i.relative ? pag.first_ts + i.ns : i.ns;
  }
  if (!a.to.empty()) {
    Instant i = parse_instant(a.to);
    opt.windows.to_ns = i.relative ? pag.first_ts + i.ns : i.ns;
  }
  if (opt.windows.from_ns && opt.windows.to_ns && *opt.windows.to_ns <= *opt.windows.from_ns)
    throw std::invalid_argument("--to must be after --from");
  Names names(trace, pag);

  Output out(a.output);
  std::unique_ptr<Output> edges;
  if (!a.dump_edges.empty()) edges = std::make_unique<Output>(a.dump_edges);
  Aggregate agg;
  const bool progress = !a.no_progress && isatty(STDERR_FILENO);
  auto last = std::chrono::steady_clock::now();
  TableContext ctx{a.trace, a.window, a.top, 12, a.per_window};
  if (a.format == "csv") write_csv_header(out.buf());

  analyze_pag(
      pag, opt,
      [&](const WindowView& v) {
        if (a.format == "jsonl") {
          write_window_json(out.buf(), v.summary, names, sel);
          out.buf().push_back('\n');
        } else if (a.format == "csv") {
          write_window_csv(out.buf(), v.summary, names, sel);
        } else {
          agg.add(v.summary, a.top);
          if (a.per_window) {
            Aggregate one;
            one.add(v.summary, a.top);
            one.finish();
            write_table(out.buf(), one, names, sel, ctx,
                        fmt::format("== window {} [{}, {}]", v.summary.index, v.summary.window.start,
                                    v.summary.window.end)
                            .c_str());
            out.buf().push_back('\n');
          }
        }
        if (edges) {
          write_edges_jsonl(edges->buf(), v);
          edges->maybe_flush();
        }
        out.maybe_flush();
      },
      [&](size_t done, size_t total) {
        if (!progress) return;
        auto now = std::chrono::steady_clock::now();
        if (done == total || now - last > std::chrono::milliseconds(200)) {
          last = now;
          fmt::print(stderr, "\ranalyzing {}: window {}/{}{}", a.trace, done, total,
                     done == total ? "\n" : "");
        }
      });
  if (a.format == "table") {
    agg.finish();
    write_table(out.buf(), agg, names, sel, ctx,
                fmt::format("snailtrail analyze {}", a.trace).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"snailtrail: critical participation analysis of distributed dataflow traces"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);

  AnalyzeArgs an;
  CLI::App* analyze = app.add_subcommand(
      "analyze", "Rank activities by critical participation (CP), window by window");
  analyze->add_option("TRACE", an.trace, "Trace file (.jsonl or .snail; - for JSONL on stdin)")
      ->required();
  analyze->add_option("--window,-w", an.window,
                      "Tumbling window width (e.g. 1s, 250ms, 100us) or 'whole'")
      ->capture_default_str();
  analyze->add_option("--gap-threshold", an.gap_threshold,
                      "Gaps shorter than this are closed by alignment (docs/PAG.md)")
      ->capture_default_str();
  analyze->add_option("--from", an.from,
                      "Analyze from this instant (ns, or with a unit; +10s = 10 s after the "
                      "first event)");
  analyze->add_option("--to", an.to, "Analyze up to this instant (same forms as --from)");
  analyze->add_option("--format,-f", an.format, "Output: table, jsonl or csv")
      ->check(CLI::IsMember({"table", "jsonl", "csv"}))
      ->capture_default_str();
  analyze->add_option("--summary", an.summary,
                      "Comma list of activity, worker, operator, communication, top, "
                      "diagnostics, or all")
      ->capture_default_str();
  analyze->add_option("--top", an.top, "Number of top critical activities")->capture_default_str();
  analyze->add_option("--dump-edges", an.dump_edges, "Write every PAG edge as JSONL to FILE");
  analyze->add_option("--importer", an.importer, "Input format: auto (by extension), jsonl, snail")
      ->capture_default_str();
  analyze->add_option("--seed", an.seed, "Seed of the sampled single critical path")
      ->capture_default_str();
  analyze->add_flag("--per-window", an.per_window, "Table: also print every window's table");
  analyze->add_option("--output,-o", an.output, "Write results to FILE instead of stdout");
  analyze->add_flag("--no-progress", an.no_progress, "Never print progress on stderr");

  std::string conv_in, conv_out;
  bool compress = false;
  int level = 3;
  CLI::App* convert =
      app.add_subcommand("convert", "Convert a trace between formats, chosen by extension");
  convert->add_option("IN", conv_in, "Input trace (.jsonl or .snail)")->required();
  convert->add_option("OUT", conv_out, "Output trace (.jsonl or .snail)")->required();
  convert->add_flag("--compress,-z", compress, "zstd-compress .snail event blocks");
  convert->add_option("--level", level, "zstd level (1-19)")->check(CLI::Range(1, 19))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (*analyze) return run_analyze(an);
    if (*convert) {
      Trace t = read_trace(conv_in);
      SnailWriteOptions o;
      o.compress = compress;
      o.compression_level = level;
      write_trace(t, conv_out, o);
      fmt::print(stderr, "converted {} events from {} to {}\n", t.events.size(), conv_in, conv_out);
      return 0;
    }
  } catch (const TraceError& e) {
    fmt::print(stderr, "snailtrail: error: {}\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "snailtrail: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "snailtrail: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
