// Spark event log importer (docs/IMPORTERS.md "Spark").
//
// Two passes per epoch: the log is parsed line by line (simdjson DOM, one reused parser)
// into flat records of executors, jobs, stages and finished tasks; then tasks are placed
// on executor slots and the events of every slot and of the driver are generated, each
// worker's events contiguous and in time order (so no sort of the events is needed).
// An epoch ends when a job ends with nothing else open (no job, stage or started task):
// its events are final then, so a followed log (serve --follow) yields them at once.
// The batch importer is the same stream fed the whole log.
#include "importers/spark/spark_importer.hpp"

#include <dirent.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "importers/common/compressed.hpp"
#include "importers/common/lines.hpp"
#include "importers/importer.hpp"

#include "importers/spark/spark_builder.hpp"

namespace snailtrail::importers::spark {
namespace {

using namespace detail;

// Why a log cannot be read: a codec we do not decode (by magic, else by the name Spark
// gives compressed logs: app-1234.lzf, ....lz4.inprogress), or a name promising a codec
// whose magic is missing. Empty if readable.
std::string unreadable_codec(std::string_view path, std::string_view head) {
  const Codec magic = codec_of(head);
  if (magic != Codec::none)
    return decodable(magic) ? "" : "compressed with " + std::string(codec_name(magic));
  const Codec named = codec_of_name(path);
  if (named == Codec::none || head.empty()) return "";
  if (!decodable(named)) return "compressed with " + std::string(codec_name(named));
  // Named like a compressed log but plain JSON (renamed, or decompressed in place): fine.
  size_t i = 0;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r')) ++i;
  if (i < head.size() && head[i] == '{') return "";
  return "named as " + std::string(codec_name(named)) +
         " but not starting with its magic bytes (corrupt, or another framing)";
}

// True if the first line is a JSON object whose "Event" names a Spark listener event.
bool looks_like_spark(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r' ||
                           text.front() == '\n'))
    text.remove_prefix(1);
  if (!text.starts_with("{")) return false;
  std::string_view line = text.substr(0, text.find('\n'));
  const size_t key = line.find("\"Event\"");
  if (key == std::string_view::npos) return false;
  std::string_view rest = line.substr(key + 7);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (!rest.starts_with(":")) return false;
  rest.remove_prefix(1);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  return rest.starts_with("\"SparkListener") || rest.starts_with("\"org.apache.spark.");
}

// The codec's explanation, for logs we cannot decode.
[[noreturn]] void unsupported(const std::string& source, const std::string& why) {
  throw TraceError(source, "compression",
                   "this Spark event log is " + why +
                       ": snailtrail reads plain, zstd, lz4 (Spark's LZ4Block), snappy "
                       "(snappy-java) and gzip logs; decompress it, or have Spark write one of "
                       "those (spark.eventLog.compression.codec)");
}

// Lines -> records -> epochs, from plain or compressed bytes (recognised by the magic
// number, decoded as they arrive). A rolling log's parts go through one stream, each part
// with its own codec (next_part).
class SparkStream final : public StreamImporter {
 public:
  SparkStream(const std::string& source, const SparkOptions& options)
      : log_(source), options_(options) {
    log_.table = options.table;
    if (options.launch_weight == 0 && options.result_weight == 0)
      throw std::invalid_argument("the scheduler delay split needs a non-zero part");
  }

  void feed(std::string_view bytes, Trace& out) override {
    if (!started_) {
      // The first bytes tell plain from compressed.
      head_.append(bytes);
      if (head_.size() < 16) return;
      start(out);
      return;
    }
    input(bytes, out);
  }

  // Ends one part of a rolling log (its last line, its codec) and starts the next, named
  // `next_source` in errors.
  void next_part(const std::string& next_source, Trace& out) {
    end_part(out);
    lines_.finish([&](const char* data, size_t len, uint64_t line_no) {
      log_.line(data, len, line_no, true);
      if (log_.epoch_complete()) Builder(log_, options_, state_).build(out, false);
    });
    lines_ = LineSplitter{};
    log_.source_ = next_source;
    started_ = false;
    decoder_.reset();
  }

  void finish(Trace& out) override {
    end_part(out);
    lines_.finish([&](const char* data, size_t len, uint64_t line_no) {
      log_.line(data, len, line_no, true);
    });
    Builder(log_, options_, state_).build(out, true);
    note_application(out);
  }

  std::vector<std::pair<std::string, uint64_t>> diagnostics() const override {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (int p = 0; p < kProblemCount; ++p)
      if (log_.problems_[p] > 0) out.emplace_back(kProblemKinds[p].name, log_.problems_[p]);
    return out;
  }

 private:
  void end_part(Trace& out) {
    if (!started_) start(out);  // a part under 16 bytes
    // A log still being written ends inside a frame or block: what decoded is used.
    if (decoder_ && decoder_->cut()) ++log_.problems_[kTruncatedCompressedData];
  }

  void start(Trace& out) {
    started_ = true;
    const Codec codec = codec_of(head_);
    if (codec != Codec::none) {
      if (!decodable(codec))
        unsupported(log_.source_, "compressed with " + std::string(codec_name(codec)));
      decoder_ = std::make_unique<Decoder>(codec, log_.source_);
    }
    const std::string head = std::move(head_);
    head_.clear();
    input(head, out);
  }

  void input(std::string_view bytes, Trace& out) {
    if (!decoder_) return lines(bytes, out);
    decoder_->feed(bytes, [&](std::string_view decoded) { lines(decoded, out); });
  }

  void lines(std::string_view bytes, Trace& out) {
    lines_.feed(bytes, [&](const char* data, size_t len, uint64_t line_no) {
      log_.line(data, len, line_no, false);
      if (log_.epoch_complete()) Builder(log_, options_, state_).build(out, false);
    });
    note_application(out);
  }

  // The application's start and end as far as seen: the output says which part of it the
  // analysis covers (docs/OUTPUT.md). An end before the start is not believed.
  void note_application(Trace& out) const {
    if (log_.app_start < 0) return;
    Trace::Application app;
    app.start = log_.app_start;
    if (log_.app_end >= log_.app_start) app.end = log_.app_end;
    out.application = app;
  }

  LogParser log_;
  SparkOptions options_;
  StreamState state_;
  LineSplitter lines_;
  bool started_ = false;
  std::string head_;  // the first bytes, until there are enough to sniff
  std::unique_ptr<Decoder> decoder_;
};

// The whole log through the stream.
Trace parse_all(std::string_view text, const std::string& source, const SparkOptions& options) {
  SparkStream stream(source, options);
  Trace trace;
  trace.source = source;
  trace.format = TraceFormat::snail;  // events are generated: "record N" locations
  stream.feed(text, trace);
  stream.finish(trace);
  trace.import_diagnostics = stream.diagnostics();
  return trace;
}

}  // namespace

SparkOptions parse_delay_split(std::string_view text) {
  const size_t colon = text.find(':');
  SparkOptions o;
  auto number = [&](std::string_view s, uint32_t& v) {
    return !s.empty() &&
           std::from_chars(s.data(), s.data() + s.size(), v).ptr == s.data() + s.size();
  };
  if (colon == std::string_view::npos || !number(text.substr(0, colon), o.launch_weight) ||
      !number(text.substr(colon + 1), o.result_weight) ||
      (o.launch_weight == 0 && o.result_weight == 0))
    throw std::invalid_argument(
        "--spark-delay-split must be LAUNCH:RESULT with non-negative "
        "integers, not both 0 (e.g. 1:2), not \"" +
        std::string(text) + "\"");
  return o;
}

Trace parse_event_log(std::string_view text, const std::string& source,
                      const SparkOptions& options) {
  return parse_all(text, source, options);
}

std::vector<std::string> rolling_parts(const std::string& dir) {
  // events_<n>_<appId>[.codec] (Spark 3 rolling event logs, EventLogFileWriters.scala);
  // appstatus_* only says whether the application has finished.
  std::vector<std::pair<uint64_t, std::string>> parts;
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw TraceError(dir, "cannot open", std::strerror(errno));
  while (const dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (!name.starts_with("events_")) continue;
    std::string_view rest = name.substr(7);
    uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (ec != std::errc() || ptr == rest.data() || ptr == rest.data() + rest.size() || *ptr != '_')
      continue;
    parts.emplace_back(n, std::string(name));
  }
  ::closedir(d);
  std::sort(parts.begin(), parts.end());
  for (size_t i = 1; i < parts.size(); ++i)
    if (parts[i].first == parts[i - 1].first)
      throw TraceError(dir, "rolling event log",
                       "two parts numbered " + std::to_string(parts[i].first) + ": " +
                           parts[i - 1].second + " and " + parts[i].second);
  std::vector<std::string> out;
  for (auto& [n, name] : parts) out.push_back(dir + (dir.ends_with('/') ? "" : "/") + name);
  return out;
}

bool is_rolling_dir(const std::string& path) {
  struct stat st {};
  if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  std::string_view base(path);
  while (base.ends_with('/')) base.remove_suffix(1);
  base = base.substr(base.rfind('/') == std::string_view::npos ? 0 : base.rfind('/') + 1);
  if (base.starts_with("eventlog_v2_")) return true;
  try {
    return !rolling_parts(path).empty();
  } catch (const TraceError&) {
    return false;
  }
}

Trace read_event_log(const std::string& path, const SparkOptions& options) {
  if (is_rolling_dir(path)) {
    const std::vector<std::string> parts = rolling_parts(path);
    if (parts.empty())
      throw TraceError(path, "rolling event log", "no events_<n>_<appId> files in the directory");
    SparkStream stream(parts[0], options);
    Trace trace;
    trace.source = path;
    trace.format = TraceFormat::snail;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) stream.next_part(parts[i], trace);
      const std::string bytes = read_file_bytes(parts[i]);
      const std::string why = unreadable_codec(parts[i], bytes.substr(0, 16));
      if (!why.empty()) unsupported(parts[i], why);
      stream.feed(bytes, trace);
    }
    stream.finish(trace);
    trace.import_diagnostics = stream.diagnostics();
    return trace;
  }
  const std::string bytes = read_file_bytes(path);
  const std::string source = path == "-" ? "<stdin>" : path;
  // By name too: a log whose name promises a codec must carry its magic.
  const std::string why = unreadable_codec(path, std::string_view(bytes).substr(0, 16));
  if (!why.empty()) unsupported(source, why);
  return parse_all(bytes, source, options);
}

std::unique_ptr<StreamImporter> make_stream(const std::string& source,
                                            const ImportOptions& options) {
  return std::make_unique<SparkStream>(source, parse_delay_split(options.spark_delay_split));
}

Trace import(const std::string& path, const ImportOptions& options) {
  return read_event_log(path, parse_delay_split(options.spark_delay_split));
}

int sniff(std::string_view path, std::string_view head) {
  const Codec codec = codec_of(head);
  if (decodable(codec))
    // The head is larger for compressed files (importer.cpp): a whole first block.
    return looks_like_spark(decode_prefix(codec, head, 4096)) ? 95 : 0;
  if (looks_like_spark(head)) return 90;
  const bool spark_name = path.find("app-") != std::string_view::npos ||
                          path.find("application_") != std::string_view::npos ||
                          path.find("local-") != std::string_view::npos ||
                          path.find("events_") != std::string_view::npos;
  if (codec != Codec::none && spark_name) return 60;  // to explain the codec
  if (codec == Codec::none && codec_of_name(path) != Codec::none && spark_name &&
      !unreadable_codec(path, head).empty())
    return 60;
  return 0;
}

namespace {
void check_delay_split(const std::string& value) {
  parse_delay_split(value);
}
constexpr ImportOption kOptions[] = {
    {"--spark-delay-split", "share of each task's scheduler delay on its launch:result messages",
     &ImportOptions::spark_delay_split, check_delay_split},
};
}  // namespace

const Importer& descriptor() {
  static const Importer d{
      .name = "spark",
      .description =
          "Spark event log (JSON lines; plain, zstd, lz4, snappy or gzip; or a "
          "rolling eventlog_v2_* directory)",
      .sniff = sniff,
      .read = import,
      .stream = make_stream,
      .options = kOptions,
      .whole_window = true,
      .window_reason = "a Spark application is a batch job",
      .diagnostics = detail::kProblemKinds,
  };
  return d;
}

}  // namespace snailtrail::importers::spark
