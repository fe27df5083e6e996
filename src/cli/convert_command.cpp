// `snailtrail convert`: between trace formats, chosen by file extension.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/import_warnings.hpp"
#include "importers/importer.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::cli {

CommandRunner add_convert_command(CLI::App& app) {
  struct Args {
    std::string in, out;
    bool compress = false;
    int level = 3;
    std::string importer = "auto";
    std::string spark_delay_split = "1:2";
    std::string map_file;
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
  cmd->add_option("--spark-delay-split", args->spark_delay_split,
                  "Spark: share of each task's scheduler delay on its launch:result messages")
      ->capture_default_str();
  cmd->add_option("--map", args->map_file,
                  "chrome/otlp/jaeger: TOML rules mapping names to activity types "
                  "(docs/IMPORTERS.md)");
  cmd->add_flag("--compress,-z", args->compress, "zstd-compress .snail event blocks");
  cmd->add_option("--level", args->level, "zstd level (1-19)")
      ->check(CLI::Range(1, 19))
      ->capture_default_str();
  return [cmd, args]() {
    if (!*cmd) return -1;
    importers::ImportOptions import_options;
    import_options.spark_delay_split = args->spark_delay_split;
    import_options.map_file = args->map_file;
    Trace t = importers::import_trace(args->in, args->importer, import_options);
    cli::warn_if_cut(t);
    SnailWriteOptions o;
    o.compress = args->compress;
    o.compression_level = args->level;
    write_trace(t, args->out, o);
    fmt::print(stderr, "converted {} events from {} to {}\n", t.events.size(), args->in, args->out);
    return 0;
  };
}

}  // namespace snailtrail::cli
