// The importer registry, content sniffing and the native formats' entries.
#include "importers/importer.hpp"
#include "importers/common/path.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "importers/chrome/chrome_importer.hpp"
#include "importers/common/compressed.hpp"
#include "importers/logs/logs_importer.hpp"
#include "importers/msgpack/msgpack_importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "importers/spark/spark_importer.hpp"
#include "importers/streaming.hpp"
#include "kernel/ctf_dir.hpp"
#include "kernel/diagnostic_kinds.hpp"
#include "kernel/load.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/perf_stream.hpp"
#include "kernel/to_trace.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::importers {
namespace {

int sniff_snail(std::string_view path, std::string_view head) {
  if (head.starts_with("SNAILTRC")) return 100;
  return has_extension(path, ".snail") ? 10 : 0;
}

// Our JSONL: one object per line with "ts", "worker", "activity" and "event" keys, or a
// metadata line.
int sniff_jsonl(std::string_view path, std::string_view head) {
  std::string_view s = skip_space(head);
  const size_t eol = s.find('\n');
  std::string_view first = s.substr(0, eol);
  if (first.starts_with("{") && (first.find("\"meta\"") != std::string_view::npos ||
                                 (first.find("\"ts\"") != std::string_view::npos &&
                                  first.find("\"event\"") != std::string_view::npos)))
    return 60;
  if (has_extension(path, ".jsonl") || has_extension(path, ".ndjson")) return 20;
  if (has_extension(path, ".json")) return 5;
  return 0;
}

Trace read_snail(const std::string& path, const ImportOptions&) {
  return read_trace(path, TraceFormat::snail);
}
Trace read_jsonl(const std::string& path, const ImportOptions&) {
  return read_trace(path, TraceFormat::jsonl);
}

// Kernel traces (docs/KERNEL.md): threads as workers, wake-ups as control messages.
int sniff_perf_sched(std::string_view, std::string_view head) {
  return kernel::sniff_perf_script(head);
}
Trace read_perf_sched(const std::string& path, const ImportOptions&) {
  return kernel::to_trace(kernel::load_kernel_model(path, "perf-sched"));
}
// A CTF trace is a directory: not sniffed by content, found by detect_importer.
int sniff_lttng(std::string_view, std::string_view) {
  return 0;
}
Trace read_lttng(const std::string& path, const ImportOptions&) {
  return kernel::to_trace(kernel::load_kernel_model(path, "lttng"));
}

// `perf script` text followed as it grows (kernel/perf_stream.hpp).
class PerfSchedStreamImporter final : public StreamImporter {
 public:
  explicit PerfSchedStreamImporter(const std::string& source) : s_(source) {}
  void feed(std::string_view bytes, Trace& out) override { s_.feed(bytes, out); }
  void finish(Trace& out) override { s_.finish(out); }
  std::vector<std::pair<std::string, uint64_t>> diagnostics() const override {
    return s_.diagnostics();
  }

 private:
  kernel::PerfSchedStream s_;
};

constexpr std::string_view kOwnTraces =
    "snailtrail's own traces (dataflow runs, the simulator) are streams";
constexpr std::string_view kKernelTraces = "a kernel trace records a running system";

// The native formats and the kernel traces (src/kernel); the other importers' descriptors
// are defined in their folders.
const Importer kSnail{.name = "snail",
                      .description = "snailtrail binary trace (.snail)",
                      .sniff = sniff_snail,
                      .read = read_snail,
                      .window_reason = kOwnTraces};
const Importer kJsonl{.name = "jsonl",
                      .description = "snailtrail JSON lines (.jsonl)",
                      .sniff = sniff_jsonl,
                      .read = read_jsonl,
                      .window_reason = kOwnTraces};
const Importer kPerfSched{
    .name = "perf-sched",
    .description = "Linux `perf script` text of sched tracepoints (threads as workers)",
    .sniff = sniff_perf_sched,
    .read = read_perf_sched,
    .stream = [](const std::string& source,
                 const ImportOptions&) -> std::unique_ptr<StreamImporter> {
      return std::make_unique<PerfSchedStreamImporter>(source);
    },
    .window_reason = kKernelTraces,
    .diagnostics = kernel::kPerfSchedDiagnostics};
const Importer kLttng{.name = "lttng",
                      .description = "LTTng kernel trace (CTF directory, read with libbabeltrace2)",
                      .sniff = sniff_lttng,
                      .read = read_lttng,
                      .window_reason = kKernelTraces,
                      .diagnostics = kernel::kLttngDiagnostics};

// Reads up to kSniffBytes from the start of a regular file, or up to kCompressedSniffBytes
// if it starts with a compression magic: sniffers decode the head, and a codec's first
// block can be larger than kSniffBytes (zstd-jni writes 128 KiB blocks). stdin is not
// sniffed here: it cannot be rewound (import_trace reads it whole).
std::string read_head(const std::string& path) {
  std::string head;
  if (path == "-") return head;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TraceError(path, "cannot open", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw TraceError(path, "cannot read", std::strerror(EISDIR));
  }
  size_t got = 0;
  auto fill = [&](size_t want) {
    head.resize(want);
    while (got < head.size()) {
      const ssize_t n = ::read(fd, head.data() + got, head.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    head.resize(got);
  };
  fill(kSniffBytes);
  if (got == kSniffBytes && codec_of(head) != Codec::none) fill(kCompressedSniffBytes);
  ::close(fd);
  return head;
}

// "looks gzip-compressed" and what to do, for inputs no importer takes.
std::string compressed_hint(std::string_view head) {
  const Codec c = codec_of(head);
  if (c == Codec::none) return "";
  std::string hint = "it looks " + std::string(codec_name(c)) + "-compressed";
  if (decodable(c))
    hint += ", and its decoded start is not a Spark event log (the only format read compressed)";
  return hint + ": decompress it first, or name the importer with --importer";
}

}  // namespace

const std::vector<Importer>& all_importers() {
  static const std::vector<Importer> importers = {
      kSnail,
      kJsonl,
      spark::descriptor(),
      msgpack_log::descriptor(),
      chrome_descriptor(),
      otlp_descriptor(),
      jaeger_descriptor(),
      kPerfSched,
      kLttng,
      logs_descriptor(),
  };
  return importers;
}

const Importer* find_importer(std::string_view name) {
  for (const Importer& imp : all_importers())
    if (imp.name == name) return &imp;
  return nullptr;
}

const DiagnosticKind* find_diagnostic_kind(std::string_view name) {
  for (const Importer& imp : all_importers())
    if (const DiagnosticKind* kind = find_kind(imp.diagnostics, name)) return kind;
  return nullptr;
}

std::string importer_names() {
  std::string names = "auto";
  for (const Importer& imp : all_importers()) names += ", " + std::string(imp.name);
  return names;
}

std::vector<ImportOptionUse> import_options(bool streaming_only) {
  std::vector<ImportOptionUse> uses;
  for (const Importer& imp : all_importers()) {
    if (streaming_only && !imp.stream) continue;
    for (const ImportOption& option : imp.options) {
      auto it = std::find_if(uses.begin(), uses.end(), [&](const ImportOptionUse& u) {
        return u.option->flag == option.flag;
      });
      if (it == uses.end()) it = uses.insert(uses.end(), {&option, ""});
      it->readers += (it->readers.empty() ? "" : "/") + std::string(imp.name);
    }
  }
  return uses;
}

void check_import_options(const ImportOptions& options, bool streaming_only) {
  for (const ImportOptionUse& use : import_options(streaming_only))
    if (use.option->check) use.option->check(options.*(use.option->field));
}

const Importer* sniff_importer(std::string_view path, std::string_view head) {
  const Importer* best = nullptr;
  int best_score = 0;
  for (const Importer& imp : all_importers()) {
    const int score = imp.sniff(path, head);
    if (score > best_score) best = &imp, best_score = score;
    // 100 is certain (a magic number): no other importer can score higher, and the
    // text sniffers' work on a binary head (every log format tried on every line) is
    // the larger part of starting a small analysis.
    if (best_score >= 100) break;
  }
  return best;
}

const Importer& detect_importer(const std::string& path) {
  if (path == "-") return *find_importer("jsonl");  // stdin: JSONL or a piped .snail image
  if (has_extension(path, ".toml"))
    throw TraceError(
        path, "file name",
        "this looks like a simulator scenario, not a trace: run `snailtrail simulate " + path +
            " -o trace.snail` and analyze trace.snail");
  if (spark::is_rolling_dir(path)) return *find_importer("spark");
  if (kernel::is_ctf_directory(path)) return *find_importer("lttng");  // LTTng or perf CTF
  if (is_log_dir(path)) return *find_importer("logs");                 // one plain log per node
  const std::string head = read_head(path);
  const Importer* best = sniff_importer(path, head);
  if (!best) {
    const std::string hint = compressed_hint(head);
    throw TraceError(path, "format",
                     (hint.empty() ? "not a trace format snailtrail recognises"
                                   : "not a trace format snailtrail recognises: " + hint) +
                         "; name one with --importer (" + importer_names() + ")");
  }
  return *best;
}

std::string resolve_importer(const std::string& path, const std::string& importer) {
  if (importer != "auto" || path.empty() || path == "-") return importer;
  try {
    return std::string(detect_importer(path).name);
  } catch (const std::exception&) {
    return importer;  // the reader names the problem, as without resolving
  }
}

// stdin with --importer auto, read whole: a .snail image (by its magic), a Spark event log
// (plain or compressed) when its first line says so, else snailtrail JSONL.
static Trace import_stdin(const ImportOptions& options, std::string_view* used) {
  const std::string bytes = read_file_bytes("-");
  const std::string source = "<stdin>";
  const std::string_view head = std::string_view(bytes).substr(0, kCompressedSniffBytes);
  if (used) *used = head.starts_with("SNAILTRC") ? "snail" : "jsonl";
  if (head.starts_with("SNAILTRC"))
    return parse_snail(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
        source);
  if (spark::sniff("-", head) >= 90 && used) *used = "spark";
  if (spark::sniff("-", head) >= 90)
    return spark::parse_event_log(bytes, source,
                                  spark::parse_delay_split(options.spark_delay_split));
  const std::string hint = compressed_hint(head);
  if (!hint.empty())
    throw TraceError(
        source, "format",
        "stdin is read as snailtrail JSONL, a .snail image or a Spark event log, but " + hint);
  try {
    return parse_jsonl(bytes, source);
  } catch (const TraceError& e) {
    throw TraceError(e.what(), "note",
                     "stdin is read as snailtrail JSONL (or a .snail image, or a Spark event "
                     "log); for another format pass --importer NAME or give the file's path");
  }
}

Trace import_trace(const std::string& path, std::string_view importer, const ImportOptions& options,
                   std::string_view* used) {
  if (importer == "auto") {
    if (path == "-") return import_stdin(options, used);
    const Importer& imp = detect_importer(path);
    if (used) *used = imp.name;
    return imp.read(path, options);
  }
  const Importer* imp = find_importer(importer);
  if (!imp)
    throw std::invalid_argument("unknown importer \"" + std::string(importer) +
                                "\" (available: " + importer_names() + ")");
  if (used) *used = imp->name;
  return imp->read(path, options);
}

std::string streaming_importer_names() {
  std::string names;
  for (const Importer& imp : all_importers())
    if (imp.stream) names += (names.empty() ? "" : ", ") + std::string(imp.name);
  return names;
}

std::unique_ptr<StreamImporter> make_stream_importer(std::string_view name,
                                                     const std::string& source,
                                                     const ImportOptions& options) {
  const Importer* imp = find_importer(name);
  return imp && imp->stream ? imp->stream(source, options) : nullptr;
}

std::string read_file_bytes(const std::string& path) {
  const bool is_stdin = path == "-";
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TraceError(path, "cannot open", std::strerror(errno));
  std::string bytes;
  // A regular file is read into one buffer of its size (one more byte tells if it grew);
  // pipes grow the buffer by doubling.
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    bytes.resize(static_cast<size_t>(st.st_size) + 1);
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) bytes.resize(std::max<size_t>(bytes.size() * 2, 1 << 20));
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      if (!is_stdin) ::close(fd);
      throw TraceError(is_stdin ? "<stdin>" : path, "cannot read", std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (!is_stdin) ::close(fd);
  bytes.resize(got);
  return bytes;
}

}  // namespace snailtrail::importers
