// Labelled synthetic logs (synthetic.hpp).
#include "logs/synthetic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <unordered_map>

namespace snailtrail::logs {
namespace {

struct Step {
  int role;            // index into the request's nodes
  int tmpl;            // template index
  int min_ms, max_ms;  // delay after the previous step
  double p = 1.0;      // probability that the step happens
};

struct Style {
  std::vector<std::string> nodes;       // file names
  std::vector<std::string> templates;   // with {var} placeholders
  std::vector<std::string> components;  // per template
  std::vector<Step> script;             // one request
  int roles = 1;                        // nodes per request: role 0 is fixed (node 0)
  std::vector<int> noise;               // templates of background lines
  int error_template = -1;              // followed by a stack trace
};

struct Line {
  int64_t ts;
  uint64_t seq;
  int tmpl;
  std::string request, thread, text;
};

void civil(int64_t days, int& y, int& m, int& d) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  y = static_cast<int>(yoe + era * 400 + (m <= 2));
}

std::string header(LogStyle style, int64_t ts, const std::string& level, const std::string& thread,
                   const std::string& comp, const std::string& node) {
  const int64_t s = ts / 1'000'000'000, ms = ts / 1'000'000 % 1000;
  int y, mo, d;
  civil(s / 86400, y, mo, d);
  const int h = static_cast<int>(s % 86400 / 3600), mi = static_cast<int>(s % 3600 / 60),
            se = static_cast<int>(s % 60);
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  switch (style) {
    case LogStyle::hdfs:
      return fmt::format("{:02}{:02}{:02} {:02}{:02}{:02} {} {} {}: ", y % 100, mo, d, h, mi, se,
                         thread, level, comp);
    case LogStyle::spark:
      return fmt::format("{:02}/{:02}/{:02} {:02}:{:02}:{:02} {} {}: ", y % 100, mo, d, h, mi, se,
                         level, comp);
    case LogStyle::hadoop:
      return fmt::format("{}-{:02}-{:02} {:02}:{:02}:{:02},{:03} {} [{}] {}: ", y, mo, d, h, mi, se,
                         ms, level, thread, comp);
    case LogStyle::syslog:
      return fmt::format("{} {:>2} {:02}:{:02}:{:02} {} {}[{}]: ", kMonths[mo - 1], d, h, mi, se,
                         node, comp, thread);
    case LogStyle::service:
      return fmt::format("{}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z {} [{}] {} - ", y, mo, d, h, mi,
                         se, ms, level, thread, comp);
  }
  return "";
}

Style make_style(LogStyle s) {
  Style st;
  auto t = [&](std::string text, std::string comp) {
    st.templates.push_back(std::move(text));
    st.components.push_back(std::move(comp));
    return static_cast<int>(st.templates.size() - 1);
  };
  switch (s) {
    case LogStyle::hdfs: {
      st.nodes = {"namenode", "datanode-1", "datanode-2", "datanode-3", "datanode-4", "datanode-5"};
      st.roles = 4;
      const std::string fsn = "dfs.FSNamesystem", dx = "dfs.DataNode$DataXceiver",
                        pr = "dfs.DataNode$PacketResponder", dn = "dfs.DataNode";
      const int alloc = t("BLOCK* NameSystem.allocateBlock: {path} {blk}", fsn);
      const int recv = t("Receiving block {blk} src: /{peer}:{port} dest: /{ip}:50010", dx);
      const int got = t("Received block {blk} of size {size} from /{peer}", pr);
      const int term = t("PacketResponder {n} for block {blk} terminating", pr);
      const int stored =
          t("BLOCK* NameSystem.addStoredBlock: blockMap updated: {peer}:50010 is added to {blk} "
            "size {size}",
            fsn);
      const int verify = t("Verification succeeded for {blk}", "dfs.DataBlockScanner");
      const int served = t("{ip}:50010 Served block {blk} to /{peer}", dx);
      const int invalid =
          t("BLOCK* NameSystem.delete: {blk} is added to invalidSet of {peer}:50010", fsn);
      const int del = t("Deleting block {blk} file /mnt/hadoop/dfs/data/current/subdir{n}/{blk}",
                        "dfs.FSDataset");
      const int ask = t("BLOCK* ask {peer}:50010 to delete {blk}", fsn);
      const int hb = t("Roll Edit Log from {peer}", fsn);
      const int empty = t("Receiving empty packet for block {blk2}", dx);
      const int exc =
          t("writeBlock {blk2} received exception java.io.IOException: Could not read "
            "from stream",
            dx);
      st.script = {{0, alloc, 0, 0},
                   {1, recv, 5, 30},
                   {2, recv, 1, 20},
                   {3, recv, 1, 20},
                   {3, got, 200, 900},
                   {3, term, 1, 10},
                   {2, got, 1, 30},
                   {2, term, 1, 10},
                   {1, got, 1, 30},
                   {1, term, 1, 10},
                   {0, stored, 1, 20},
                   {0, stored, 1, 20},
                   {0, stored, 1, 20},
                   {2, verify, 1000, 5000, 0.3},
                   {1, served, 100, 2000, 0.4},
                   {0, ask, 2000, 8000, 0.2},
                   {0, invalid, 1, 50, 0.2},
                   {1, del, 100, 900, 0.2}};
      st.noise = {hb, empty, exc};
      break;
    }
    case LogStyle::spark: {
      st.nodes = {"driver", "executor-1", "executor-2", "executor-3"};
      st.roles = 2;
      const std::string ex = "executor.Executor", bm = "storage.BlockManager",
                        tb = "broadcast.TorrentBroadcast", ms = "storage.MemoryStore",
                        ts = "scheduler.TaskSetManager";
      const int start =
          t("Starting task {f} in stage {stage} (TID {tid}, {host}, partition {n}, "
            "PROCESS_LOCAL, {int} bytes)",
            ts);
      const int assigned = t("Got assigned task {tid}", "executor.CoarseGrainedExecutorBackend");
      const int running = t("Running task {f} in stage {stage} (TID {tid})", ex);
      const int bcast = t("Started reading broadcast variable {n}", tb);
      const int stored =
          t("Block broadcast_{n}_piece0 stored as bytes in memory (estimated size "
            "{f} KB, free {f} KB)",
            ms);
      const int took = t("Reading broadcast variable {n} took {ms} ms", tb);
      const int found = t("Found block rdd_{n}_{int} locally", bm);
      const int missing =
          t("Partition rdd_{n}_{int} not found, computing it", "spark.CacheManager");
      const int split = t("Input split: hdfs://{host}:9000/pjhe/test/{n}/part-{int}:{int}+{int}",
                          "rdd.HadoopRDD");
      const int done =
          t("Finished task {f} in stage {stage} (TID {tid}). {int} bytes result sent "
            "to driver",
            ex);
      const int fin =
          t("Finished task {f} in stage {stage} (TID {tid}) in {ms} ms on {host} "
            "({n}/{int})",
            ts);
      const int mem = t("MemoryStore started with capacity {f} GB", ms);
      const int acl = t("Changing view acls to: {user}", "spark.SecurityManager");
      const int sig = t("Registered signal handlers for [TERM, HUP, INT]", "util.SignalUtils");
      st.script = {{0, start, 0, 0},        {1, assigned, 1, 30},
                   {1, running, 1, 10},     {1, bcast, 1, 10, 0.5},
                   {1, stored, 1, 40, 0.5}, {1, took, 1, 10, 0.5},
                   {1, found, 1, 300, 0.5}, {1, missing, 1, 300, 0.3},
                   {1, split, 1, 50, 0.4},  {1, done, 50, 3000},
                   {0, fin, 1, 30}};
      st.noise = {mem, acl, sig};
      break;
    }
    case LogStyle::hadoop: {
      st.nodes = {"appmaster", "nodemanager-1", "nodemanager-2", "nodemanager-3"};
      st.roles = 2;
      const std::string ta = "org.apache.hadoop.mapreduce.v2.app.job.impl.TaskAttemptImpl",
                        rm = "org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator",
                        tl = "org.apache.hadoop.mapred.TaskAttemptListenerImpl",
                        cm = "org.apache.hadoop.yarn.server.nodemanager.containermanager."
                             "container.ContainerImpl";
      const int tr = t("{attempt} TaskAttempt Transitioned from {state} to {state}", ta);
      const int asg = t("Assigned container {container} to {attempt}", rm);
      const int using_ =
          t("TaskAttempt: [{attempt}] using containerId: [{container} on NM: "
            "[{host}:{port}]",
            ta);
      const int cst = t("Container {container} transitioned from {state} to {state}", cm);
      const int jvm = t("JVM with ID : jvm_{ts}_{int}_m_{int} asked for a task", tl);
      const int given = t("JVM with ID: jvm_{ts}_{int}_m_{int} given task: {attempt}", tl);
      const int prog = t("Progress of TaskAttempt {attempt} is : {f}", tl);
      const int ack = t("Done acknowledgement from {attempt}", tl);
      const int hb = t("Recalculating schedule, headroom=<memory:{int}, vCores:{n}>", rm);
      const int after =
          t("After Scheduling: PendingReds:{n} ScheduledMaps:{n} ScheduledReds:{n} "
            "AssignedMaps:{n} AssignedReds:{n} CompletedMaps:{n} CompletedReds:{n} "
            "ContAlloc:{n} ContRel:{n} HostLocal:{n} RackLocal:{n}",
            rm);
      st.script = {{0, tr, 0, 0},
                   {0, tr, 1, 20},
                   {0, asg, 100, 900},
                   {0, using_, 1, 20},
                   {1, cst, 10, 100},
                   {1, cst, 100, 900},
                   {0, tr, 1, 30},
                   {0, jvm, 100, 900},
                   {0, given, 1, 5},
                   {0, prog, 500, 3000},
                   {0, prog, 500, 3000, 0.7},
                   {0, ack, 100, 900},
                   {0, tr, 1, 20},
                   {1, cst, 10, 200},
                   {0, tr, 1, 30}};
      st.noise = {hb, after};
      break;
    }
    case LogStyle::syslog: {
      st.nodes = {"combo"};
      st.roles = 1;
      const int conn = t("connection from {ip} ({host}) at {day} {mon} {n} {clock} 2005", "ftpd");
      const int open = t("session opened for user {user} by (uid={n})", "sshd(pam_unix)");
      const int acc = t("Accepted password for {user} from {ip} port {port} ssh2", "sshd");
      const int fail =
          t("authentication failure; logname= uid={n} euid={n} tty=NODEVssh ruser= "
            "rhost={ip}  user={user}",
            "sshd(pam_unix)");
      const int bad =
          t("Failed password for invalid user {user} from {ip} port {port} ssh2", "sshd");
      const int close = t("session closed for user {user}", "sshd(pam_unix)");
      const int disc = t("Received disconnect from {ip}: 11: Bye Bye", "sshd");
      const int unk = t("check pass; user unknown", "sshd(pam_unix)");
      const int cron = t("session opened for user {user} by (uid=0)", "crond(pam_unix)");
      const int alert = t("ALERT exited abnormally with [{n}]", "logrotate");
      st.script = {{0, conn, 0, 0, 0.3}, {0, fail, 1, 100, 0.3}, {0, bad, 1, 100, 0.3},
                   {0, acc, 1, 200},     {0, open, 1, 20},       {0, disc, 1000, 90000},
                   {0, close, 1, 20}};
      (void)cron;
      st.noise = {unk, alert};
      break;
    }
    case LogStyle::service: {
      st.nodes = {"gateway", "orders", "payments"};
      st.roles = 3;
      const int in =
          t("Incoming request {req} GET /api/orders/{int} from {ip}", "c.e.gateway.RequestFilter");
      const int fwd = t("Forwarding {req} to orders-service", "c.e.gateway.Router");
      const int handle = t("Handling {req} for customer {cust}", "c.e.orders.OrderController");
      const int created = t("Order {order} created for request {req}", "c.e.orders.OrderService");
      const int charge = t("Charging order {order} amount {f} EUR", "c.e.payments.PaymentService");
      const int auth =
          t("Payment for order {order} authorized in {ms} ms", "c.e.payments.PaymentService");
      const int failed =
          t("Payment for order {order} failed: java.net.SocketTimeoutException: "
            "Read timed out",
            "c.e.payments.PaymentService");
      const int conf = t("Order {order} confirmed", "c.e.orders.OrderService");
      const int done = t("Completed {req} status 200 in {ms} ms", "c.e.gateway.RequestFilter");
      const int health = t("Health check OK", "c.e.common.Health");
      const int cache = t("Cache stats: hits={int} misses={int} evictions={n}", "c.e.common.Cache");
      st.script = {{0, in, 0, 0},       {0, fwd, 1, 5},     {1, handle, 2, 20},
                   {1, created, 5, 50}, {2, charge, 2, 20}, {2, failed, 3000, 5000, 0.05},
                   {2, auth, 20, 400},  {1, conf, 2, 20},   {0, done, 2, 20}};
      st.noise = {health, cache};
      st.error_template = failed;
      break;
    }
  }
  return st;
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
  const Style st = make_style(style);
  std::mt19937_64 rng(seed);
  auto uni = [&](int64_t a, int64_t b) {
    return std::uniform_int_distribution<int64_t>(a, b)(rng);
  };
  const std::vector<std::string> users = {"root",  "guest",     "test",    "oracle",
                                          "admin", "webmaster", "ftpuser", "nobody"};
  const std::vector<std::string> states = {"NEW",     "UNASSIGNED", "ASSIGNED", "RUNNING",
                                           "SUCCESS", "LOCALIZING", "DONE",     "KILLED"};
  const std::vector<std::string> days = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  const std::vector<std::string> months = {"Jun", "Jul", "Aug"};
  std::vector<std::string> ips;
  for (size_t k = 0; k < st.nodes.size(); ++k)
    ips.push_back(fmt::format("10.250.{}.{}", 10 + k, 100 + 3 * k));
  std::vector<std::vector<Line>> out(st.nodes.size());
  uint64_t seq = 0;
  const int64_t t0 = 1'445'144'423'000'000'000;  // 2015-10-18
  const int64_t span_ns = static_cast<int64_t>(requests) * 40'000'000 + 1'000'000'000;
  auto hex = [&](int digits) {
    std::string s;
    for (int i = 0; i < digits; ++i) s.push_back("0123456789abcdef"[uni(0, 15)]);
    return s;
  };
  auto render = [&](const std::string& tmpl,
                    const std::unordered_map<std::string, std::string>& ctx, size_t node) {
    std::string s;
    for (size_t i = 0; i < tmpl.size();) {
      if (tmpl[i] != '{') {
        s.push_back(tmpl[i++]);
        continue;
      }
      const size_t close = tmpl.find('}', i);
      const std::string var = tmpl.substr(i + 1, close - i - 1);
      i = close + 1;
      if (auto it = ctx.find(var); it != ctx.end()) {
        s += it->second;
      } else if (var == "ip") {
        s += ips[node];
      } else if (var == "peer") {
        s += ips[static_cast<size_t>(uni(0, static_cast<int64_t>(ips.size()) - 1))];
      } else if (var == "port") {
        s += std::to_string(uni(32768, 60999));
      } else if (var == "n") {
        s += std::to_string(uni(0, 9));
      } else if (var == "int") {
        s += std::to_string(uni(1, 99999));
      } else if (var == "ms") {
        s += std::to_string(uni(1, 2500));
      } else if (var == "f") {
        s += fmt::format("{}.{}", uni(0, 999), uni(0, 9));
      } else if (var == "user") {
        s += users[static_cast<size_t>(uni(0, static_cast<int64_t>(users.size()) - 1))];
      } else if (var == "state") {
        s += states[static_cast<size_t>(uni(0, static_cast<int64_t>(states.size()) - 1))];
      } else if (var == "host") {
        s += fmt::format("mesos-slave-{:02}", uni(1, 30));
      } else if (var == "day") {
        s += days[static_cast<size_t>(uni(0, 6))];
      } else if (var == "mon") {
        s += months[static_cast<size_t>(uni(0, 2))];
      } else if (var == "clock") {
        s += fmt::format("{:02}:{:02}:{:02}", uni(0, 23), uni(0, 59), uni(0, 59));
      } else if (var == "blk2") {
        s += fmt::format("blk_{}", static_cast<int64_t>(rng()));
      } else if (var == "ts") {
        s += "1445144423722";
      } else {
        s += "?";
      }
    }
    return s;
  };
  auto emit = [&](size_t node, int64_t ts, int tmpl, const std::string& request,
                  const std::string& thread,
                  const std::unordered_map<std::string, std::string>& ctx) {
    // A line belongs to its request if it names it (a line without the identifier
    // cannot be told apart from other requests' lines by its text).
    const std::string& text = st.templates[static_cast<size_t>(tmpl)];
    bool named = false;
    for (const char* id : {"{blk}", "{req}", "{order}", "{attempt}", "{container}", "{tid}"})
      named |= text.find(id) != std::string::npos;
    out[node].push_back(
        {ts, seq++, tmpl, named ? request : std::string(), thread, render(text, ctx, node)});
  };
  std::unordered_map<std::string, std::string> ctx;
  for (size_t r = 0; r < requests; ++r) {
    ctx.clear();
    std::string id;
    switch (style) {
      case LogStyle::hdfs:
        id = fmt::format("blk_{}", static_cast<int64_t>(rng()));
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
    // The request's nodes: role 0 on node 0 (or any node for one-node styles), the other
    // roles on distinct other nodes.
    std::vector<size_t> nodes = {0};
    if (st.roles > 1) {
      std::vector<size_t> others;
      for (size_t k = 1; k < st.nodes.size(); ++k) others.push_back(k);
      std::shuffle(others.begin(), others.end(), rng);
      if (style == LogStyle::service) std::sort(others.begin(), others.end());
      for (int k = 1; k < st.roles; ++k)
        nodes.push_back(others[static_cast<size_t>(k - 1) % others.size()]);
    }
    std::vector<std::string> threads(st.nodes.size());
    for (size_t k = 0; k < threads.size(); ++k)
      threads[k] = style == LogStyle::hdfs     ? std::to_string(uni(100, 40000))
                   : style == LogStyle::syslog ? id
                   : style == LogStyle::hadoop
                       ? (k == 0 ? "AsyncDispatcher event handler"
                                 : "ContainersLauncher #" + std::to_string(uni(0, 9)))
                       : fmt::format("http-nio-8080-exec-{}", uni(1, 8));
    int64_t ts = t0 + uni(0, span_ns);
    for (const Step& s : st.script) {
      if (s.p < 1.0 && std::uniform_real_distribution<double>(0, 1)(rng) >= s.p) continue;
      ts += uni(s.min_ms, s.max_ms) * 1'000'000 + uni(0, 999'999);
      const size_t node = nodes[static_cast<size_t>(s.role)];
      emit(node, ts, s.tmpl, id, threads[node], ctx);
      if (s.tmpl == st.error_template) break;  // a failed request ends here
    }
  }
  // Background lines, about one per four requests.
  for (size_t k = 0; k < requests / 4 + 1; ++k) {
    const int tmpl =
        st.noise[static_cast<size_t>(uni(0, static_cast<int64_t>(st.noise.size()) - 1))];
    const size_t node = static_cast<size_t>(uni(0, static_cast<int64_t>(st.nodes.size()) - 1));
    ctx.clear();
    emit(node, t0 + uni(0, span_ns), tmpl, "",
         style == LogStyle::hdfs ? std::to_string(uni(100, 40000)) : std::string("main"), ctx);
  }
  SyntheticLog log;
  for (const std::string& tmpl : st.templates) {
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
  for (size_t n = 0; n < out.size(); ++n) {
    std::sort(out[n].begin(), out[n].end(), [](const Line& a, const Line& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq;
    });
    std::string bytes;
    std::vector<int> tmpl;
    std::vector<std::string> req;
    for (const Line& l : out[n]) {
      const std::string& comp = st.components[static_cast<size_t>(l.tmpl)];
      bytes += header(style, l.ts, l.tmpl == st.error_template ? "ERROR" : "INFO", l.thread, comp,
                      st.nodes[n]);
      bytes += l.text;
      bytes += '\n';
      tmpl.push_back(l.tmpl);
      req.push_back(l.request);
      if (stack_traces && l.tmpl == st.error_template) {
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
    log.lines += tmpl.size();
    log.files.emplace_back(st.nodes[n] + ".log", std::move(bytes));
    log.line_template.push_back(std::move(tmpl));
    log.line_request.push_back(std::move(req));
  }
  return log;
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
