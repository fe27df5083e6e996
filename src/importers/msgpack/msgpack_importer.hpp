// The original SnailTrail log format (strymon-system/snailtrail `logformat`): a MessagePack
// stream of records of 7 integers — timestamp (ns), local worker, activity type, event
// type, correlator or -1, remote worker or -1, operator or -1 — with the original numeric
// codes, so traces from existing SnailTrail instrumentation keep working.
// docs/IMPORTERS.md "SnailTrail MessagePack" states the mapping and the limits.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "importers/importer.hpp"
#include "importers/streaming.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers::msgpack_log {

// Decodes a whole log. Records may be 7 bare integers (what the original Rust and Java
// writers emit) or a 7-element array. Events are returned grouped by worker, in time order
// (the original logs need not be). Throws TraceError(source, "byte N", what).
Trace parse_log(std::span<const uint8_t> bytes, const std::string& source);

// The log as a stream: each complete record's event is emitted as it arrives, in the
// order of the file (parse_log is this stream fed the whole log, then sorted by worker
// and time if the file is not in time order).
std::unique_ptr<StreamImporter> make_stream(const std::string& source);

// Importer registry hooks.
Trace import(const std::string& path, const ImportOptions& options);
// 95 for valid records and a .msgpack name, 70 for valid records, 30 for the name alone.
int sniff(std::string_view path, std::string_view head);
// The importer's descriptor (importer.hpp).
const Importer& descriptor();

}  // namespace snailtrail::importers::msgpack_log
