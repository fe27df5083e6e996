#include "scale/flink_rest.hpp"

#include <httplib.h>
#include <simdjson.h>

#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

namespace snailtrail::scale {
namespace {

simdjson::dom::element parse(simdjson::dom::parser& parser, std::string_view json,
                             const std::string& source) {
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc))
    throw std::runtime_error(fmt::format("{}: not JSON: {}", source, simdjson::error_message(err)));
  return doc;
}

std::string str(simdjson::dom::element e, const char* key, const std::string& source) {
  std::string_view v;
  if (e[key].get(v)) throw std::runtime_error(fmt::format("{}: no string \"{}\"", source, key));
  return std::string(v);
}

// A metric value: a number, or a string ("NaN", "12.5") as some Flink versions write it.
double value_of(simdjson::dom::element e) {
  double d;
  if (!e.get(d)) return d;
  int64_t i;
  if (!e.get(i)) return static_cast<double>(i);
  uint64_t u;
  if (!e.get(u)) return static_cast<double>(u);
  std::string_view s;
  if (!e.get(s)) {
    try {
      return std::stod(std::string(s));
    } catch (const std::exception&) {
    }
  }
  return kUndefined;
}

}  // namespace

FlinkJob parse_flink_job(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, json, source);
  FlinkJob job;
  job.id = str(doc, "jid", source);
  job.name = str(doc, "name", source);
  job.state = str(doc, "state", source);
  simdjson::dom::array vertices;
  if (doc["vertices"].get(vertices)) throw std::runtime_error(source + ": no \"vertices\" array");
  for (simdjson::dom::element v : vertices) {
    uint64_t parallelism = 0;
    if (v["parallelism"].get(parallelism) || parallelism == 0)
      throw std::runtime_error(source + ": a vertex without a positive \"parallelism\"");
    const std::string id = str(v, "id", source);
    if (job.topology.find_id(id))
      throw std::runtime_error(source + ": vertex " + id + " listed twice");
    job.topology.add_operator(str(v, "name", source), static_cast<uint32_t>(parallelism), id);
  }
  if (job.topology.size() == 0) throw std::runtime_error(source + ": the job has no vertices");
  // Edges: plan.nodes[i].inputs[j].id -> plan.nodes[i].id.
  simdjson::dom::array nodes;
  if (doc["plan"]["nodes"].get(nodes))
    throw std::runtime_error(source + ": no \"plan\": {\"nodes\": [...]} (the job graph's edges)");
  for (simdjson::dom::element n : nodes) {
    const auto to = job.topology.find_id(str(n, "id", source));
    if (!to) throw std::runtime_error(source + ": a plan node that is no vertex");
    simdjson::dom::array inputs;
    if (n["inputs"].get(inputs)) continue;  // a source
    for (simdjson::dom::element in : inputs) {
      const auto from = job.topology.find_id(str(in, "id", source));
      if (!from) throw std::runtime_error(source + ": an input from no vertex");
      job.topology.add_edge(*from, *to);
    }
  }
  job.topology.topological_order();  // throws on a cycle
  job.metrics.resize(job.topology.size());
  return job;
}

FlinkVertexMetrics parse_flink_vertex_metrics(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, json, source);
  simdjson::dom::array list;
  if (doc.get(list))
    throw std::runtime_error(source + ": expected an array of {\"id\", \"min\", \"max\", ...}");
  FlinkVertexMetrics m;
  for (simdjson::dom::element e : list) {
    const std::string id = str(e, "id", source);
    auto agg = [&](const char* key) {
      simdjson::dom::element v;
      return e[key].get(v) ? kUndefined : value_of(v);
    };
    if (id == "busyTimeMsPerSecond") {
      m.busy_ms_avg = agg("avg");
      m.busy_ms_max = agg("max");
    } else if (id == "idleTimeMsPerSecond") {
      m.idle_ms_avg = agg("avg");
    } else if (id == "backPressuredTimeMsPerSecond") {
      m.backpressured_ms_avg = agg("avg");
    } else if (id == "numRecordsInPerSecond") {
      const double v = agg("sum");
      m.records_in = std::isnan(v) ? 0 : v;
    } else if (id == "numRecordsOutPerSecond") {
      const double v = agg("sum");
      m.records_out = std::isnan(v) ? 0 : v;
    }
  }
  return m;
}

std::string parse_running_job(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, json, source);
  simdjson::dom::array jobs;
  if (doc["jobs"].get(jobs)) throw std::runtime_error(source + ": no \"jobs\" array");
  std::vector<std::string> running;
  for (simdjson::dom::element j : jobs)
    if (str(j, "status", source) == "RUNNING") running.push_back(str(j, "id", source));
  if (running.size() != 1)
    throw std::runtime_error(
        fmt::format("{}: {} running jobs; name one with --job ID", source, running.size()));
  return running[0];
}

std::vector<InstanceRates> flink_instance_rates(const FlinkJob& job) {
  std::vector<InstanceRates> out;
  for (uint32_t op = 0; op < job.topology.size(); ++op) {
    const FlinkVertexMetrics& m = job.metrics[op];
    const uint32_t p = job.topology.parallelism[op];
    for (uint32_t k = 0; k < p; ++k) {
      InstanceMetrics x;
      x.op = op;
      x.instance = k;
      x.worker = fmt::format("{} #{}", job.topology.names[op], k);
      x.window_s = 1;  // the metrics are per second
      x.useful_s = std::isnan(m.busy_ms_avg) ? 0 : m.busy_ms_avg / 1000;
      x.records_in = m.records_in / p;
      x.records_out = m.records_out / p;
      x.blocked_s = std::isnan(m.backpressured_ms_avg) ? kUndefined : m.backpressured_ms_avg / 1000;
      out.push_back(x.rates());
    }
  }
  return out;
}

FlinkJob fetch_flink_job(const std::string& url, const std::string& job_id) {
  httplib::Client client(url);
  client.set_connection_timeout(10);
  client.set_read_timeout(30);
  auto get = [&](const std::string& path) {
    auto res = client.Get(path);
    if (!res)
      throw std::runtime_error(fmt::format("{}{}: {}", url, path, httplib::to_string(res.error())));
    if (res->status != 200)
      throw std::runtime_error(fmt::format("{}{}: HTTP {}", url, path, res->status));
    return res->body;
  };
  const std::string id = job_id.empty() ? parse_running_job(get("/jobs"), url + "/jobs") : job_id;
  const std::string job_path = "/jobs/" + id;
  FlinkJob job = parse_flink_job(get(job_path), url + job_path);
  for (uint32_t op = 0; op < job.topology.size(); ++op) {
    const std::string path = fmt::format("{}/vertices/{}/subtasks/metrics?get={}&agg={}", job_path,
                                         job.topology.ids[op], kFlinkMetrics, kFlinkAggregations);
    job.metrics[op] = parse_flink_vertex_metrics(get(path), url + path);
  }
  return job;
}

}  // namespace snailtrail::scale
