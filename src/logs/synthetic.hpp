// Labelled synthetic logs for tests, benchmarks and `snailtrail logs generate`: several
// nodes' logs in the styles real systems write (HDFS block logs, Spark and Hadoop log4j,
// syslog sshd, an ISO-8601 microservice with stack traces), with the true template of
// every line and the true request it belongs to.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snailtrail::logs {

enum class LogStyle { hdfs, spark, hadoop, syslog, service };
// "hdfs", "spark", "hadoop", "syslog", "service"; throws std::invalid_argument.
LogStyle parse_log_style(const std::string& s);

struct SyntheticLog {
  std::vector<std::pair<std::string, std::string>> files;  // (name, bytes)
  std::vector<std::string> templates;                      // true templates, variables as <*>
  // Per file, per line: the true template (-1: a continuation line joined to the record
  // before it) and the true request whose identifier the line names ("" = none).
  std::vector<std::vector<int>> line_template;
  std::vector<std::vector<std::string>> line_request;
  size_t lines = 0;
};

// About `requests` requests (plus background lines without a request), reproducible from
// `seed`. With stack_traces, some service errors carry a multi-line Java stack trace.
SyntheticLog generate_log(LogStyle style, size_t requests, uint64_t seed, bool stack_traces = true);

// Grouping accuracy (the log-parsing metric): a line is correct iff the set of lines
// sharing its found template equals the set sharing its true template.
double grouping_accuracy(const std::vector<int>& truth, const std::vector<uint32_t>& found);

}  // namespace snailtrail::logs
