// LTTng CTF -> kernel events through libbabeltrace2 (lttng_ctf.hpp).
#include "kernel/lttng_ctf.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel/ctf_dir.hpp"
#include "trace/trace.hpp"

#ifdef SNAILTRAIL_HAVE_BABELTRACE2
#include <babeltrace2/babeltrace.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SNAILTRAIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SNAILTRAIL_ASAN 1
#endif
#endif
#ifdef SNAILTRAIL_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace snailtrail::kernel {

#ifndef SNAILTRAIL_HAVE_BABELTRACE2

bool have_lttng_reader() {
  return false;
}
KernelEvents read_lttng_ctf_in_process(const std::string& path) {
  throw TraceError(path, "open",
                   "this build has no LTTng CTF reader (install libbabeltrace2-dev, rebuild)");
}

#else

bool have_lttng_reader() {
  return true;
}

namespace {

// A variant's selected option (through nested variants); other fields as they are.
const bt_field* unwrap(const bt_field* f) {
  while (f && bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_VARIANT))
    f = bt_field_variant_borrow_selected_option_field_const(f);
  return f;
}

const bt_field* member(const bt_field* st, const char* name) {
  st = unwrap(st);
  if (!st || bt_field_get_class_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE) return nullptr;
  return bt_field_structure_borrow_member_field_by_name_const(st, name);
}

bool get_int(const bt_field* st, const char* name, int64_t& out) {
  const bt_field* f = member(st, name);
  if (!f) return false;
  const bt_field_class_type t = bt_field_get_class_type(f);
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
    out = bt_field_integer_signed_get_value(f);
    return true;
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
    out = static_cast<int64_t>(bt_field_integer_unsigned_get_value(f));
    return true;
  }
  return false;
}

bool get_i32(const bt_field* st, const char* name, int32_t& out) {
  int64_t v;
  if (!get_int(st, name, v) || v < INT32_MIN || v > INT32_MAX) return false;
  out = static_cast<int32_t>(v);
  return true;
}

// LTTng's field name, else perf's (perf data convert --to-ctf keeps the kernel's
// tracepoint field names: prev_pid, next_pid, pid, parent_pid, child_pid).
bool get_i32(const bt_field* st, const char* lttng, const char* perf, int32_t& out) {
  return get_i32(st, lttng, out) || get_i32(st, perf, out);
}

bool get_str(const bt_field* st, const char* name, std::string_view& out) {
  const bt_field* f = member(st, name);
  if (!f || bt_field_get_class_type(f) != BT_FIELD_CLASS_TYPE_STRING) return false;
  out = std::string_view(bt_field_string_get_value(f), bt_field_string_get_length(f));
  return true;
}

// LTTng's prev_state: the task state bits, TASK_REPORT_MAX (0x100, or 0x80 on older
// kernels' reporting) alone when preempted; EXIT_DEAD 0x10 / EXIT_ZOMBIE 0x20.
PrevState lttng_prev_state(int64_t v) {
  const int64_t low = v & 0xff;
  if (low == 0 || v == 0x100) return PrevState::runnable;
  if (low & 0x30) return PrevState::dead;
  return PrevState::blocked;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

// Mixes an integer field, or every element of an array of integers (an IP address).
bool mix_field(const bt_field* f, uint64_t& h) {
  f = unwrap(f);
  if (!f) return false;
  const bt_field_class_type t = bt_field_get_class_type(f);
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
    h = mix(h, bt_field_integer_unsigned_get_value(f));
    return true;
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
    h = mix(h, static_cast<uint64_t>(bt_field_integer_signed_get_value(f)));
    return true;
  }
  if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
    const uint64_t n = bt_field_array_get_length(f);
    h = mix(h, n);
    for (uint64_t i = 0; i < n; ++i)
      if (!mix_field(bt_field_array_borrow_element_field_by_index_const(f, i), h)) return false;
    return true;
  }
  return false;
}

// A TCP packet's identity from lttng-modules' extended network header (net_dev_queue,
// net_if_receive_skb): network_header (variant: ipv4/ipv6 struct) holds the addresses and
// transport_header (variant: tcp struct) the ports, sequence and acknowledgement numbers
// and flags — equal on the sending and the receiving host. 0 when absent (older
// lttng-modules, not IP, not TCP).
uint64_t packet_identity(const bt_field* payload) {
  const bt_field* ip = unwrap(member(payload, "network_header"));
  const bt_field* tcp = unwrap(member(ip, "transport_header"));
  if (!tcp || !member(tcp, "seq")) return 0;
  uint64_t h = 0x5eed;
  for (const char* name : {"saddr", "daddr"})
    if (!mix_field(member(ip, name), h)) return 0;
  for (const char* name : {"source_port", "dest_port", "seq", "ack_seq", "flags"})
    if (!mix_field(member(tcp, name), h)) return 0;
  return h ? h : 1;
}

struct Sink {
  KernelEvents out;
  bt_message_iterator* it = nullptr;
  std::vector<int32_t> current;  // running tid per CPU of the trace read (sched_switch)
  std::unordered_map<const bt_trace*, uint16_t> host_of_trace;
  std::vector<std::string> unknown_names;  // the first event classes not read, for errors

  int32_t& current_of(int32_t cpu) {
    static int32_t none = -1;
    if (cpu < 0 || cpu >= (1 << 16)) return none = -1;
    if (static_cast<size_t>(cpu) >= current.size()) current.resize(cpu + 1, -1);
    return current[cpu];
  }

  // The machine a trace comes from: its environment's `hostname` (traces without one
  // share the unnamed host).
  uint16_t host(const bt_event* ev) {
    const bt_trace* trace = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev));
    auto it = host_of_trace.find(trace);
    if (it != host_of_trace.end()) return it->second;
    std::string name;
    const bt_value* v = bt_trace_borrow_environment_entry_value_by_name_const(trace, "hostname");
    if (!v) v = bt_trace_borrow_environment_entry_value_by_name_const(trace, "host");  // perf
    if (v && bt_value_get_type(v) == BT_VALUE_TYPE_STRING) name = bt_value_string_get(v);
    uint16_t id = 0;
    while (id < out.hosts.size() && out.hosts[id] != name) ++id;
    if (id == out.hosts.size()) {
      if (id == UINT16_MAX) {
        out.diagnostics.add("lttng.too_many_hosts");
        id = 0;
      } else {
        out.hosts.push_back(name);
      }
    }
    host_of_trace.emplace(trace, id);
    return id;
  }

  // The packet context's cpu_id (LTTng and perf alike); -1 if none.
  static int32_t cpu_of(const bt_event* ev) {
    const bt_packet* pkt = bt_event_borrow_packet_const(ev);
    int64_t cpu = -1;
    if (pkt) get_int(bt_packet_borrow_context_field_const(pkt), "cpu_id", cpu);
    return cpu >= 0 && cpu < (1 << 16) ? static_cast<int32_t>(cpu) : -1;
  }

  void unknown_event(std::string_view name) {
    if (unknown_names.size() < 4 &&
        std::find(unknown_names.begin(), unknown_names.end(), name) == unknown_names.end())
      unknown_names.emplace_back(name);
    out.diagnostics.add("lttng.unknown_event");
  }

  void event(const bt_message* msg) {
    const bt_event* ev = bt_message_event_borrow_event_const(msg);
    const char* cname = bt_event_class_get_name(bt_event_borrow_class_const(ev));
    if (!cname) return out.diagnostics.add("lttng.unknown_event");
    const std::string_view name(cname);
    const KType* known = tracepoint_type(name, true);
    if (!known) return unknown_event(name);
    KEvent k;
    k.type = *known;
    const bt_clock_snapshot* cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
    if (!cs || bt_clock_snapshot_get_ns_from_origin(cs, &k.ts) !=
                   BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
      return out.diagnostics.add("lttng.event_without_time");
    k.cpu = cpu_of(ev);
    k.host = host(ev);
    int32_t& cur = current_of(k.cpu);
    k.tid = cur;
    int32_t ctx_tid;
    const bt_field* p = bt_event_borrow_payload_field_const(ev);
    if (get_i32(bt_event_borrow_specific_context_field_const(ev), "tid", ctx_tid) ||
        get_i32(bt_event_borrow_common_context_field_const(ev), "tid", ctx_tid) ||
        get_i32(bt_event_borrow_common_context_field_const(ev), "_tid", ctx_tid) ||
        get_i32(p, "perf_tid", ctx_tid))  // perf's CTF: the sample's thread
      k.tid = ctx_tid;
    std::string_view s;
    bool ok = true;
    switch (k.type) {
      case KType::sched_switch: {
        int64_t st = 0;
        ok = get_i32(p, "prev_tid", "prev_pid", k.tid) && get_i32(p, "next_tid", "next_pid", k.a) &&
             get_int(p, "prev_state", st);
        k.state = lttng_prev_state(st);
        if (get_str(p, "prev_comm", s)) k.comm = out.strings.intern(s);
        if (get_str(p, "next_comm", s)) k.comm_a = out.strings.intern(s);
        if (ok) cur = k.a;
        break;
      }
      case KType::sched_waking:
      case KType::sched_wakeup:
      case KType::sched_wakeup_new:
        ok = get_i32(p, "tid", "pid", k.a);
        if (get_str(p, "comm", s)) k.comm_a = out.strings.intern(s);
        break;
      case KType::process_fork:
        ok = get_i32(p, "parent_tid", "parent_pid", k.tid) &&
             get_i32(p, "child_tid", "child_pid", k.a);
        if (get_str(p, "parent_comm", s)) k.comm = out.strings.intern(s);
        if (get_str(p, "child_comm", s)) k.comm_a = out.strings.intern(s);
        break;
      case KType::process_exit:
        ok = get_i32(p, "tid", "pid", k.tid);
        break;
      case KType::irq_entry:
      case KType::irq_exit:
        ok = get_i32(p, "irq", k.a);
        if (get_str(p, "name", s)) k.comm_a = out.strings.intern(s);
        break;
      case KType::softirq_entry:
      case KType::softirq_exit:
        ok = get_i32(p, "vec", k.a);
        break;
      case KType::net_queue:
      case KType::net_receive:
        k.packet = packet_identity(p);
        break;
      case KType::statedump: {
        int64_t status = 0;
        ok = get_i32(p, "tid", k.tid) && get_int(p, "status", status);
        if (get_str(p, "name", s)) k.comm = out.strings.intern(s);
        // enum lttng_process_status: 1 WAIT_FORK, 2 WAIT_CPU, 5 WAIT, 6 RUN.
        if (ok && status != 1 && status != 2 && status != 5) return;  // running or gone
        k.state = status == 5 ? PrevState::blocked : PrevState::runnable;
        break;
      }
      default:
        break;
    }
    if (!ok) return out.diagnostics.add("lttng.missing_field");
    out.events.push_back(k);
  }
};

bt_graph_simple_sink_component_initialize_func_status sink_init(bt_message_iterator* it,
                                                                void* data) {
  static_cast<Sink*>(data)->it = it;
  return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

bt_graph_simple_sink_component_consume_func_status sink_consume(bt_message_iterator* it,
                                                                void* data) {
  Sink& sink = *static_cast<Sink*>(data);
  sink.it = it;
  bt_message_array_const msgs;
  uint64_t count = 0;
  switch (bt_message_iterator_next(sink.it, &msgs, &count)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
      break;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
    default:
      return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const bt_message* m = msgs[i];
    switch (bt_message_get_type(m)) {
      case BT_MESSAGE_TYPE_EVENT:
        sink.event(m);
        break;
      case BT_MESSAGE_TYPE_DISCARDED_EVENTS: {
        uint64_t n = 1;
        if (bt_message_discarded_events_get_count(m, &n) != BT_PROPERTY_AVAILABILITY_AVAILABLE)
          n = 1;
        sink.out.diagnostics.add("lttng.discarded_events", n);
        break;
      }
      case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
        sink.out.diagnostics.add("lttng.discarded_packets");
        break;
      default:
        break;
    }
    bt_message_put_ref(m);
  }
  return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

// babeltrace2's error causes, innermost last, as one line.
std::string take_error(const char* fallback) {
  const bt_error* err = bt_current_thread_take_error();
  if (!err) return fallback;
  std::string what;
  const uint64_t n = bt_error_get_cause_count(err);
  for (uint64_t i = n; i-- > 0;) {
    const char* m = bt_error_cause_get_message(bt_error_borrow_cause_by_index(err, i));
    if (!m || std::string_view(m).find("comp-addr=") != std::string_view::npos) continue;
    if (!what.empty()) what += ": ";
    what += m;
  }
  bt_error_release(err);
  return what.empty() ? fallback : what;
}

struct GraphGuard {
  bt_graph* g = nullptr;
  ~GraphGuard() { bt_graph_put_ref(g); }
};

// Reads one CTF trace into the sink through its own graph (source.ctf.fs -> muxer ->
// sink): traces of different hosts have unrelated clocks and UUIDs, which one source
// component refuses to merge; the model aligns the hosts' clocks itself.
void read_one_trace(const std::string& trace, Sink& sink) {
  GraphGuard graph{bt_graph_create(0)};
  const bt_plugin* ctf = nullptr;
  const bt_plugin* utils = nullptr;
  if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &ctf) !=
          BT_PLUGIN_FIND_STATUS_OK ||
      bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &utils) !=
          BT_PLUGIN_FIND_STATUS_OK) {
    bt_plugin_put_ref(ctf);
    throw TraceError(trace, "open", "babeltrace2's ctf and utils plugins are not installed");
  }
  const bt_component_class_source* src_cls =
      bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs");
  const bt_component_class_filter* mux_cls =
      bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer");
  bt_value* params = bt_value_map_create();
  bt_value* inputs = nullptr;
  bt_value_map_insert_empty_array_entry(params, "inputs", &inputs);
  bt_value_array_append_string_element(inputs, trace.c_str());
  const bt_component_source* src = nullptr;
  const bt_component_filter* mux = nullptr;
  const bt_component_sink* snk = nullptr;
  bt_graph_add_component_status added;
  {
#ifdef SNAILTRAIL_ASAN
    // babeltrace2 2.0.4's CTF metadata parser leaks a few bytes when metadata does not
    // parse (seen under LeakSanitizer): its allocation, not ours to report.
    __lsan::ScopedDisabler no_leak_check;
#endif
    added =
        bt_graph_add_source_component(graph.g, src_cls, "src", params, BT_LOGGING_LEVEL_NONE, &src);
  }
  bt_value_put_ref(params);
  if (added != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
    bt_plugin_put_ref(ctf);
    bt_plugin_put_ref(utils);
    throw TraceError(trace, "open", take_error("source.ctf.fs cannot open it"));
  }
  bt_graph_add_filter_component(graph.g, mux_cls, "mux", nullptr, BT_LOGGING_LEVEL_NONE, &mux);
  bt_plugin_put_ref(ctf);
  bt_plugin_put_ref(utils);
  bt_graph_add_simple_sink_component(graph.g, "sink", sink_init, sink_consume, nullptr, &sink,
                                     &snk);
  const uint64_t ports = bt_component_source_get_output_port_count(src);
  for (uint64_t i = 0; i < ports; ++i) {
    const bt_port_input* in = bt_component_filter_borrow_input_port_by_index_const(mux, i);
    if (!in || bt_graph_connect_ports(graph.g,
                                      bt_component_source_borrow_output_port_by_index_const(src, i),
                                      in, nullptr) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
      throw TraceError(trace, "open", take_error("cannot connect the CTF streams"));
  }
  if (bt_graph_connect_ports(graph.g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
                             bt_component_sink_borrow_input_port_by_index_const(snk, 0),
                             nullptr) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
    throw TraceError(trace, "open", take_error("cannot connect the muxer"));
  bt_graph_run_status st;
  do {
    st = bt_graph_run(graph.g);
  } while (st == BT_GRAPH_RUN_STATUS_AGAIN);
  if (st != BT_GRAPH_RUN_STATUS_OK)
    throw TraceError(trace, "read", take_error("babeltrace2 could not read the trace"));
}

// A trace that yields no event the model uses is refused, saying what it held.
[[noreturn]] void throw_no_events(const std::string& path, const Sink& sink) {
  std::string what = "no scheduler or interrupt event read";
  const uint64_t unknown = sink.out.diagnostics.get("lttng.unknown_event");
  const uint64_t missing = sink.out.diagnostics.get("lttng.missing_field");
  if (unknown) {
    what += fmt::format(" ({} events of other kinds, e.g.", unknown);
    for (const std::string& n : sink.unknown_names) what += " '" + n + "'";
    what += ")";
  }
  if (missing) what += fmt::format(" ({} events without the fields read)", missing);
  if (!unknown && !missing) what += " (the trace holds no events)";
  if (const uint64_t n = sink.out.diagnostics.get("lttng.empty_stream"))
    what += fmt::format(" ({} stream files are empty)", n);
  throw TraceError(path, "read",
                   what +
                       "; read are LTTng's sched_switch, sched_waking, ... and perf's "
                       "sched:sched_switch, ... (perf data convert --to-ctf)");
}

}  // namespace

KernelEvents read_lttng_ctf_in_process(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    throw TraceError(path, "open", "an LTTng trace is a directory (with a 'metadata' file)");
  std::vector<std::string> traces;
  if (fs::exists(fs::path(path) / "metadata", ec)) {
    traces.push_back(path);
  } else {
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
         it.increment(ec))
      if (it->path().filename() == "metadata") traces.push_back(it->path().parent_path().string());
    std::sort(traces.begin(), traces.end());
  }
  if (traces.empty()) throw TraceError(path, "open", "no CTF trace (no 'metadata' file) in it");

  Sink sink;
  sink.out.source = path;
  auto& ev = sink.out.events;
  uint64_t inversions = 0;
  for (const std::string& trace : traces) {
    const size_t first = ev.size();
    sink.current.clear();
    check_empty_streams(trace, sink.out);
    read_one_trace(trace, sink);
    for (size_t i = first + 1; i < ev.size(); ++i)
      if (ev[i].ts < ev[i - 1].ts) ++inversions;
  }
  if (ev.empty()) throw_no_events(path, sink);
  if (inversions) sink.out.diagnostics.add("lttng.out_of_order", inversions);
  if (traces.size() > 1 || inversions)
    std::stable_sort(ev.begin(), ev.end(),
                     [](const KEvent& a, const KEvent& b) { return a.ts < b.ts; });
  return std::move(sink.out);
}

#endif

}  // namespace snailtrail::kernel
