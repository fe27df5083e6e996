// `snailtrail convert`: between trace formats, chosen by file extension.
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
#include "cli/streamed_input.hpp"
#include "importers/importer.hpp"
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

}  // namespace

CommandRunner add_convert_command(CLI::App& app) {
  struct Args {
    std::string in, out;
    bool compress = false;
    int level = 3;
    std::string importer = "auto";
    importers::ImportOptions import_options;
    bool in_memory = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a trace to .jsonl or .snail (output format chosen by extension)");
  cmd->add_option("IN", args->in,
                  "Input trace in any format snailtrail imports (- for JSONL on stdin)")
      ->required();
  cmd->add_option("OUT", args->out, "Output trace (.jsonl or .snail)")->required();
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
