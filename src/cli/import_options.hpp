// The importers' options on the command line: every command that imports registers them
// here, from the importers' descriptors (importers/importer.hpp), so a new importer option
// and its default (ImportOptions) are written once.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "importers/importer.hpp"

namespace snailtrail::cli {

// Adds --spark-delay-split, --map, --log-format, ... to `cmd`, writing into `options`;
// each help text starts with the importers that read the option ("chrome/otlp/jaeger: ").
// `streaming_only`: just the options of importers that stream (serve --follow).
inline void add_import_options(CLI::App* cmd, importers::ImportOptions& options,
                               bool streaming_only = false) {
  for (const importers::ImportOptionUse& use : importers::import_options(streaming_only)) {
    std::string& value = options.*(use.option->field);
    CLI::Option* o = cmd->add_option(std::string(use.option->flag), value,
                                     use.readers + ": " + std::string(use.option->help));
    if (!value.empty()) o->capture_default_str();
  }
}

}  // namespace snailtrail::cli
