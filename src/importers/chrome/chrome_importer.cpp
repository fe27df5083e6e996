// Chrome Trace Event Format importer (chrome_importer.hpp, docs/IMPORTERS.md).
#include "importers/chrome/chrome_importer.hpp"
#include "importers/common/path.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "importers/chrome/chrome_events.hpp"
#include "importers/common/json_prefix.hpp"
#include "importers/common/json_util.hpp"
#include "importers/common/slices.hpp"

namespace snailtrail::importers {
namespace {

namespace dom = simdjson::dom;
using namespace chrome_detail;

// A B (begin) or E (end) event, matched into a slice once all are read (match_begin_end).
struct BeginEnd {
  int64_t ts;
  uint32_t group, name, cat, index;
  bool begin;
  SliceInfo info;
};

// A slice that the tracer writes about the recording itself, not work of the program:
// the PyTorch profiler's (Kineto's) whole-trace span `{"ph":"X","cat":"Trace","name":
// "PyTorch Profiler (0)"}` on its own "Spans" thread, Chrome's `__metadata` category and
// its tracing bookkeeping events. Taken as an activity it would span the trace and hold
// all of its CP.
bool is_envelope(std::string_view name, std::string_view cat) {
  if (cat == "Trace" || cat == "__metadata") return true;
  if (name.starts_with("PyTorch Profiler")) return true;
  static constexpr std::string_view kNames[] = {"TracingStartedInBrowser",
                                                "TracingStartedInPage",
                                                "TracingSessionIdForWorker",
                                                "CpuProfile",
                                                "Profile",
                                                "ProfileChunk"};
  for (std::string_view n : kNames)
    if (name == n) return true;
  return false;
}

// "node:1" and "^node" both name the node "node"; '^' marks a control dependency.
std::string_view tf_node_of(std::string_view input, bool& control) {
  control = !input.empty() && input.front() == '^';
  if (control) input.remove_prefix(1);
  const size_t colon = input.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < input.size() &&
      std::all_of(input.begin() + colon + 1, input.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    input = input.substr(0, colon);
  return input;
}

class ChromeReader {
 public:
  ChromeReader(const std::string& source, const ActivityMap& map) : source_(source), map_(map) {}

  Trace run(std::string_view text) {
    dom::parser parser;
    dom::element root;
    simdjson::padded_string padded(text);
    simdjson::error_code err = parser.parse(padded).get(root);
    if (err) {
      // The JSON Array Format may omit the closing bracket (a trace cut while recording,
      // after a complete event): that is the format, not a problem.
      std::string_view s = skip_space(text);
      bool closed_array = false;
      if (s.starts_with("[")) {
        while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                              s.back() == '\t' || s.back() == ','))
          s.remove_suffix(1);
        std::string closed(s);
        closed += ']';
        padded = simdjson::padded_string(closed);
        closed_array = !parser.parse(padded).get(root);
      }
      if (!closed_array) {
        // Cut inside an event (or after the events of an object): the complete events.
        json::parse_cut_document(parser, text, source_, {"", "traceEvents"}, err, root);
        ev_.counts.truncated_file = 1;
      }
    }
    dom::array events;
    if (root.type() == dom::element_type::ARRAY) {
      events = dom::array(root);
    } else if (root.type() == dom::element_type::OBJECT) {
      dom::element te;
      if (dom::object(root).at_key("traceEvents").get(te) || te.type() != dom::element_type::ARRAY)
        throw TraceError(source_, "top level", "an object without a \"traceEvents\" array");
      events = dom::array(te);
    } else {
      throw TraceError(source_, "top level", "neither an array of events nor an object");
    }
    size_t index = 0;
    for (dom::element ev : events) {
      if (ev.type() != dom::element_type::OBJECT) fail(index, "an event must be an object");
      event(dom::object(ev), index++);
    }
    match_begin_end();
    return build_chrome_trace(ev_, source_);
  }

 private:
  [[noreturn]] void fail(size_t index, const std::string& what) const {
    throw TraceError(source_, "traceEvents[" + std::to_string(index) + "]", what);
  }

  std::string_view string_field(dom::element v, size_t index, const char* key) const {
    if (v.type() != dom::element_type::STRING)
      fail(index, std::string("\"") + key + "\" must be a string");
    return std::string_view(v);
  }

  // The members of one trace event the importer reads (pid and tid go to pid_ and tid_).
  struct RawEvent {
    std::string_view ph, name, cat, bp;
    dom::element ts, dur, id, id2, bind, args;
    bool has_ts = false, has_dur = false, has_id = false, has_id2 = false, has_bind = false,
         has_args = false, flow_in = false, flow_out = false;
  };

  void read_fields(dom::object obj, size_t index, RawEvent& e) {
    pid_.assign("0");
    tid_.assign("0");
    for (auto [key, value] : obj) {
      if (key == "ph") {
        e.ph = string_field(value, index, "ph");
      } else if (key == "name") {
        e.name = string_field(value, index, "name");
      } else if (key == "cat") {
        e.cat = string_field(value, index, "cat");
      } else if (key == "ts") {
        e.ts = value, e.has_ts = true;
      } else if (key == "dur") {
        e.dur = value, e.has_dur = true;
      } else if (key == "pid") {
        if (!json::scalar_text(value, pid_)) fail(index, "\"pid\" must be a number or string");
      } else if (key == "tid") {
        if (!json::scalar_text(value, tid_)) fail(index, "\"tid\" must be a number or string");
      } else if (key == "id") {
        e.id = value, e.has_id = true;
      } else if (key == "id2") {
        e.id2 = value, e.has_id2 = true;
      } else if (key == "bind_id") {
        e.bind = value, e.has_bind = true;
      } else if (key == "flow_in") {
        e.flow_in = value.type() == dom::element_type::BOOL && bool(value);
      } else if (key == "flow_out") {
        e.flow_out = value.type() == dom::element_type::BOOL && bool(value);
      } else if (key == "bp") {
        if (value.type() == dom::element_type::STRING) e.bp = std::string_view(value);
      } else if (key == "args") {
        e.args = value, e.has_args = true;
      }
    }
  }

  void event(dom::object obj, size_t index) {
    RawEvent e;
    read_fields(obj, index, e);
    const std::string_view ph = e.ph;
    if (ph.empty()) fail(index, "missing \"ph\" (event phase)");
    key_.assign(pid_).push_back('\x1f');
    key_ += tid_;
    if (ph == "M") return metadata(e.name, e.has_args ? e.args : dom::element(), e.has_args);
    const bool slice_begin = ph == "X" || ph == "B";
    if (!(slice_begin || ph == "E" || ph == "s" || ph == "t" || ph == "f")) {
      ++ev_.counts.ignored_events;
      return;
    }
    if ((slice_begin || ph == "E") && is_envelope(e.name, e.cat)) {
      ++ev_.counts.envelope_events;
      return;
    }
    if (!e.has_ts) fail(index, "missing \"ts\"");
    int64_t t = 0;
    if (!json::number_to_ns(e.ts, 1000, t))
      fail(index, "\"ts\" must be a number of microseconds in range");
    const uint32_t group = group_id();
    if (ph == "s" || ph == "t" || ph == "f") return flow_event(e, index, t, group);
    SliceInfo info;
    if (slice_begin) {
      if (e.has_bind && (e.flow_in || e.flow_out)) {
        if (json::scalar_text(e.bind, id_text_)) {
          info.bind = bind_keys_.id(id_text_);
          info.flow_in = e.flow_in;
          info.flow_out = e.flow_out;
        }
      }
      if (e.has_args && e.args.type() == dom::element_type::OBJECT)
        tf_args(dom::object(e.args), info);
    }
    if (ph == "E") {
      be_.push_back({t, group, 0, 0, static_cast<uint32_t>(index), false, info});
      return;
    }
    const uint32_t name_id = ev_.names.id(e.name);
    const uint32_t cat_id = cats_.id(e.cat);
    if (ph == "X") {
      if (!e.has_dur) {
        ++ev_.counts.complete_without_dur;
        return;
      }
      int64_t d = 0;
      if (!json::number_to_ns(e.dur, 1000, d))
        fail(index, "\"dur\" must be a number of microseconds in range");
      if (d < 0) {
        ++ev_.counts.negative_durations;
        return;
      }
      int64_t end = 0;
      if (__builtin_add_overflow(t, d, &end)) fail(index, "\"ts\" + \"dur\" is out of range");
      add_slice(t, end, group, name_id, cat_id, info);
    } else {
      be_.push_back({t, group, name_id, cat_id, static_cast<uint32_t>(index), true, info});
    }
  }

  // A flow event (ph s, t or f) at `t`. Key: category, then the id's kind and value (local
  // ids also the pid). Built in reused buffers: no allocation per flow event.
  void flow_event(const RawEvent& e, size_t index, int64_t t, uint32_t group) {
    flow_key_.assign(e.cat).push_back('\x1f');
    bool has_key = false;
    if (e.has_id2 && e.id2.type() == dom::element_type::OBJECT) {
      dom::element v;
      if (!dom::object(e.id2).at_key("global").get(v) && json::scalar_text(v, id_text_)) {
        flow_key_.append("g:").append(id_text_);
        has_key = true;
      } else if (!dom::object(e.id2).at_key("local").get(v) && json::scalar_text(v, id_text_)) {
        flow_key_.append("l:").append(pid_).append(":").append(id_text_);
        has_key = true;
      }
    } else if (e.has_id && json::scalar_text(e.id, id_text_)) {
      flow_key_.append("i:").append(id_text_);
      has_key = true;
    }
    if (!has_key) {
      ++ev_.counts.flow_without_id;
      return;
    }
    ev_.flows.push_back({flow_keys_.id(flow_key_), t, group,
                         static_cast<uint8_t>(e.ph == "s"   ? 0
                                              : e.ph == "t" ? 1
                                                            : 2),
                         e.ph != "s" && e.bp == "e", static_cast<uint32_t>(index)});
  }

  void tf_args(dom::object args, SliceInfo& info) {
    info.inputs_begin = static_cast<uint32_t>(ev_.tf_inputs.size());
    for (auto [key, value] : args) {
      if (value.type() != dom::element_type::STRING) continue;
      if (key == "name") {
        info.tf_node = ev_.tf_nodes.id(std::string_view(value));
      } else if (key.starts_with("input") && key.size() > 5 &&
                 std::all_of(key.begin() + 5, key.end(),
                             [](char c) { return c >= '0' && c <= '9'; })) {
        bool control = false;
        const std::string_view node = tf_node_of(std::string_view(value), control);
        ev_.tf_inputs.push_back(ev_.tf_nodes.id(node) << 1 | (control ? 1u : 0u));
      }
    }
    info.inputs_end = static_cast<uint32_t>(ev_.tf_inputs.size());
  }

  void metadata(std::string_view name, dom::element args, bool has_args) {
    if (!has_args || args.type() != dom::element_type::OBJECT) return;
    dom::element v;
    if (dom::object(args).at_key("name").get(v) || v.type() != dom::element_type::STRING) return;
    if (name == "process_name") ev_.process_names[pid_] = std::string(std::string_view(v));
    if (name == "thread_name") ev_.thread_names[key_] = std::string(std::string_view(v));
  }

  uint32_t group_id() {
    const uint32_t before = static_cast<uint32_t>(ev_.groups.names.size());
    const uint32_t g = ev_.groups.id(key_);
    if (g == before) {
      ev_.group_pid.push_back(pid_);
      ev_.group_tid.push_back(tid_);
    }
    return g;
  }

  void add_slice(int64_t start, int64_t end, uint32_t group, uint32_t name, uint32_t cat,
                 const SliceInfo& info) {
    Slice s;
    s.start = start;
    s.end = end;
    s.group = group;
    s.op = name;
    s.type = activity(name, cat);
    ev_.slices.push_back(s);
    ev_.infos.push_back(info);
  }

  ActivityType activity(uint32_t name, uint32_t cat) {
    const uint64_t key = uint64_t(name) << 32 | cat;
    auto it = activity_cache_.find(key);
    if (it != activity_cache_.end()) return it->second;
    const std::string& n = ev_.names.names[name];
    const ActivityType t =
        map_.match(n, cats_.names[cat], "", "").value_or(default_chrome_activity(n));
    activity_cache_.emplace(key, t);
    return t;
  }

  void match_begin_end() {
    std::stable_sort(be_.begin(), be_.end(), [](const BeginEnd& a, const BeginEnd& b) {
      return a.group != b.group ? a.group < b.group : a.ts < b.ts;
    });
    std::vector<size_t> open;
    for (size_t i = 0; i < be_.size(); ++i) {
      if (i > 0 && be_[i].group != be_[i - 1].group) {
        ev_.counts.unclosed_begins += open.size();
        open.clear();
      }
      const BeginEnd& e = be_[i];
      if (e.begin) {
        open.push_back(i);
      } else if (open.empty()) {
        ++ev_.counts.unmatched_ends;
      } else {
        const BeginEnd& b = be_[open.back()];
        open.pop_back();
        add_slice(b.ts, e.ts, b.group, b.name, b.cat, b.info);
      }
    }
    ev_.counts.unclosed_begins += open.size();
  }

  const std::string& source_;
  const ActivityMap& map_;
  std::string pid_, tid_, key_, flow_key_, id_text_;
  json::Interner cats_, flow_keys_, bind_keys_;
  std::unordered_map<uint64_t, ActivityType> activity_cache_;
  std::vector<BeginEnd> be_;
  ChromeEvents ev_;
};

}  // namespace

Trace parse_chrome(std::string_view text, const std::string& source, const ActivityMap& map) {
  return ChromeReader(source, map).run(text);
}

int sniff_chrome(std::string_view path, std::string_view head) {
  const std::string_view s = skip_space(head);
  if (s.starts_with("{") && s.find("\"traceEvents\"") != std::string_view::npos) return 90;
  if (s.starts_with("[") && s.find("\"ph\"") != std::string_view::npos) return 80;
  if (s.starts_with("[") && has_extension(path, ".json")) return 10;
  return 0;
}

Trace read_chrome(const std::string& path, const ImportOptions& options) {
  const ActivityMap map = load_activity_map(options.map_file);
  const std::string bytes = read_file_bytes(path);
  return parse_chrome(bytes, path == "-" ? "<stdin>" : path, map);
}

namespace {
constexpr ImportOption kChromeOptions[] = {kMapOption};
}  // namespace

const Importer& chrome_descriptor() {
  static const Importer d{
      .name = "chrome",
      .description = "Chrome Trace Event Format JSON (TensorFlow, PyTorch, Perfetto)",
      .sniff = sniff_chrome,
      .read = read_chrome,
      .not_streamed =
          "a chrome trace is one JSON document, complete only at its end, so there "
          "is nothing to analyze while it grows",
      .options = kChromeOptions,
      .whole_window = true,
      .window_reason = "a profiler's capture (Chrome trace) is one run",
      .diagnostics = chrome_detail::kDiagnostics,
  };
  return d;
}

ActivityType default_chrome_activity(std::string_view name) {
  auto contains = [&](std::string_view needle) {
    return std::search(name.begin(), name.end(), needle.begin(), needle.end(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == b;
           }) != name.end();
  };
  if (contains("wait") || contains("idle") || contains("sleep")) return ActivityType::waiting;
  if (contains("deserializ")) return ActivityType::deserialization;
  if (contains("serializ")) return ActivityType::serialization;
  if (contains("memcpy")) return ActivityType::io;
  if (contains("barrier")) return ActivityType::barrier_processing;
  return ActivityType::processing;
}

}  // namespace snailtrail::importers
