#include "scale/sources.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "trace/json_text.hpp"

namespace snailtrail::scale {

namespace {
int64_t first_ts(const Trace& trace) {
  if (trace.events.empty()) throw TraceError(trace.source, "input", "the trace has no events");
  int64_t origin = INT64_MAX;
  for (const Event& e : trace.events) origin = std::min(origin, e.ts);
  return origin;
}
}  // namespace

TraceSource::TraceSource(const Trace& trace, int64_t interval_ns)
    : TraceSource(trace, first_ts(trace), interval_ns, [&trace](const auto& each) {
        for (const Event& e : trace.events) each(e);
      }) {}

TraceSource::TraceSource(const Trace& names, int64_t origin, int64_t interval_ns,
                         const EventFeed& feed)
    : trace_(names), origin_(origin) {
  RateCollector c(interval_ns, origin_);
  feed([&c](const Event& e) { c.add(e); });
  intervals_ = c.finish();
  topology_ = c.topology([&](uint32_t op) { return names.operator_name(op); });
}

std::optional<SourceInterval> TraceSource::next() {
  if (next_ >= intervals_.size()) return std::nullopt;
  const size_t i = next_++;
  const IntervalMetrics& m = intervals_[i];
  IntervalRates r = interval_rates(m, topology_);
  SourceInterval in;
  in.epoch = static_cast<int64_t>(i);
  in.timestamp = fmt::format("{}s", (m.start_ns - origin_) / 1e9);
  in.observation.time_s = static_cast<double>(m.end_ns - origin_) * 1e-9;
  in.observation.rates = std::move(r.instances);
  in.observation.parallelism = std::move(r.parallelism);
  in.instances = m.instances.size();
  // Saturated instances are named by their worker.
  in.label = [this, &m](uint32_t op, uint32_t instance) {
    for (const InstanceMetrics& x : m.instances)
      if (x.instance == instance && topology_.find_id(std::to_string(x.op)) == op)
        return trace_.worker_name(static_cast<uint32_t>(std::stoul(x.worker)));
    return fmt::format("{}-{}", topology_.names[op], instance);
  };
  return in;
}

SourceInterval ds2_interval(const RatesEpoch& e, double interval_s) {
  SourceInterval in;
  in.epoch = e.epoch;
  in.timestamp = e.timestamp;
  in.observation.time_s = static_cast<double>(e.epoch + 1) * interval_s;
  in.observation.rates = e.instances;
  in.observation.parallelism = e.parallelism;
  in.instances = e.instances.size();
  return in;
}

Ds2RatesSource::Ds2RatesSource(const std::string& path, Topology topology, double interval_s)
    : topology_(std::move(topology)), interval_s_(interval_s) {
  epochs_ = read_rates(path, topology_, &diag_);
}

std::optional<SourceInterval> Ds2RatesSource::next() {
  if (next_ >= epochs_.size()) return std::nullopt;
  return ds2_interval(epochs_[next_++], interval_s_);
}

Ds2DirectorySource::Ds2DirectorySource(std::string dir, Topology topology, double interval_s,
                                       int64_t poll_ns, int64_t idle_ns, bool follow)
    : topology_(std::move(topology)),
      watcher_(std::move(dir), topology_),
      interval_s_(interval_s),
      poll_ns_(poll_ns),
      idle_ns_(idle_ns),
      follow_(follow),
      last_new_(std::chrono::steady_clock::now()) {}

std::optional<SourceInterval> Ds2DirectorySource::next() {
  if (!follow_ && !ended_) {  // a finished directory: all of it, once
    for (RatesEpoch& e : watcher_.flush()) pending_.push_back(std::move(e));
    ended_ = true;
  }
  while (pending_.empty()) {
    if (ended_) return std::nullopt;
    if (polled_) std::this_thread::sleep_for(std::chrono::nanoseconds(poll_ns_));
    polled_ = true;
    std::vector<RatesEpoch> epochs = watcher_.poll();
    const auto now = std::chrono::steady_clock::now();
    const bool idle_over = idle_ns_ > 0 && now - last_new_ > std::chrono::nanoseconds(idle_ns_);
    if (idle_over) {
      for (RatesEpoch& e : watcher_.flush()) epochs.push_back(std::move(e));
      ended_ = true;
    }
    if (!epochs.empty()) last_new_ = std::chrono::steady_clock::now();
    for (RatesEpoch& e : epochs) pending_.push_back(std::move(e));
  }
  SourceInterval in = ds2_interval(pending_.front(), interval_s_);
  pending_.pop_front();
  return in;
}

FlinkSource::FlinkSource(std::string url, const std::string& job_id, FlinkSourceOptions options)
    : url_(std::move(url)),
      opt_(options),
      job_(fetch_flink_job(url_, job_id)),
      topology_(job_.topology),
      started_(std::chrono::steady_clock::now()) {}

namespace {

bool terminal(const std::string& state) {
  return state == "FINISHED" || state == "CANCELED" || state == "FAILED" || state == "SUSPENDED";
}

}  // namespace

std::optional<SourceInterval> FlinkSource::next() {
  while (true) {
    if (!fresh_) {
      if (reads_ >= opt_.reads) return std::nullopt;
      const auto wall = std::chrono::nanoseconds(opt_.wall_ns);
      if (opt_.wall_ns > 0 && std::chrono::steady_clock::now() - started_ >= wall)
        return std::nullopt;
      std::this_thread::sleep_for(std::chrono::nanoseconds(opt_.interval_ns));
      try {
        job_ = fetch_flink_job(url_, job_.id);
      } catch (const std::runtime_error& e) {
        if (!opt_.quiet)
          fmt::print(stderr, "snailtrail: the Flink job stopped answering ({}); stopping\n",
                     e.what());
        return std::nullopt;
      }
    }
    fresh_ = false;
    ++reads_;
    const int64_t epoch = epoch_++;
    if (terminal(job_.state) && !opt_.any_state) {
      if (!opt_.quiet)
        fmt::print(stderr, "snailtrail: Flink job {} is {}; stopping\n", job_.id, job_.state);
      return std::nullopt;
    }
    if (job_.state != "RUNNING" && !opt_.any_state) {
      if (!opt_.quiet)
        fmt::print(stderr, "snailtrail: Flink job {} is {}: epoch {} skipped\n", job_.id,
                   job_.state, epoch);
      continue;
    }
    SourceInterval in;
    in.epoch = epoch;
    in.timestamp = "now";
    in.observation.time_s =
        static_cast<double>(epoch + 1) * (static_cast<double>(opt_.interval_ns) / 1e9);
    in.observation.rates = flink_instance_rates(job_);
    in.observation.parallelism = job_.topology.parallelism;
    in.instances = in.observation.rates.size();
    return in;
  }
}

bool FlinkSource::deploy(const Action& decision, const SourceInterval&) {
  if (!opt_.rescale) return true;
  try {
    put_flink_resource_requirements(url_, job_.id,
                                    flink_resource_requirements(topology_, decision.parallelism));
  } catch (const std::runtime_error& e) {
    fmt::print(stderr, "snailtrail: warning: rescaling failed: {}\n", e.what());
  }
  return true;
}

std::string flink_resource_requirements(const Topology& job,
                                        const std::vector<uint32_t>& parallelism) {
  std::string s = "{";
  for (size_t i = 0; i < parallelism.size() && i < job.size(); ++i) {
    if (i) s += ", ";
    append_json_string(s, job.ids[i], kJsonPlain);
    s += fmt::format(": {{\"parallelism\": {{\"lowerBound\": 1, \"upperBound\": {}}}}}",
                     parallelism[i]);
  }
  return s + "}";
}

void put_flink_resource_requirements(const std::string& url, const std::string& job_id,
                                     const std::string& body) {
  httplib::Client client(url);
  client.set_connection_timeout(10);
  client.set_read_timeout(30);
  const std::string path = "/jobs/" + job_id + "/resource-requirements";
  auto res = client.Put(path, body, "application/json");
  if (!res)
    throw std::runtime_error(fmt::format("{}{}: {}", url, path, httplib::to_string(res.error())));
  if (res->status != 200 && res->status != 202)
    throw std::runtime_error(
        fmt::format("{}{}: HTTP {}: {}", url, path, res->status, res->body.substr(0, 200)));
}

}  // namespace snailtrail::scale
