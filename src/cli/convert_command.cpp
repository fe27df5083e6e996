// `snailtrail convert`: between trace formats, chosen by file extension; `--to chrome`
// exports the Trace Event Format with the critical path marked (output/chrome_export.hpp).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "cli/commands.hpp"
#include "cli/import_options.hpp"
#include "cli/import_warnings.hpp"
#include "cli/output_file.hpp"
#include "cli/streamed_input.hpp"
#include "cli/trace_input.hpp"
#include "importers/importer.hpp"
#include "output/chrome_export.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_writer.hpp"

namespace snailtrail::cli {
namespace {

// Converts a .snail or JSONL file block by block (memory: a block, the names, the index
// being built; JSONL goes through a temporary .snail file first, since names must come
// first in the output). Returns false, having written nothing, when the input is not
// such a file, holds a profile, or is the output itself: then the caller reads it whole.
// Writes the same bytes as write_trace of the whole trace.
bool convert_streamed(const std::string& in, const std::string& importer, const std::string& out,
                      const SnailWriteOptions& options, uint64_t& events) {
  if (in == "-") return false;
  TraceFormat format = TraceFormat::jsonl;
  if (out != "-") {
    try {
      format = format_from_path(out);
    } catch (const TraceError&) {
      return false;  // reported after reading, as before
    }
    struct stat a {
    }, b{};
    if (::stat(in.c_str(), &a) == 0 && ::stat(out.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
      return false;  // in place: read it whole before overwriting it
  }
  std::unique_ptr<SnailFile> file;
  if (is_native_jsonl(in, importer)) {
    file = spool_jsonl(in);
  } else if ((importer == "snail" || importer == "auto") && has_snail_magic(in)) {
    try {
      file = std::make_unique<SnailFile>(in);
    } catch (const TraceError&) {
      return false;  // the whole-file reader reports it
    }
  }
  if (!file) return false;
  for (const SnailBlock& b : file->index().blocks)
    if (b.kind != 1 && b.kind != 2) return false;  // a profile block: read whole
  int fd = STDOUT_FILENO;
  if (out != "-") {
    fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw TraceError(out, "cannot create", std::strerror(errno));
  }
  try {
    Trace meta = file->names();
    meta.source = in;
    TraceWriter writer(format, options, fd, out == "-" ? "<stdout>" : out);
    writer.begin(meta);
    BigVector<Event> buf;
    const auto& blocks = file->index().blocks;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].kind != 1) continue;
      file->read_block(i, buf);
      writer.add(buf.data(), buf.size());
    }
    writer.finish();
    events = writer.events();
  } catch (...) {
    if (fd != STDOUT_FILENO) {
      ::close(fd);
      ::unlink(out.c_str());  // no half-written output
    }
    throw;
  }
  if (fd != STDOUT_FILENO && ::close(fd) != 0)
    throw TraceError(out, "cannot write", std::strerror(errno));
  return true;
}

// --to chrome: the whole trace, its PAG and CP over the windows, then the export
// streamed to `out`.
int convert_to_chrome(const TraceInputArgs& in, const std::string& out) {
  AnalysisOptions opt;
  apply_window_options(in, opt);
  opt.sample_single_path = false;
  std::string_view used;
  Trace t = read_whole_trace(in, false, &used);
  std::string window = in.window;
  if (window == "auto") window = resolve_auto_window(used, opt).label;
  OutputFile file(out);
  const ChromeExportStats st = write_chrome_trace(t, opt, [&](std::string_view s) {
    file.buf().append(s.data(), s.data() + s.size());
    file.flush();
  });
  file.flush();
  fmt::print(stderr,
             "converted {} events from {} to {} (Trace Event Format): {} slices ({} on a critical "
             "path), {} messages as flows ({} critical), CP over {} windows (--window {})\n",
             t.events.size(), in.trace, out == "-" ? "<stdout>" : out, st.slices,
             st.critical_slices, st.flows, st.critical_flows, st.windows, window);
  return 0;
}

}  // namespace

CommandRunner add_convert_command(CLI::App& app) {
  struct Args {
    std::string in, out;
    bool compress = false;
    int level = 3;
    std::string importer = "auto";
    importers::ImportOptions import_options;
    bool in_memory = false;
    std::string to;
    std::string window = "auto";
    std::string gap_threshold = "100us";
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert a trace to .jsonl or .snail (output format chosen by extension), or with --to "
      "chrome to the Trace Event Format of chrome://tracing and Perfetto, critical path marked");
  cmd->add_option("IN", args->in,
                  "Input trace in any format snailtrail imports (- for JSONL on stdin)")
      ->required();
  cmd->add_option("OUT", args->out,
                  "Output trace (.jsonl or .snail; with --to chrome: .json, - for stdout)")
      ->required();
  cmd->add_option("--to", args->to,
                  "chrome: Trace Event Format JSON (one slice per activity, pid = worker, "
                  "messages as flow arrows; activities and messages on a critical path in "
                  "category 'critical'); default: by OUT's extension")
      ->check(CLI::IsMember({"chrome"}));
  cmd->add_option("--window", args->window,
                  "--to chrome: windows the CP is computed over (as analyze: auto, whole or "
                  "a width like 1s)")
      ->capture_default_str();
  cmd->add_option("--gap-threshold", args->gap_threshold,
                  "--to chrome: gaps shorter than this are closed by alignment (as analyze)")
      ->capture_default_str();
  cmd->add_option("--importer", args->importer,
                  "Input format: " + importers::importer_names() +
                      " (auto: recognised by content, then extension)")
      ->capture_default_str();
  add_import_options(cmd, args->import_options);
  cmd->add_flag("--in-memory", args->in_memory,
                "Read the whole trace before writing (default for .snail and JSONL input: "
                "block by block, in bounded memory; same output)");
  cmd->add_flag("--compress,-z", args->compress, "zstd-compress .snail event blocks");
  cmd->add_option("--level", args->level, "zstd level (1-19)")
      ->check(CLI::Range(1, 19))
      ->capture_default_str();
  return [cmd, args]() {
    if (!*cmd) return -1;
    args->importer = importers::resolve_importer(args->in, args->importer);
    if (args->to.empty() && (args->window != "auto" || args->gap_threshold != "100us"))
      throw std::invalid_argument(
          "--window and --gap-threshold only matter with --to chrome (a trace converts as is)");
    if (args->to == "chrome") {
      TraceInputArgs in;
      in.trace = args->in;
      in.window = args->window;
      in.gap_threshold = args->gap_threshold;
      in.importer = args->importer;
      in.import = args->import_options;
      return convert_to_chrome(in, args->out);
    }
    SnailWriteOptions o;
    o.compress = args->compress;
    o.compression_level = args->level;
    uint64_t events = 0;
    if (!args->in_memory && convert_streamed(args->in, args->importer, args->out, o, events)) {
      fmt::print(stderr, "converted {} events from {} to {}\n", events, args->in, args->out);
      return 0;
    }
    Trace t = importers::import_trace(args->in, args->importer, args->import_options);
    cli::warn_if_cut(t);
    write_trace(t, args->out, o);
    fmt::print(stderr, "converted {} events from {} to {}\n", t.events.size(), args->in, args->out);
    return 0;
  };
}

}  // namespace snailtrail::cli
