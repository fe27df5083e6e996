// Streaming importers: the line-based foreign formats decoded as their bytes arrive
// (`snailtrail serve --follow FILE --importer NAME`, docs/SERVE.md). The batch importer
// of such a format is its streaming importer fed the whole file at once, so both give
// the same events (docs/IMPORTERS.md, "Streaming").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "importers/importer.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers {

class StreamImporter {
 public:
  virtual ~StreamImporter() = default;

  // The next bytes of the input, split anywhere. Events that complete records make
  // final are appended to out.events, names of new workers and operators to
  // out.worker_names / out.operator_names. Each worker's events come in time order,
  // also across calls. Throws TraceError naming the line (or byte) of bad input.
  virtual void feed(std::string_view bytes, Trace& out) = 0;
  // End of the input: a cut last record is counted, everything held back is emitted.
  virtual void finish(Trace& out) = 0;
  // Recoverable problems so far, as in Trace::import_diagnostics.
  virtual std::vector<std::pair<std::string, uint64_t>> diagnostics() const = 0;
};

// Names of the importers that can stream ("spark, snailtrail-msgpack").
std::string streaming_importer_names();

// The streaming importer `name` for input named `source`; nullptr if that format cannot
// be read as a stream. Throws std::invalid_argument for bad options.
std::unique_ptr<StreamImporter> make_stream_importer(std::string_view name,
                                                     const std::string& source,
                                                     const ImportOptions& options);

}  // namespace snailtrail::importers
