// Labelled synthetic logs (synthetic.hpp): the generator. The styles (nodes, templates,
// the script of one request, line headers) are in synthetic_styles.cpp.
#include "logs/synthetic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "logs/synthetic_styles.hpp"

namespace snailtrail::logs {
namespace {

using synthetic::Step;
using synthetic::Style;
using Context = std::unordered_map<std::string, std::string>;  // a request's variables

struct Line {
  int64_t ts;
  uint64_t seq;
  int tmpl;
  std::string request, thread, text;
};

const std::vector<std::string> kUsers = {"root",  "guest",     "test",    "oracle",
                                         "admin", "webmaster", "ftpuser", "nobody"};
const std::vector<std::string> kStates = {"NEW",     "UNASSIGNED", "ASSIGNED", "RUNNING",
                                          "SUCCESS", "LOCALIZING", "DONE",     "KILLED"};
const std::vector<std::string> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
const std::vector<std::string> kMonths = {"Jun", "Jul", "Aug"};

// The requests' and background lines of one style, per node, from one random stream: the
// order of the draws is the logs' identity (a seed gives the same bytes every time).
class Generator {
 public:
  Generator(LogStyle style, size_t requests, uint64_t seed)
      : style_(style),
        st_(synthetic::make_style(style)),
        rng_(seed),
        out_(st_.nodes.size()),
        span_ns_(static_cast<int64_t>(requests) * 40'000'000 + 1'000'000'000) {
    for (size_t k = 0; k < st_.nodes.size(); ++k)
      ips_.push_back(fmt::format("10.250.{}.{}", 10 + k, 100 + 3 * k));
  }

  void add_request(size_t r);
  void add_background_line();
  SyntheticLog finish(bool stack_traces);

 private:
  int64_t uni(int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng_); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uni(0, static_cast<int64_t>(v.size()) - 1))];
  }
  std::string hex(int digits) {
    std::string s;
    for (int i = 0; i < digits; ++i) s.push_back("0123456789abcdef"[uni(0, 15)]);
    return s;
  }
  std::string request_id(size_t r, Context& ctx);
  std::vector<size_t> request_nodes();
  std::vector<std::string> request_threads(const std::string& id);
  std::string variable(const std::string& var, size_t node);
  std::string render(const std::string& tmpl, const Context& ctx, size_t node);
  void emit(size_t node, int64_t ts, int tmpl, const std::string& request,
            const std::string& thread, const Context& ctx);
  std::string file_bytes(size_t n, bool stack_traces, std::vector<int>& tmpl,
                         std::vector<std::string>& req);

  static constexpr int64_t kT0 = 1'445'144'423'000'000'000;  // 2015-10-18
  const LogStyle style_;
  const Style st_;
  std::mt19937_64 rng_;
  std::vector<std::string> ips_;  // per node
  std::vector<std::vector<Line>> out_;
  uint64_t seq_ = 0;
  const int64_t span_ns_;
  Context ctx_;
};

// The request's identifier and the variables its lines share.
std::string Generator::request_id(size_t r, Context& ctx) {
  std::string id;
  switch (style_) {
    case LogStyle::hdfs:
      id = fmt::format("blk_{}", static_cast<int64_t>(rng_()));
      ctx["blk"] = id;
      ctx["size"] = std::to_string(uni(1'000'000, 67'108'864));
      ctx["path"] =
          fmt::format("/user/root/rand/_temporary/_task_200811092030_0001_m_{:06}_0/part-{:05}",
                      r % 1000000, r % 100000);
      break;
    case LogStyle::spark:
      ctx["tid"] = std::to_string(r);
      ctx["stage"] = fmt::format("{}.0", r / 50);
      id = "TID " + ctx["tid"];
      break;
    case LogStyle::hadoop:
      id = fmt::format("attempt_1445144423722_0020_m_{:06}_0", r);
      ctx["attempt"] = id;
      ctx["container"] = fmt::format("container_1445144423722_0020_01_{:06}", r + 2);
      break;
    case LogStyle::syslog:
      id = std::to_string(uni(10000, 32000));
      break;
    case LogStyle::service:
      id = "req-" + hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12);
      ctx["req"] = id;
      ctx["order"] = fmt::format("ORD-{}", 1'000'000 + r);
      ctx["cust"] = fmt::format("C{}", uni(10000, 99999));
      break;
  }
  return id;
}

// The request's nodes: role 0 on node 0 (or any node for one-node styles), the other
// roles on distinct other nodes.
std::vector<size_t> Generator::request_nodes() {
  std::vector<size_t> nodes = {0};
  if (st_.roles > 1) {
    std::vector<size_t> others;
    for (size_t k = 1; k < st_.nodes.size(); ++k) others.push_back(k);
    std::shuffle(others.begin(), others.end(), rng_);
    if (style_ == LogStyle::service) std::sort(others.begin(), others.end());
    for (int k = 1; k < st_.roles; ++k)
      nodes.push_back(others[static_cast<size_t>(k - 1) % others.size()]);
  }
  return nodes;
}

// The thread that serves the request on each node.
std::vector<std::string> Generator::request_threads(const std::string& id) {
  std::vector<std::string> threads(st_.nodes.size());
  for (size_t k = 0; k < threads.size(); ++k)
    threads[k] = style_ == LogStyle::hdfs     ? std::to_string(uni(100, 40000))
                 : style_ == LogStyle::syslog ? id
                 : style_ == LogStyle::hadoop
                     ? (k == 0 ? "AsyncDispatcher event handler"
                               : "ContainersLauncher #" + std::to_string(uni(0, 9)))
                     : fmt::format("http-nio-8080-exec-{}", uni(1, 8));
  return threads;
}

void Generator::add_request(size_t r) {
  ctx_.clear();
  const std::string id = request_id(r, ctx_);
  const std::vector<size_t> nodes = request_nodes();
  const std::vector<std::string> threads = request_threads(id);
  int64_t ts = kT0 + uni(0, span_ns_);
  for (const Step& s : st_.script) {
    if (s.p < 1.0 && std::uniform_real_distribution<double>(0, 1)(rng_) >= s.p) continue;
    ts += uni(s.min_ms, s.max_ms) * 1'000'000 + uni(0, 999'999);
    const size_t node = nodes[static_cast<size_t>(s.role)];
    emit(node, ts, s.tmpl, id, threads[node], ctx_);
    if (s.tmpl == st_.error_template) break;  // a failed request ends here
  }
}

// A line of no request, at any time on any node.
void Generator::add_background_line() {
  const int tmpl = pick(st_.noise);
  const size_t node = static_cast<size_t>(uni(0, static_cast<int64_t>(st_.nodes.size()) - 1));
  ctx_.clear();
  emit(node, kT0 + uni(0, span_ns_), tmpl, "",
       style_ == LogStyle::hdfs ? std::to_string(uni(100, 40000)) : std::string("main"), ctx_);
}

// A variable not set by the request: a fresh random value of its kind.
std::string Generator::variable(const std::string& var, size_t node) {
  if (var == "ip") return ips_[node];
  if (var == "peer") return pick(ips_);
  if (var == "port") return std::to_string(uni(32768, 60999));
  if (var == "n") return std::to_string(uni(0, 9));
  if (var == "int") return std::to_string(uni(1, 99999));
  if (var == "ms") return std::to_string(uni(1, 2500));
  if (var == "f") return fmt::format("{}.{}", uni(0, 999), uni(0, 9));
  if (var == "user") return pick(kUsers);
  if (var == "state") return pick(kStates);
  if (var == "host") return fmt::format("mesos-slave-{:02}", uni(1, 30));
  if (var == "day") return pick(kDays);
  if (var == "mon") return pick(kMonths);
  if (var == "clock") return fmt::format("{:02}:{:02}:{:02}", uni(0, 23), uni(0, 59), uni(0, 59));
  if (var == "blk2") return fmt::format("blk_{}", static_cast<int64_t>(rng_()));
  if (var == "ts") return "1445144423722";
  return "?";
}

// A template with its {var}s replaced: the request's values, else fresh ones.
std::string Generator::render(const std::string& tmpl, const Context& ctx, size_t node) {
  std::string s;
  for (size_t i = 0; i < tmpl.size();) {
    if (tmpl[i] != '{') {
      s.push_back(tmpl[i++]);
      continue;
    }
    const size_t close = tmpl.find('}', i);
    const std::string var = tmpl.substr(i + 1, close - i - 1);
    i = close + 1;
    if (auto it = ctx.find(var); it != ctx.end())
      s += it->second;
    else
      s += variable(var, node);
  }
  return s;
}

void Generator::emit(size_t node, int64_t ts, int tmpl, const std::string& request,
                     const std::string& thread, const Context& ctx) {
  // A line belongs to its request if it names it (a line without the identifier
  // cannot be told apart from other requests' lines by its text).
  const std::string& text = st_.templates[static_cast<size_t>(tmpl)];
  bool named = false;
  for (const char* id : {"{blk}", "{req}", "{order}", "{attempt}", "{container}", "{tid}"})
    named |= text.find(id) != std::string::npos;
  out_[node].push_back(
      {ts, seq_++, tmpl, named ? request : std::string(), thread, render(text, ctx, node)});
}

// Node n's file: its lines by time, each with its header; an error line is followed by
// a stack trace. Appends each line's true template and request.
std::string Generator::file_bytes(size_t n, bool stack_traces, std::vector<int>& tmpl,
                                  std::vector<std::string>& req) {
  std::sort(out_[n].begin(), out_[n].end(), [](const Line& a, const Line& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq;
  });
  std::string bytes;
  for (const Line& l : out_[n]) {
    const std::string& comp = st_.components[static_cast<size_t>(l.tmpl)];
    bytes += synthetic::header(style_, l.ts, l.tmpl == st_.error_template ? "ERROR" : "INFO",
                               l.thread, comp, st_.nodes[n]);
    bytes += l.text;
    bytes += '\n';
    tmpl.push_back(l.tmpl);
    req.push_back(l.request);
    if (stack_traces && l.tmpl == st_.error_template) {
      for (const char* frame :
           {"java.net.SocketTimeoutException: Read timed out",
            "\tat java.base/java.net.SocketInputStream.socketRead0(Native Method)",
            "\tat com.example.payments.GatewayClient.charge(GatewayClient.java:88)",
            "\t... 42 more"}) {
        bytes += frame;
        bytes += '\n';
        tmpl.push_back(-1);
        req.push_back(l.request);
      }
    }
  }
  return bytes;
}

SyntheticLog Generator::finish(bool stack_traces) {
  SyntheticLog log;
  // The true templates: variables as <*>.
  for (const std::string& tmpl : st_.templates) {
    std::string t;
    for (size_t i = 0; i < tmpl.size();) {
      if (tmpl[i] == '{') {
        t += "<*>";
        i = tmpl.find('}', i) + 1;
      } else {
        t.push_back(tmpl[i++]);
      }
    }
    log.templates.push_back(std::move(t));
  }
  for (size_t n = 0; n < out_.size(); ++n) {
    std::vector<int> tmpl;
    std::vector<std::string> req;
    std::string bytes = file_bytes(n, stack_traces, tmpl, req);
    log.lines += tmpl.size();
    log.files.emplace_back(st_.nodes[n] + ".log", std::move(bytes));
    log.line_template.push_back(std::move(tmpl));
    log.line_request.push_back(std::move(req));
  }
  return log;
}

}  // namespace

LogStyle parse_log_style(const std::string& s) {
  if (s == "hdfs") return LogStyle::hdfs;
  if (s == "spark") return LogStyle::spark;
  if (s == "hadoop") return LogStyle::hadoop;
  if (s == "syslog") return LogStyle::syslog;
  if (s == "service") return LogStyle::service;
  throw std::invalid_argument("unknown log style '" + s +
                              "' (hdfs, spark, hadoop, syslog, service)");
}

SyntheticLog generate_log(LogStyle style, size_t requests, uint64_t seed, bool stack_traces) {
  Generator g(style, requests, seed);
  for (size_t r = 0; r < requests; ++r) g.add_request(r);
  // Background lines, about one per four requests.
  for (size_t k = 0; k < requests / 4 + 1; ++k) g.add_background_line();
  return g.finish(stack_traces);
}

double grouping_accuracy(const std::vector<int>& truth, const std::vector<uint32_t>& found) {
  if (truth.empty()) return 1.0;
  std::unordered_map<uint32_t, std::vector<size_t>> by_found;
  std::unordered_map<int, size_t> truth_size;
  for (size_t i = 0; i < truth.size(); ++i) {
    by_found[found[i]].push_back(i);
    ++truth_size[truth[i]];
  }
  size_t correct = 0;
  for (const auto& [c, lines] : by_found) {
    const int t = truth[lines[0]];
    bool pure = true;
    for (size_t i : lines) pure &= truth[i] == t;
    if (pure && truth_size[t] == lines.size()) correct += lines.size();
  }
  return static_cast<double>(correct) / static_cast<double>(truth.size());
}

}  // namespace snailtrail::logs
