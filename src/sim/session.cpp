// The reconfiguration session: deployments of the pipelined engine (session.hpp).

#include "sim/session.hpp"

#include <stdexcept>

#include "sim/pipelined.hpp"

namespace snailtrail::sim {

using pipelined_engine::Pipelined;

struct Session::Engine {
  Engine(Scenario s, Recorder& rec, int64_t start, std::vector<double> read, uint64_t gen)
      : scenario(std::move(s)), job(scenario, rec, start, std::move(read), gen) {}
  Scenario scenario;  // the deployed configuration (the job refers to it)
  Pipelined job;
};

Session::Session(Scenario scenario, bool record_trace) : scenario_(std::move(scenario)) {
  if (scenario_.model != Model::pipelined)
    throw std::invalid_argument("reconfiguration needs a pipelined scenario, not " +
                                std::string(name_of(scenario_.model)));
  recorder_.set_recording(record_trace);
  for (uint32_t op = 0; op < scenario_.operators.size(); ++op)
    recorder_.name_operator(op, scenario_.operators[op].name);
  for (const OperatorSpec& o : scenario_.operators) parallelism_.push_back(o.parallelism);
  read_.assign(scenario_.operators.size(), 0.0);
  deploy();
}

Session::~Session() = default;

void Session::deploy() {
  Scenario s = scenario_;
  for (size_t op = 0; op < s.operators.size(); ++op) s.operators[op].parallelism = parallelism_[op];
  engine_ = std::make_unique<Engine>(std::move(s), recorder_, deployed_at_, read_, generation_);
  engine_->job.start();
}

void Session::run_until(int64_t t) {
  t = std::min(t, scenario_.duration_ns);
  if (t <= now_) return;
  if (!engine_ && t >= deployed_at_) {
    now_ = deployed_at_;
    deploy();
  }
  if (engine_) engine_->job.run_until(t);
  now_ = t;
}

std::vector<InstanceCounters> Session::counters() const {
  std::vector<InstanceCounters> out;
  if (!engine_) return out;
  const Pipelined& job = engine_->job;
  for (size_t i = 0; i < job.instance_count(); ++i) {
    const InstanceTruth& st = job.stats(i);
    out.push_back({st.worker, job.op_of(i), st.instance, st.records_in, st.records_out,
                   st.useful_ns, job.blocked_ns(i, now_)});
  }
  return out;
}

double Session::source_arrived(uint32_t op, int64_t t) const {
  return SourceCurve(scenario_.operators.at(op), 1).arrived(t);
}

double Session::source_read(uint32_t op) const {
  return engine_ ? engine_->job.source_read(op) : read_.at(op);
}

void Session::retire() {
  if (!engine_) return;
  Pipelined& job = engine_->job;
  job.halt(now_);
  for (uint32_t op = 0; op < scenario_.operators.size(); ++op)
    if (scenario_.operators[op].is_source) read_[op] = job.source_read(op);
  for (size_t i = 0; i < job.instance_count(); ++i) done_.push_back(job.stats(i));
  engine_.reset();
}

void Session::reconfigure(const std::vector<uint32_t>& parallelism, int64_t pause_ns) {
  if (parallelism.size() != scenario_.operators.size())
    throw std::invalid_argument("reconfigure: " + std::to_string(parallelism.size()) +
                                " parallelism values for " +
                                std::to_string(scenario_.operators.size()) + " operators");
  for (size_t op = 0; op < parallelism.size(); ++op)
    if (parallelism[op] < 1 || parallelism[op] > 100000)
      throw std::invalid_argument("reconfigure: parallelism of '" + scenario_.operators[op].name +
                                  "' must be in [1, 100000]");
  if (pause_ns < 0) throw std::invalid_argument("reconfigure: negative pause");
  for (const EdgeSpec& e : scenario_.edges)
    if (e.partitioning == Partitioning::forward && parallelism[e.from] != parallelism[e.to])
      throw std::invalid_argument("reconfigure: the forward edge " +
                                  scenario_.operators[e.from].name + " -> " +
                                  scenario_.operators[e.to].name + " needs equal parallelism");
  retire();
  parallelism_ = parallelism;
  deployed_at_ = now_ + pause_ns;
  ++generation_;
}

SimResult Session::finish() {
  run_until(scenario_.duration_ns);
  if (engine_) {
    Pipelined& job = engine_->job;
    // As in a plain run: messages in flight arrive (workers no longer act), so that the
    // recorder can drop those received after the end with their sends.
    job.run_until(INT64_MAX);
    for (size_t i = 0; i < job.instance_count(); ++i) done_.push_back(job.stats(i));
    engine_.reset();
  }
  SimResult r;
  r.truth = expected_truth(scenario_);
  // One entry per worker, summed over deployments, in order of first deployment.
  std::unordered_map<std::string, size_t> at;
  for (InstanceTruth& x : done_) {
    auto [it, fresh] = at.emplace(x.worker, r.truth.instances.size());
    if (fresh) {
      r.truth.instances.push_back(std::move(x));
      continue;
    }
    InstanceTruth& y = r.truth.instances[it->second];
    y.records_in += x.records_in;
    y.records_out += x.records_out;
    y.useful_ns += x.useful_ns;
  }
  done_.clear();
  r.trace = recorder_.finish(scenario_.duration_ns);
  r.trace.source = scenario_.source;
  return r;
}

}  // namespace snailtrail::sim
