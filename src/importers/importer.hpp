// One interface for every trace importer (docs/IMPORTERS.md): native formats (jsonl,
// snail) and the systems' own formats, each in its own folder under src/importers/.
// Detection is by file content first (sniffing), then by extension.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/diagnostic_kind.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers {

// Knobs some importers understand; the others ignore them. Each knob's default is here
// and nowhere else: the commands register the flags from the importers' ImportOption
// entries (cli/import_options.hpp), whose shown default is read from this struct.
struct ImportOptions {
  std::string map_file;  // --map: activity-type mapping overrides (chrome, otlp, jaeger)
  std::string spark_delay_split = "1:2";  // --spark-delay-split: launch:result share of delay
  std::string log_format;                 // --log-format: plain logs' header (logs); empty = detect
  std::string log_id;  // --log-id: request-id regex for plain logs (logs); empty = infer
};

// One option an importer reads: its flag, its help (the CLI prefixes the names of the
// importers that read it), the field of ImportOptions it sets, and a check of its value
// (throws std::invalid_argument; nullptr: any value) for commands that validate options
// before reading any input (serve).
struct ImportOption {
  std::string_view flag;  // "--spark-delay-split"
  std::string_view help;
  std::string ImportOptions::*field;
  void (*check)(const std::string& value);
};

class StreamImporter;

// One descriptor per importer, each defined next to its importer (importer.cpp lists
// them): adding an importer means adding its descriptor to that list, nothing else.
struct Importer {
  std::string_view name;         // what --importer accepts
  std::string_view description;  // one line for --help and errors
  // How sure the importer is that a file is its format, from the file name and its
  // first bytes (up to kSniffBytes): 0 = not mine, 100 = certain (a magic number).
  int (*sniff)(std::string_view path, std::string_view head);
  // Reads the whole file ("-" = stdin where supported). Throws TraceError naming the
  // file and the line or byte offset of the problem. For a format that streams, this is
  // its stream fed the whole file (docs/IMPORTERS.md, "Streaming").
  Trace (*read)(const std::string& path, const ImportOptions& options);
  // The format decoded as its bytes arrive (serve --follow, streaming.hpp) for input
  // named `source`; nullptr: whole files only. Throws std::invalid_argument for bad options.
  std::unique_ptr<StreamImporter> (*stream)(const std::string& source,
                                            const ImportOptions& options) = nullptr;
  // Why a format without `stream` cannot be followed (serve's error); empty: "the NAME
  // importer reads whole files only".
  std::string_view not_streamed = {};
  // The options it reads (ImportOptions fields).
  std::span<const ImportOption> options = {};
  // --window auto (auto_window.hpp): whether its inputs end (a batch job, a capture, a set
  // of requests: the whole trace is one window) or record a running system (1 s windows),
  // and why, for the note analyze prints; empty: "a NAME trace is a stream".
  bool whole_window = false;
  std::string_view window_reason = {};
  // Every kind of diagnostic it counts (trace/diagnostic_kind.hpp), each declared once.
  std::span<const DiagnosticKind> diagnostics = {};
};

inline constexpr size_t kSniffBytes = 4096;
// The head of a file that starts with a compression magic: enough for its first block.
inline constexpr size_t kCompressedSniffBytes = size_t{1} << 20;

// The declared kind of the import diagnostic named `name` ("spark.truncated_last_line"),
// from the importers' `diagnostics`; nullptr if no importer declares it.
const DiagnosticKind* find_diagnostic_kind(std::string_view name);
// Whether the import diagnostic named `name` is declared as meaning that the input ended
// inside a record (cut off while being written). An undeclared name is not.
inline bool is_cut_input(std::string_view name) {
  const DiagnosticKind* kind = find_diagnostic_kind(name);
  return kind && kind->cut_input();
}

// Every importer, in the order they are tried when two sniff equally.
const std::vector<Importer>& all_importers();
// nullptr if unknown.
const Importer* find_importer(std::string_view name);
// "auto, jsonl, snail, ..." for help texts and errors.
std::string importer_names();

// Every option of every importer, once per flag (options shared by several importers,
// like --map, appear once), in the order of the importers; `streaming_only`: only the
// options of importers that stream. `readers` receives, per option, the names of the
// importers that read it ("chrome/otlp/jaeger").
struct ImportOptionUse {
  const ImportOption* option;
  std::string readers;
};
std::vector<ImportOptionUse> import_options(bool streaming_only = false);
// Runs every option's check on its value in `options`. Throws std::invalid_argument.
void check_import_options(const ImportOptions& options, bool streaming_only = false);

// The importer whose sniff score for a file's name and first bytes is highest (ties: the
// earlier one); nullptr if every importer says 0.
const Importer* sniff_importer(std::string_view path, std::string_view head);

// Picks the importer for a file: the highest sniff score wins. Throws TraceError if no
// importer recognises it.
const Importer& detect_importer(const std::string& path);

// `importer`, or for "auto" the importer detect_importer picks for `path`. A command calls
// it once, so that its stages (streaming, the DS2 verdict, the report's view) do not each
// sniff the file again. Stays "auto" for stdin and for a file no importer recognises (the
// reading then reports why).
std::string resolve_importer(const std::string& path, const std::string& importer);

// Reads `path` with the named importer ("auto" = detect). Throws std::invalid_argument
// for an unknown importer name and TraceError for unreadable input. `used`, if given,
// receives the name of the importer that read it.
Trace import_trace(const std::string& path, std::string_view importer = "auto",
                   const ImportOptions& options = {}, std::string_view* used = nullptr);

// The whole file as bytes ("-" = stdin). Throws TraceError.
std::string read_file_bytes(const std::string& path);

}  // namespace snailtrail::importers
