#include "scale/rates_json.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <stdexcept>

#include "output/writers.hpp"

namespace snailtrail::scale {
namespace {

using Buf = fmt::memory_buffer;

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("rates page: " + what);
}

simdjson::dom::element json_field(simdjson::dom::element o, const char* key,
                                  const std::string& where) {
  simdjson::dom::element v;
  if (o[key].get(v) != simdjson::SUCCESS) bad(where + ": no \"" + key + "\"");
  return v;
}

int64_t integer(simdjson::dom::element o, const char* key, const std::string& where) {
  int64_t v = 0;
  if (json_field(o, key, where).get_int64().get(v) != simdjson::SUCCESS)
    bad(where + ": \"" + key + "\" is not an integer");
  return v;
}

double real(simdjson::dom::element o, const char* key, const std::string& where) {
  double v = 0;
  if (json_field(o, key, where).get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v) ||
      v < 0)
    bad(where + ": \"" + key + "\" is not a number >= 0");
  return v;
}

std::string text(simdjson::dom::element o, const char* key, const std::string& where) {
  std::string_view v;
  if (json_field(o, key, where).get_string().get(v) != simdjson::SUCCESS)
    bad(where + ": \"" + key + "\" is not a string");
  return std::string(v);
}

simdjson::dom::array array(simdjson::dom::element o, const char* key, const std::string& where) {
  simdjson::dom::array v;
  if (json_field(o, key, where).get_array().get(v) != simdjson::SUCCESS)
    bad(where + ": \"" + key + "\" is not an array");
  return v;
}

uint32_t operator_id(int64_t v, const std::string& where) {
  if (v < 0 || v > UINT32_MAX) bad(where + ": operator id out of range");
  return static_cast<uint32_t>(v);
}

}  // namespace

std::string interval_json(const IntervalMetrics& m, int64_t epoch, const NameOf& operator_name,
                          const NameOf& worker_name) {
  Buf b;
  fmt::format_to(std::back_inserter(b),
                 "{{\"epoch\": {}, \"start_ns\": {}, \"end_ns\": {}, \"instances\": [", epoch,
                 m.start_ns, m.end_ns);
  for (size_t i = 0; i < m.instances.size(); ++i) {
    const InstanceMetrics& x = m.instances[i];
    const uint32_t worker = static_cast<uint32_t>(std::stoul(x.worker));
    fmt::format_to(std::back_inserter(b),
                   "{}{{\"operator\": {}, \"operator_name\": ", i ? ", " : "", x.op);
    append_json_string(b, operator_name(x.op));
    fmt::format_to(std::back_inserter(b),
                   ", \"instance\": {}, \"worker\": {}, \"worker_name\": ", x.instance, worker);
    append_json_string(b, worker_name(worker));
    const InstanceRates r = x.rates();
    const std::pair<const char*, double> values[] = {
        {"window_s", x.window_s},
        {"useful_s", x.useful_s},
        {"records_processed", x.records_in},
        {"records_pushed", x.records_out},
        {"true_processing_rate", r.true_processing},
        {"true_output_rate", r.true_output},
        {"observed_processing_rate", r.observed_processing},
        {"observed_output_rate", r.observed_output}};
    for (const auto& [key, v] : values) {
      fmt::format_to(std::back_inserter(b), ", \"{}\": ", key);
      append_json_number(b, v);
    }
    b.push_back('}');
  }
  b.append(std::string_view("]}"));
  return fmt::to_string(b);
}

std::string topology_json(const Topology& t) {
  Buf b;
  b.append(std::string_view("{\"operators\": ["));
  for (size_t i = 0; i < t.size(); ++i) {
    fmt::format_to(std::back_inserter(b), "{}{{\"id\": {}, \"name\": ", i ? ", " : "", t.ids[i]);
    append_json_string(b, t.names[i]);
    fmt::format_to(std::back_inserter(b), ", \"instances\": {}}}", t.parallelism[i]);
  }
  b.append(std::string_view("], \"edges\": ["));
  for (size_t i = 0; i < t.edges.size(); ++i)
    fmt::format_to(std::back_inserter(b), "{}[{}, {}]", i ? ", " : "", t.ids[t.edges[i].first],
                   t.ids[t.edges[i].second]);
  b.append(std::string_view("]}"));
  return fmt::to_string(b);
}

std::string rates_page_json(int64_t interval_ns, int64_t first_event_ns,
                            const std::string& topology,
                            const std::vector<std::string>& intervals) {
  std::string s = fmt::format(
      "{{\"interval_ns\": {}, \"first_event_ns\": {}, \"topology\": {}, \"intervals\": [",
      interval_ns, first_event_ns, topology);
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (i) s += ",";
    s += "\n";
    s += intervals[i];
  }
  return s + "]}\n";
}

RatesPage parse_rates_page(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc); err != simdjson::SUCCESS)
    bad(std::string("not JSON (") + simdjson::error_message(err) + ")");
  if (!doc.is_object()) bad("not a JSON object");
  RatesPage p;
  p.interval_ns = integer(doc, "interval_ns", "page");
  if (p.interval_ns <= 0) bad("page: \"interval_ns\" must be positive");
  p.first_event_ns = integer(doc, "first_event_ns", "page");
  const simdjson::dom::element topo = json_field(doc, "topology", "page");
  for (simdjson::dom::element o : array(topo, "operators", "topology")) {
    const uint32_t id = operator_id(integer(o, "id", "topology operator"), "topology");
    const int64_t n = integer(o, "instances", "topology operator");
    if (n < 0 || n > UINT32_MAX) bad("topology operator: instances out of range");
    if (p.topology.find_id(std::to_string(id)))
      bad("topology: operator " + std::to_string(id) + " twice");
    p.topology.add_operator(text(o, "name", "topology operator"), static_cast<uint32_t>(n),
                            std::to_string(id));
  }
  for (simdjson::dom::element e : array(topo, "edges", "topology")) {
    simdjson::dom::array pair;
    int64_t a = 0, b = 0;
    if (e.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
        pair.at(0).get_int64().get(a) != simdjson::SUCCESS ||
        pair.at(1).get_int64().get(b) != simdjson::SUCCESS)
      bad("topology: an edge is not [from, to]");
    auto from = p.topology.find_id(std::to_string(a)), to = p.topology.find_id(std::to_string(b));
    if (!from || !to) bad("topology: an edge names an unknown operator");
    p.topology.add_edge(*from, *to);
  }
  for (simdjson::dom::element o : array(doc, "intervals", "page")) {
    RatesPage::Interval in;
    in.epoch = integer(o, "epoch", "interval");
    const std::string where = "interval " + std::to_string(in.epoch);
    in.metrics.start_ns = integer(o, "start_ns", where);
    in.metrics.end_ns = integer(o, "end_ns", where);
    if (in.metrics.end_ns < in.metrics.start_ns) bad(where + ": ends before it starts");
    for (simdjson::dom::element x : array(o, "instances", where)) {
      InstanceMetrics m;
      m.op = operator_id(integer(x, "operator", where), where);
      const int64_t instance = integer(x, "instance", where);
      const int64_t worker = integer(x, "worker", where);
      if (instance < 0 || instance > UINT32_MAX || worker < 0 || worker > UINT32_MAX)
        bad(where + ": instance or worker out of range");
      m.instance = static_cast<uint32_t>(instance);
      m.worker = std::to_string(worker);
      m.window_s = real(x, "window_s", where);
      m.useful_s = real(x, "useful_s", where);
      m.records_in = real(x, "records_processed", where);
      m.records_out = real(x, "records_pushed", where);
      in.operator_names.push_back(text(x, "operator_name", where));
      in.metrics.instances.push_back(std::move(m));
    }
    p.intervals.push_back(std::move(in));
  }
  return p;
}

}  // namespace snailtrail::scale
