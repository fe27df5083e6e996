// Parsing of simulator scenarios (TOML), docs/SIMULATOR.md.
#include "sim/scenario.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "sim/scenario_reader.hpp"
#include "sim/units.hpp"

namespace snailtrail::sim {
namespace {

using detail::Reader;

void parse_operator(const Reader& r, const toml::table& t, const std::string& key,
                    OperatorSpec& op) {
  r.check_keys(t, key,
               {"name", "parallelism", "rate", "rate_changes", "selectivity", "record_bytes",
                "cost", "notify"});
  auto name = r.string(t, "name", key);
  if (!name || name->empty()) r.fail(&t, key + ".name", "missing (every operator needs a name)");
  op.name = *name;
  op.line = static_cast<int>(t.source().begin.line);
  if (auto p = r.count(t, "parallelism", key, 1, 100000))
    op.parallelism = static_cast<uint32_t>(*p);
  if (const toml::node* n = t.get("rate")) op.rate = r.rate_of(*n, key + ".rate");
  if (const toml::node* n = t.get("rate_changes")) {
    if (!n->is_array()) r.fail(n, key + ".rate_changes", "must be an array of {at, rate} tables");
    const toml::array& a = *n->as_array();
    for (size_t i = 0; i < a.size(); ++i) {
      std::string k = key + ".rate_changes[" + std::to_string(i) + "]";
      if (!a[i].is_table()) r.fail(&a[i], k, "must be a table {at = \"30s\", rate = 1000}");
      const toml::table& c = *a[i].as_table();
      r.check_keys(c, k, {"at", "rate"});
      auto at = r.duration(c, "at", k);
      if (!at) r.fail(&c, k + ".at", "missing");
      const toml::node* rn = c.get("rate");
      if (!rn) r.fail(&c, k + ".rate", "missing");
      RateChange rc{*at, r.rate_of(*rn, k + ".rate")};
      if (!op.rate_changes.empty() && rc.at_ns <= op.rate_changes.back().at_ns)
        r.fail(&c, k + ".at", "rate changes must be in increasing time order");
      op.rate_changes.push_back(rc);
    }
  }
  if (auto d = r.distribution(t, "selectivity", key, false)) op.selectivity = *d;
  if (auto b = r.count(t, "record_bytes", key, 1, 1u << 30))
    op.record_bytes = static_cast<uint32_t>(*b);
  if (auto n = r.boolean(t, "notify", key)) op.notify = *n;
  if (const toml::table* c = r.table(t, "cost", key)) {
    std::string ck = key + ".cost";
    r.check_keys(*c, ck, {"input", "deserialization", "processing", "serialization", "io"});
    if (auto d = r.distribution(*c, "input", ck, true)) op.cost.input = *d;
    if (auto d = r.distribution(*c, "deserialization", ck, true)) op.cost.deserialization = *d;
    if (auto d = r.distribution(*c, "processing", ck, true)) op.cost.processing = *d;
    if (auto d = r.distribution(*c, "serialization", ck, true)) op.cost.serialization = *d;
    if (auto d = r.distribution(*c, "io", ck, true)) op.cost.io = *d;
  }
}

// Topological order (Kahn, ties by file order); throws on a cycle.
std::vector<uint32_t> topological_order(const Reader& r, const Scenario& s) {
  const size_t n = s.operators.size();
  std::vector<uint32_t> indeg(n, 0), order;
  for (const EdgeSpec& e : s.edges) ++indeg[e.to];
  std::vector<bool> done(n, false);
  for (size_t round = 0; round < n; ++round) {
    bool found = false;
    for (uint32_t i = 0; i < n && !found; ++i)
      if (!done[i] && indeg[i] == 0) {
        done[i] = true;
        order.push_back(i);
        for (const EdgeSpec& e : s.edges)
          if (e.from == i) --indeg[e.to];
        found = true;
      }
    if (!found) break;
  }
  if (order.size() != n) {
    for (uint32_t i = 0; i < n; ++i)
      if (!done[i])
        r.fail(nullptr, "edges",
               "the operators form a cycle through '" + s.operators[i].name +
                   "' (loops are expressed with [timely] iterations)");
  }
  return order;
}

void validate(const Reader& r, Scenario& s) {
  const std::string& f = r.file();
  auto fail_op = [&](const OperatorSpec& op, const std::string& what) -> void {
    throw ScenarioError(f + ":" + std::to_string(op.line) + ": operator '" + op.name +
                        "': " + what);
  };
  for (uint32_t i = 0; i < s.operators.size(); ++i) {
    OperatorSpec& op = s.operators[i];
    op.is_source = s.in_edges(i).empty();
    if (!op.is_source && (op.rate > 0 || !op.rate_changes.empty()))
      fail_op(op, "key 'rate' is only allowed on sources (operators without incoming edges)");
    if (op.is_source && !op.cost.deserialization.is_zero())
      fail_op(op, "a source receives no records: remove cost.deserialization");
  }
  s.topo_order = topological_order(r, s);
  const bool chain_only = s.model != Model::pipelined;
  uint32_t sources = 0;
  for (uint32_t i = 0; i < s.operators.size(); ++i) {
    const OperatorSpec& op = s.operators[i];
    sources += op.is_source ? 1 : 0;
    if (chain_only && (s.in_edges(i).size() > 1 || s.out_edges(i).size() > 1))
      fail_op(op, "the " + std::string(name_of(s.model)) +
                      " model runs a chain: every operator has at most one input and one output");
  }
  if (chain_only && sources != 1)
    throw ScenarioError(f + ": key 'edges': the " + std::string(name_of(s.model)) +
                        " model needs exactly one source (found " + std::to_string(sources) + ")");
  for (const EdgeSpec& e : s.edges) {
    const OperatorSpec& a = s.operators[e.from];
    const OperatorSpec& b = s.operators[e.to];
    if (e.partitioning == Partitioning::forward && s.model != Model::timely &&
        a.parallelism != b.parallelism)
      fail_op(b, "forward edge from '" + a.name + "' needs equal parallelism (" +
                     std::to_string(a.parallelism) + " vs " + std::to_string(b.parallelism) + ")");
  }
  if (s.model == Model::timely) {
    if (s.timely.processes > s.timely.workers)
      throw ScenarioError(f + ": key 'timely.processes': more processes than workers");
    if (s.timely.iterations > 1 && s.operators.size() < 2)
      throw ScenarioError(f +
                          ": key 'timely.iterations': a loop needs an operator after the source");
  }
  if (s.model != Model::pipelined)
    for (const OperatorSpec& op : s.operators)
      if (op.is_source && op.rate <= 0 && op.rate_changes.empty())
        fail_op(op, "the " + std::string(name_of(s.model)) +
                        " model needs a source rate (key 'rate', records/s)");
  if (s.model == Model::microbatch && s.microbatch.batch_interval_ns <= 0)
    throw ScenarioError(f + ": key 'microbatch.batch_interval': must be positive");
  if (s.model == Model::timely && s.timely.epoch_interval_ns <= 0)
    throw ScenarioError(f + ": key 'timely.epoch_interval': must be positive");
  if (s.network.bytes_per_second <= 0)
    throw ScenarioError(f + ": key 'network.bandwidth': must be positive");
}

// The scenario's own keys: name (default: the file's base name), description, model,
// duration, seed.
void parse_run(const Reader& r, const toml::table& root, const std::string& source, Scenario& s) {
  if (auto v = r.string(root, "name", "")) s.name = *v;
  if (s.name.empty()) {
    std::string base = source.substr(source.find_last_of('/') + 1);
    s.name = base.substr(0, base.rfind(".toml"));
  }
  if (auto v = r.string(root, "description", "")) s.description = *v;
  if (auto v = r.string(root, "model", "")) {
    if (*v == "pipelined")
      s.model = Model::pipelined;
    else if (*v == "microbatch")
      s.model = Model::microbatch;
    else if (*v == "timely")
      s.model = Model::timely;
    else
      r.fail(root.get("model"), "model",
             "unknown model \"" + *v + "\" (expected pipelined, microbatch, timely)");
  }
  if (auto v = r.duration(root, "duration", "")) {
    if (*v <= 0) r.fail(root.get("duration"), "duration", "must be positive");
    s.duration_ns = *v;
  }
  if (const toml::node* n = root.get("seed")) {
    if (!n->is_integer() || n->as_integer()->get() < 0)
      r.fail(n, "seed", "must be a non-negative integer");
    s.seed = static_cast<uint64_t>(n->as_integer()->get());
  }
}

void parse_network(const Reader& r, const toml::table& root, Scenario& s) {
  if (const toml::table* t = r.table(root, "network", "")) {
    r.check_keys(*t, "network", {"latency", "bandwidth", "control_bytes"});
    if (auto v = r.duration(*t, "latency", "network")) s.network.latency_ns = *v;
    if (const toml::node* n = t->get("bandwidth")) {
      if (n->is_string()) {
        try {
          s.network.bytes_per_second = parse_bandwidth_text(n->as_string()->get());
        } catch (const std::invalid_argument& e) {
          r.fail(n, "network.bandwidth", e.what());
        }
      } else {
        s.network.bytes_per_second = r.number_of(*n, "network.bandwidth");
      }
      if (s.network.bytes_per_second <= 0) r.fail(n, "network.bandwidth", "must be positive");
    }
    if (auto v = r.count(*t, "control_bytes", "network", 1, 1u << 30))
      s.network.control_bytes = static_cast<uint32_t>(*v);
  }
}

// The engines' tables: [pipelined], [microbatch], [timely].
void parse_pipelined(const Reader& r, const toml::table& root, Scenario& s) {
  if (const toml::table* t = r.table(root, "pipelined", "")) {
    const std::string k = "pipelined";
    r.check_keys(*t, k,
                 {"batch_records", "buffer_capacity", "flush_interval", "watermark_interval",
                  "watermark_cost", "buffer_cost", "checkpoint_interval", "checkpoint_cost"});
    PipelinedSpec& p = s.pipelined;
    if (auto v = r.count(*t, "batch_records", k, 1, 1u << 24))
      p.batch_records = static_cast<uint32_t>(*v);
    if (auto v = r.count(*t, "buffer_capacity", k, 1, 1u << 20))
      p.buffer_capacity = static_cast<uint32_t>(*v);
    if (auto v = r.duration(*t, "flush_interval", k)) p.flush_interval_ns = *v;
    if (auto v = r.duration(*t, "watermark_interval", k)) p.watermark_interval_ns = *v;
    if (auto v = r.distribution(*t, "watermark_cost", k, true)) p.watermark_cost = *v;
    if (auto v = r.distribution(*t, "buffer_cost", k, true)) p.buffer_cost = *v;
    if (auto v = r.duration(*t, "checkpoint_interval", k)) p.checkpoint_interval_ns = *v;
    if (auto v = r.distribution(*t, "checkpoint_cost", k, true)) p.checkpoint_cost = *v;
  }
}

void parse_microbatch(const Reader& r, const toml::table& root, Scenario& s) {
  if (const toml::table* t = r.table(root, "microbatch", "")) {
    const std::string k = "microbatch";
    r.check_keys(*t, k,
                 {"executors", "batch_interval", "scheduling_cost", "stage_barrier_cost",
                  "task_launch_cost"});
    MicrobatchSpec& m = s.microbatch;
    if (auto v = r.count(*t, "executors", k, 1, 100000)) m.executors = static_cast<uint32_t>(*v);
    if (auto v = r.duration(*t, "batch_interval", k)) m.batch_interval_ns = *v;
    if (auto v = r.distribution(*t, "scheduling_cost", k, true)) m.scheduling_cost = *v;
    if (auto v = r.distribution(*t, "stage_barrier_cost", k, true)) m.stage_barrier_cost = *v;
    if (auto v = r.distribution(*t, "task_launch_cost", k, true)) m.task_launch_cost = *v;
  }
}

void parse_timely(const Reader& r, const toml::table& root, Scenario& s) {
  if (const toml::table* t = r.table(root, "timely", "")) {
    const std::string k = "timely";
    r.check_keys(*t, k,
                 {"workers", "processes", "iterations", "epoch_interval", "scheduling_cost",
                  "progress_cost", "spin", "loop_partitioning", "loop_skew"});
    TimelySpec& m = s.timely;
    if (auto v = r.count(*t, "workers", k, 1, 100000)) m.workers = static_cast<uint32_t>(*v);
    if (auto v = r.count(*t, "processes", k, 1, 100000)) m.processes = static_cast<uint32_t>(*v);
    if (auto v = r.count(*t, "iterations", k, 1, 1000000)) m.iterations = static_cast<uint32_t>(*v);
    if (auto v = r.duration(*t, "epoch_interval", k)) m.epoch_interval_ns = *v;
    if (auto v = r.distribution(*t, "scheduling_cost", k, true)) m.scheduling_cost = *v;
    if (auto v = r.distribution(*t, "progress_cost", k, true)) m.progress_cost = *v;
    if (auto v = r.duration(*t, "spin", k)) m.spin_ns = *v;
    if (auto v = r.partitioning(*t, "loop_partitioning", k)) m.loop_partitioning = *v;
    if (auto v = r.number(*t, "loop_skew", k)) {
      if (*v < 0 || *v > 1) r.fail(t->get("loop_skew"), "timely.loop_skew", "must be in [0, 1]");
      m.loop_skew = *v;
    }
  }
}

// [[operators]]; returns their index by name.
std::unordered_map<std::string, uint32_t> parse_operators(const Reader& r, const toml::table& root,
                                                          Scenario& s) {
  const toml::node* ops = root.get("operators");
  if (!ops) r.fail(nullptr, "operators", "missing: a scenario needs at least one [[operators]]");
  if (!ops->is_array() || ops->as_array()->empty())
    r.fail(ops, "operators", "must be a non-empty array of tables ([[operators]])");
  std::unordered_map<std::string, uint32_t> by_name;
  const toml::array& oa = *ops->as_array();
  for (size_t i = 0; i < oa.size(); ++i) {
    std::string key = "operators[" + std::to_string(i) + "]";
    if (!oa[i].is_table()) r.fail(&oa[i], key, "must be a table");
    OperatorSpec op;
    parse_operator(r, *oa[i].as_table(), key, op);
    if (!by_name.emplace(op.name, static_cast<uint32_t>(i)).second)
      r.fail(&oa[i], key + ".name", "duplicate operator name '" + op.name + "'");
    s.operators.push_back(std::move(op));
  }
  return by_name;
}

// [[edges]] between the operators named in `by_name`.
void parse_edges(const Reader& r, const toml::table& root,
                 const std::unordered_map<std::string, uint32_t>& by_name, Scenario& s) {
  if (const toml::node* edges = root.get("edges")) {
    if (!edges->is_array()) r.fail(edges, "edges", "must be an array of tables ([[edges]])");
    const toml::array& ea = *edges->as_array();
    for (size_t i = 0; i < ea.size(); ++i) {
      std::string key = "edges[" + std::to_string(i) + "]";
      if (!ea[i].is_table()) r.fail(&ea[i], key, "must be a table");
      const toml::table& t = *ea[i].as_table();
      r.check_keys(t, key, {"from", "to", "partitioning", "skew", "hot_instance"});
      EdgeSpec e;
      for (const char* end : {"from", "to"}) {
        auto name = r.string(t, end, key);
        if (!name) r.fail(&t, key + "." + end, "missing");
        auto it = by_name.find(*name);
        if (it == by_name.end())
          r.fail(t.get(end), key + "." + end, "no operator named '" + *name + "'");
        (std::string_view(end) == "from" ? e.from : e.to) = it->second;
      }
      if (e.from == e.to) r.fail(&t, key, "an edge from an operator to itself");
      for (const EdgeSpec& o : s.edges)
        if (o.from == e.from && o.to == e.to) r.fail(&t, key, "duplicate edge");
      if (auto p = r.partitioning(t, "partitioning", key)) e.partitioning = *p;
      if (auto v = r.number(t, "skew", key)) {
        if (*v < 0 || *v > 1) r.fail(t.get("skew"), key + ".skew", "must be in [0, 1]");
        if (e.partitioning != Partitioning::hash && *v > 0)
          r.fail(t.get("skew"), key + ".skew", "skew needs partitioning = \"hash\"");
        e.skew = *v;
      }
      if (auto v = r.count(t, "hot_instance", key, 0, 1u << 20)) {
        if (e.partitioning != Partitioning::hash)
          r.fail(t.get("hot_instance"), key + ".hot_instance",
                 "hot_instance needs partitioning = \"hash\"");
        if (*v >= s.operators[e.to].parallelism)
          r.fail(t.get("hot_instance"), key + ".hot_instance",
                 "must be below the parallelism of '" + s.operators[e.to].name + "'");
        e.hot_instance = static_cast<uint32_t>(*v);
      }
      s.edges.push_back(e);
    }
  }
}

}  // namespace

Scenario parse_scenario(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw ScenarioError(source + ":" + std::to_string(e.source().begin.line) + ":" +
                        std::to_string(e.source().begin.column) + ": " +
                        std::string(e.description()));
  }
  Reader r(source);
  Scenario s;
  s.source = source;
  r.check_keys(root, "",
               {"name", "description", "model", "duration", "seed", "network", "pipelined",
                "microbatch", "timely", "operators", "edges"});
  parse_run(r, root, source, s);
  parse_network(r, root, s);
  parse_pipelined(r, root, s);
  parse_microbatch(r, root, s);
  parse_timely(r, root, s);
  const auto by_name = parse_operators(r, root, s);
  parse_edges(r, root, by_name, s);
  validate(r, s);
  return s;
}

}  // namespace snailtrail::sim
