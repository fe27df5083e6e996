// The styles of synthetic logs (synthetic.hpp): per style its nodes, templates and the
// script of one request, and the header its lines start with.
#include "logs/synthetic_styles.hpp"

#include <fmt/format.h>

namespace snailtrail::logs::synthetic {
namespace {

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

// HDFS (LogHub HDFS_1): a block written through a pipeline of three datanodes.
Style hdfs_style() {
  Style st;
  st.nodes = {"namenode", "datanode-1", "datanode-2", "datanode-3", "datanode-4", "datanode-5"};
  st.roles = 4;
  const std::string fsn = "dfs.FSNamesystem", dx = "dfs.DataNode$DataXceiver",
                    pr = "dfs.DataNode$PacketResponder", dn = "dfs.DataNode";
  const int alloc = st.add("BLOCK* NameSystem.allocateBlock: {path} {blk}", fsn);
  const int recv = st.add("Receiving block {blk} src: /{peer}:{port} dest: /{ip}:50010", dx);
  const int got = st.add("Received block {blk} of size {size} from /{peer}", pr);
  const int term = st.add("PacketResponder {n} for block {blk} terminating", pr);
  const int stored = st.add(
      "BLOCK* NameSystem.addStoredBlock: blockMap updated: {peer}:50010 is added to {blk} "
      "size {size}",
      fsn);
  const int verify = st.add("Verification succeeded for {blk}", "dfs.DataBlockScanner");
  const int served = st.add("{ip}:50010 Served block {blk} to /{peer}", dx);
  const int invalid =
      st.add("BLOCK* NameSystem.delete: {blk} is added to invalidSet of {peer}:50010", fsn);
  const int del = st.add("Deleting block {blk} file /mnt/hadoop/dfs/data/current/subdir{n}/{blk}",
                         "dfs.FSDataset");
  const int ask = st.add("BLOCK* ask {peer}:50010 to delete {blk}", fsn);
  const int hb = st.add("Roll Edit Log from {peer}", fsn);
  const int empty = st.add("Receiving empty packet for block {blk2}", dx);
  const int exc = st.add(
      "writeBlock {blk2} received exception java.io.IOException: Could not read "
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
  return st;
}

// Spark log4j: a task started by the driver, run on an executor.
Style spark_style() {
  Style st;
  st.nodes = {"driver", "executor-1", "executor-2", "executor-3"};
  st.roles = 2;
  const std::string ex = "executor.Executor", bm = "storage.BlockManager",
                    tb = "broadcast.TorrentBroadcast", ms = "storage.MemoryStore",
                    ts = "scheduler.TaskSetManager";
  const int start = st.add(
      "Starting task {f} in stage {stage} (TID {tid}, {host}, partition {n}, "
      "PROCESS_LOCAL, {int} bytes)",
      ts);
  const int assigned = st.add("Got assigned task {tid}", "executor.CoarseGrainedExecutorBackend");
  const int running = st.add("Running task {f} in stage {stage} (TID {tid})", ex);
  const int bcast = st.add("Started reading broadcast variable {n}", tb);
  const int stored = st.add(
      "Block broadcast_{n}_piece0 stored as bytes in memory (estimated size "
      "{f} KB, free {f} KB)",
      ms);
  const int took = st.add("Reading broadcast variable {n} took {ms} ms", tb);
  const int found = st.add("Found block rdd_{n}_{int} locally", bm);
  const int missing =
      st.add("Partition rdd_{n}_{int} not found, computing it", "spark.CacheManager");
  const int split = st.add("Input split: hdfs://{host}:9000/pjhe/test/{n}/part-{int}:{int}+{int}",
                           "rdd.HadoopRDD");
  const int done = st.add(
      "Finished task {f} in stage {stage} (TID {tid}). {int} bytes result sent "
      "to driver",
      ex);
  const int fin = st.add(
      "Finished task {f} in stage {stage} (TID {tid}) in {ms} ms on {host} "
      "({n}/{int})",
      ts);
  const int mem = st.add("MemoryStore started with capacity {f} GB", ms);
  const int acl = st.add("Changing view acls to: {user}", "spark.SecurityManager");
  const int sig = st.add("Registered signal handlers for [TERM, HUP, INT]", "util.SignalUtils");
  st.script = {{0, start, 0, 0},        {1, assigned, 1, 30},
               {1, running, 1, 10},     {1, bcast, 1, 10, 0.5},
               {1, stored, 1, 40, 0.5}, {1, took, 1, 10, 0.5},
               {1, found, 1, 300, 0.5}, {1, missing, 1, 300, 0.3},
               {1, split, 1, 50, 0.4},  {1, done, 50, 3000},
               {0, fin, 1, 30}};
  st.noise = {mem, acl, sig};
  return st;
}

// Hadoop MapReduce: a task attempt on the app master and a node manager's container.
Style hadoop_style() {
  Style st;
  st.nodes = {"appmaster", "nodemanager-1", "nodemanager-2", "nodemanager-3"};
  st.roles = 2;
  const std::string ta = "org.apache.hadoop.mapreduce.v2.app.job.impl.TaskAttemptImpl",
                    rm = "org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator",
                    tl = "org.apache.hadoop.mapred.TaskAttemptListenerImpl",
                    cm = "org.apache.hadoop.yarn.server.nodemanager.containermanager."
                         "container.ContainerImpl";
  const int tr = st.add("{attempt} TaskAttempt Transitioned from {state} to {state}", ta);
  const int asg = st.add("Assigned container {container} to {attempt}", rm);
  const int using_ = st.add(
      "TaskAttempt: [{attempt}] using containerId: [{container} on NM: "
      "[{host}:{port}]",
      ta);
  const int cst = st.add("Container {container} transitioned from {state} to {state}", cm);
  const int jvm = st.add("JVM with ID : jvm_{ts}_{int}_m_{int} asked for a task", tl);
  const int given = st.add("JVM with ID: jvm_{ts}_{int}_m_{int} given task: {attempt}", tl);
  const int prog = st.add("Progress of TaskAttempt {attempt} is : {f}", tl);
  const int ack = st.add("Done acknowledgement from {attempt}", tl);
  const int hb = st.add("Recalculating schedule, headroom=<memory:{int}, vCores:{n}>", rm);
  const int after = st.add(
      "After Scheduling: PendingReds:{n} ScheduledMaps:{n} ScheduledReds:{n} "
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
  return st;
}

// Syslog sshd and ftpd on one host: a login session.
Style syslog_style() {
  Style st;
  st.nodes = {"combo"};
  st.roles = 1;
  const int conn = st.add("connection from {ip} ({host}) at {day} {mon} {n} {clock} 2005", "ftpd");
  const int open = st.add("session opened for user {user} by (uid={n})", "sshd(pam_unix)");
  const int acc = st.add("Accepted password for {user} from {ip} port {port} ssh2", "sshd");
  const int fail = st.add(
      "authentication failure; logname= uid={n} euid={n} tty=NODEVssh ruser= "
      "rhost={ip}  user={user}",
      "sshd(pam_unix)");
  const int bad =
      st.add("Failed password for invalid user {user} from {ip} port {port} ssh2", "sshd");
  const int close = st.add("session closed for user {user}", "sshd(pam_unix)");
  const int disc = st.add("Received disconnect from {ip}: 11: Bye Bye", "sshd");
  const int unk = st.add("check pass; user unknown", "sshd(pam_unix)");
  const int cron = st.add("session opened for user {user} by (uid=0)", "crond(pam_unix)");
  const int alert = st.add("ALERT exited abnormally with [{n}]", "logrotate");
  st.script = {{0, conn, 0, 0, 0.3}, {0, fail, 1, 100, 0.3}, {0, bad, 1, 100, 0.3},
               {0, acc, 1, 200},     {0, open, 1, 20},       {0, disc, 1000, 90000},
               {0, close, 1, 20}};
  (void)cron;
  st.noise = {unk, alert};
  return st;
}

// An ISO-8601 microservice: an order through gateway, orders and payments.
Style service_style() {
  Style st;
  st.nodes = {"gateway", "orders", "payments"};
  st.roles = 3;
  const int in =
      st.add("Incoming request {req} GET /api/orders/{int} from {ip}", "c.e.gateway.RequestFilter");
  const int fwd = st.add("Forwarding {req} to orders-service", "c.e.gateway.Router");
  const int handle = st.add("Handling {req} for customer {cust}", "c.e.orders.OrderController");
  const int created = st.add("Order {order} created for request {req}", "c.e.orders.OrderService");
  const int charge = st.add("Charging order {order} amount {f} EUR", "c.e.payments.PaymentService");
  const int auth =
      st.add("Payment for order {order} authorized in {ms} ms", "c.e.payments.PaymentService");
  const int failed = st.add(
      "Payment for order {order} failed: java.net.SocketTimeoutException: "
      "Read timed out",
      "c.e.payments.PaymentService");
  const int conf = st.add("Order {order} confirmed", "c.e.orders.OrderService");
  const int done = st.add("Completed {req} status 200 in {ms} ms", "c.e.gateway.RequestFilter");
  const int health = st.add("Health check OK", "c.e.common.Health");
  const int cache =
      st.add("Cache stats: hits={int} misses={int} evictions={n}", "c.e.common.Cache");
  st.script = {{0, in, 0, 0},       {0, fwd, 1, 5},     {1, handle, 2, 20},
               {1, created, 5, 50}, {2, charge, 2, 20}, {2, failed, 3000, 5000, 0.05},
               {2, auth, 20, 400},  {1, conf, 2, 20},   {0, done, 2, 20}};
  st.noise = {health, cache};
  st.error_template = failed;
  return st;
}

}  // namespace

int Style::add(std::string text, std::string comp) {
  templates.push_back(std::move(text));
  components.push_back(std::move(comp));
  return static_cast<int>(templates.size() - 1);
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
  switch (s) {
    case LogStyle::hdfs:
      return hdfs_style();
    case LogStyle::spark:
      return spark_style();
    case LogStyle::hadoop:
      return hadoop_style();
    case LogStyle::syslog:
      return syslog_style();
    case LogStyle::service:
      return service_style();
  }
  return Style{};
}

}  // namespace snailtrail::logs::synthetic
