// Plain logs (src/logs, docs/LOGS.md): header formats, timestamps, Drain templates against
// hand-checked templates and an oracle of labelled logs (grouping accuracy), request
// flows against the generator's truth, bad input, and the logs importer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "importers/importer.hpp"
#include "importers/logs/logs_importer.hpp"
#include "logs/drain.hpp"
#include "logs/flows.hpp"
#include "logs/log_format.hpp"
#include "logs/log_set.hpp"
#include "logs/synthetic.hpp"
#include "pag/timeline.hpp"
#include "process_util.hpp"

namespace snailtrail::logs::test_logs {
namespace {

TEST(LogFormat, MatchesLogpaiPatternsByHand) {
  const LogFormat f =
      LogFormat::compile(R"(<Date> <Time> <Level> \[<Process>\] <Component>: <Content>)");
  EXPECT_FALSE(f.uses_std_regex());
  std::vector<std::string_view> fields;
  ASSERT_TRUE(f.match("2015-10-18 18:01:47,978 INFO [main] org.apache.App: Created: x: y", fields));
  ASSERT_EQ(fields.size(), 6u);
  EXPECT_EQ(fields[0], "2015-10-18");
  EXPECT_EQ(fields[1], "18:01:47,978");
  EXPECT_EQ(fields[2], "INFO");
  EXPECT_EQ(fields[3], "main");
  EXPECT_EQ(fields[4], "org.apache.App");
  EXPECT_EQ(fields[5], "Created: x: y");  // the first ": " after the component ends it
  // Runs of spaces match any whitespace; the thread may hold spaces ("lazy" fields).
  ASSERT_TRUE(f.match("2015-10-18  18:01:47,978 WARN [IPC Server handler 3] C: m", fields));
  EXPECT_EQ(fields[3], "IPC Server handler 3");
  EXPECT_EQ(fields[5], "m");
  EXPECT_FALSE(f.match("2015-10-18 18:01:47,978 INFO main org.apache.App: x", fields));
  EXPECT_FALSE(f.match("", fields));
  EXPECT_EQ(f.thread_field(), 3);
  EXPECT_EQ(f.time_fields(), (std::vector<int>{0, 1}));

  // A pattern with regex syntax goes to std::regex, with the same field semantics.
  const LogFormat r =
      LogFormat::compile(R"(<Month> <Day> <Time> <Host> <Proc>(\[<Pid>\])?: <Content>)");
  EXPECT_TRUE(r.uses_std_regex());
  ASSERT_TRUE(r.match("Jun 14 15:16:01 combo sshd[19939]: check pass; user unknown", fields));
  EXPECT_EQ(fields[3], "combo");
  EXPECT_EQ(fields[4], "sshd");
  EXPECT_EQ(fields[5], "19939");
  EXPECT_EQ(fields[6], "check pass; user unknown");
  ASSERT_TRUE(r.match("Jun 14 15:16:01 combo logrotate: ALERT exited abnormally", fields));
  EXPECT_EQ(fields[5], "");
  // Long lines: the regex sees the first 2 KiB, <Content> runs to the end.
  const std::string long_line = "Jun 14 15:16:01 combo sshd[1]: " + std::string(100000, 'y');
  ASSERT_TRUE(r.match(long_line, fields));
  EXPECT_EQ(fields[6].size(), 100000u);
  EXPECT_THROW(LogFormat::compile("<Date> <Time>"), std::invalid_argument);  // no <Content>
  EXPECT_THROW(LogFormat::compile("<Date> (<Content>"), std::invalid_argument);
  EXPECT_THROW(format_from_option("nonsense"), std::invalid_argument);
}

TEST(LogFormat, PresetsMatchTheirExamplesAndDetectionPicksThem) {
  std::vector<std::string_view> fields;
  std::string buf;
  HeaderMatch m;
  for (const FormatPreset& p : format_presets()) {
    const LogFormat f = format_from_option(p.name);
    EXPECT_TRUE(match_header(f, p.example, true, fields, buf, m)) << p.name;
    EXPECT_TRUE(m.ts.has_value()) << p.name;
    const std::vector<std::string_view> lines(5, p.example);
    const auto d = detect_format(lines);
    ASSERT_TRUE(d.has_value()) << p.name;
    EXPECT_EQ(d->name(), p.name);
  }
  EXPECT_FALSE(detect_format({"hello world", "no header here"}).has_value());
}

TEST(LogFormat, TimestampsAgainstHandComputedEpochs) {
  // Epoch seconds computed independently (Python calendar.timegm).
  constexpr int64_t s = 1'000'000'000;
  EXPECT_EQ(parse_timestamp("2015-10-18 18:01:47,978"), 1445191307 * s + 978'000'000);
  EXPECT_EQ(parse_timestamp("2015-10-18T18:01:47.978123Z"), 1445191307 * s + 978'123'000);
  EXPECT_EQ(parse_timestamp("2015-10-18T19:01:47+01:00"), 1445191307 * s);
  EXPECT_EQ(parse_timestamp("081109 203615"), 1226262975 * s);
  EXPECT_EQ(parse_timestamp("17/06/09 20:10:40"), 1497039040 * s);
  EXPECT_EQ(parse_timestamp("Jun 14 15:16:01"), 14224561 * s);
  EXPECT_EQ(parse_timestamp("2024-03-01 11:00:00"), 1709290800 * s);
  EXPECT_EQ(parse_timestamp("1709290800"), 1709290800 * s);
  EXPECT_EQ(parse_timestamp("00:00:01.5"), 1 * s + 500'000'000);
  EXPECT_FALSE(parse_timestamp("INFO"));
  EXPECT_FALSE(parse_timestamp("2015-13-18 18:01:47"));
  EXPECT_FALSE(parse_timestamp(""));
  EXPECT_FALSE(parse_timestamp("hello 12"));
  // Outside 1900-2149 (differences of any two times fit in int64 ns).
  EXPECT_FALSE(parse_timestamp("9999-01-01 00:00:00"));
  EXPECT_FALSE(parse_timestamp("9999999999"));
  EXPECT_FALSE(parse_timestamp("9999999999999"));
  EXPECT_EQ(parse_timestamp("1900-01-01 00:00:00"), -2208988800 * s);
}

std::vector<std::string> templates_of(const std::vector<std::string>& lines) {
  Drain d;
  std::vector<uint32_t> ids;
  for (const std::string& l : lines) ids.push_back(d.add(l));
  std::vector<std::string> out;
  for (uint32_t id : ids) out.push_back(d.template_text(id));
  return out;
}

TEST(Drain, HandCheckedTemplatesOnHdfsLines) {
  const std::vector<std::string> lines = {
      "Receiving block blk_-1608999687919862906 src: /10.250.19.102:54106 dest: "
      "/10.250.19.102:50010",
      "Receiving block blk_7503483334202473044 src: /10.251.215.16:55695 dest: "
      "/10.251.215.16:50010",
      "PacketResponder 1 for block blk_38865049064139660 terminating",
      "PacketResponder 0 for block blk_-6952295868487656571 terminating",
      "BLOCK* NameSystem.allocateBlock: /user/root/rand/_temporary/part-00001. "
      "blk_-1608999687919862906",
      "Verification succeeded for blk_-4980916519894289629",
      "Deleting block blk_1 file /mnt/hadoop/dfs/data/current/subdir19/blk_1",
      "Received block blk_3587508140051953248 of size 67108864 from /10.251.42.84",
      "Received block blk_5402003568334525940 of size 3543 from /10.251.214.67"};
  const std::vector<std::string> t = templates_of(lines);
  EXPECT_EQ(t[0], "Receiving block <*> src: <*> dest: <*>");
  EXPECT_EQ(t[1], t[0]);
  EXPECT_EQ(t[2], "PacketResponder <*> for block <*> terminating");
  EXPECT_EQ(t[3], t[2]);
  EXPECT_EQ(t[4], "BLOCK* NameSystem.allocateBlock: <*>. <*>");
  EXPECT_EQ(t[5], "Verification succeeded for <*>");
  EXPECT_EQ(t[6], "Deleting block <*> file <*>");
  EXPECT_EQ(t[7], "Received block <*> of size <*> from <*>");
  EXPECT_EQ(t[8], t[7]);
}

TEST(Drain, MasksKeepPunctuationAndKeysAndMergeWordVariables) {
  const std::vector<std::string> t = templates_of({
      "Block broadcast_0 stored (estimated size=2.1 KB, free 530.0 KB)",
      "Block broadcast_1 stored (estimated size=9.4 KB, free 530.0 KB)",
      "session opened for user root by (uid=0)",
      "session opened for user guest by (uid=500)",
      "connect to 0x7f3a2c00ff10 ok",
      "uuid 123e4567-e89b-12d3-a456-426614174000 seen at /var/lib/x/y",
      "Registered signal handlers for [TERM, HUP, INT]",
  });
  // A value with its unit is one variable (test_logs_units.cpp): "size=2.1 KB," -> "size=<*>,".
  EXPECT_EQ(t[0], "Block <*> stored (estimated size=<*>, free <*>)");
  EXPECT_EQ(t[1], t[0]);
  // A word variable: the templates differ in one constant of five -> merged.
  EXPECT_EQ(t[2], "session opened for user <*> by (uid=<*>)");
  EXPECT_EQ(t[3], t[2]);
  EXPECT_EQ(t[4], "connect to <*> ok");
  EXPECT_EQ(t[5], "uuid <*> seen at <*>");
  EXPECT_EQ(t[6], "Registered signal handlers for [TERM, HUP, INT]");
  // Parameters: the text in the <*>'s place.
  Drain d;
  d.add("session opened for user root by (uid=0)");
  const uint32_t c = d.add("session opened for user guest by (uid=500)");
  std::vector<Token> tokens;
  std::vector<std::string_view> params;
  tokenize("session opened for user guest by (uid=500)", tokens, 256);
  d.params(c, tokens, params);
  EXPECT_EQ(params, (std::vector<std::string_view>{"guest", "500"}));
}

TEST(Drain, DifferentTemplatesStaySeparate) {
  const std::vector<std::string> t = templates_of({
      "Finished task 1.0 in stage 3.0 (TID 7). 2087 bytes result sent to driver",
      "Finished task 1.0 in stage 3.0 (TID 7) in 45 ms on host-1 (1/4)", "Health check OK",
      "Health check FAILED",  // 2 of 3 constants equal: merged at 0.5, as Drain would
  });
  EXPECT_NE(t[0], t[1]);
  EXPECT_EQ(t[2], "Health check <*>");
}

// Mines every record of a labelled log and scores it against the truth.
double accuracy_on(const SyntheticLog& log, size_t* templates_found = nullptr) {
  const LogSet set = parse_logs(log.files, LogOptions{});
  std::vector<int> truth;
  std::vector<uint32_t> found;
  for (size_t f = 0; f < set.files.size(); ++f)
    for (size_t l = 0; l < set.files[f].lines.size(); ++l) {
      const LineInfo& li = set.files[f].lines[l];
      const int t = log.line_template[f][l];
      if (t < 0) {
        EXPECT_EQ(li.kind, LineKind::joined) << f << ":" << l + 1;
        continue;
      }
      EXPECT_EQ(li.kind, LineKind::record) << f << ":" << l + 1;
      truth.push_back(t);
      found.push_back(set.records[li.record].cluster);
    }
  if (templates_found) *templates_found = set.drain.cluster_count();
  return grouping_accuracy(truth, found);
}

TEST(Drain, GroupingAccuracyOracleOnLabelledLogsOfEveryStyle) {
  for (const char* style : {"hdfs", "spark", "hadoop", "syslog", "service"}) {
    const SyntheticLog log = generate_log(parse_log_style(style), 1500, 7);
    size_t found = 0;
    const double acc = accuracy_on(log, &found);
    std::printf("grouping accuracy %-8s %zu lines, %zu true templates, %zu found: %.4f\n", style,
                log.lines, log.templates.size(), found, acc);
    EXPECT_GE(acc, 0.98) << style;
  }
}

TEST(Drain, GroupingAccuracyMetricItself) {
  // Hand-checked: lines 0,1 share truth 0 and found 5: correct; truth 1 split in two: wrong.
  EXPECT_DOUBLE_EQ(grouping_accuracy({0, 0, 1, 1}, {5, 5, 6, 7}), 0.5);
  EXPECT_DOUBLE_EQ(grouping_accuracy({0, 0, 1, 1}, {5, 5, 5, 5}), 0.0);
  EXPECT_DOUBLE_EQ(grouping_accuracy({0, 1, 2}, {9, 8, 7}), 1.0);
}

// Flows against the generator's truth: the same partition of records into requests.
void expect_flows_exact(const SyntheticLog& log, const FlowOptions& fo, size_t requests) {
  const LogSet set = parse_logs(log.files, LogOptions{});
  const FlowSet fs = build_flows(set, fo);
  std::map<std::string, std::set<std::pair<uint32_t, uint32_t>>> truth;
  for (size_t f = 0; f < log.files.size(); ++f)
    for (size_t l = 0; l < log.line_request[f].size(); ++l)
      if (!log.line_request[f][l].empty() && log.line_template[f][l] >= 0)
        truth[log.line_request[f][l]].insert(
            {static_cast<uint32_t>(f), static_cast<uint32_t>(l + 1)});
  ASSERT_EQ(truth.size(), requests);
  std::set<std::set<std::pair<uint32_t, uint32_t>>> want, got;
  for (auto& [id, lines] : truth) want.insert(lines);
  for (const Flow& fl : fs.flows) {
    std::set<std::pair<uint32_t, uint32_t>> lines;
    for (uint32_t r : fl.records) lines.insert({set.records[r].file, set.records[r].line});
    got.insert(lines);
    // Ordered by time.
    for (size_t k = 1; k < fl.records.size(); ++k)
      EXPECT_LE(set.records[fl.records[k - 1]].ts, set.records[fl.records[k]].ts);
  }
  EXPECT_EQ(fs.flows.size(), requests);
  EXPECT_TRUE(got == want) << "flows differ from the truth";
}

TEST(Flows, InferredIdentifiersReconstructHdfsBlockFlowsExactly) {
  // Small logs too: there a node's address is on fewer records than the hub threshold,
  // and only the conflict rule keeps it from joining blocks.
  for (size_t n : {10, 40, 150}) expect_flows_exact(generate_log(LogStyle::hdfs, n, 11), {}, n);
  const SyntheticLog log = generate_log(LogStyle::hdfs, 400, 11);
  expect_flows_exact(log, FlowOptions{}, 400);
  const LogSet set = parse_logs(log.files, LogOptions{});
  const FlowSet fs = build_flows(set, FlowOptions{});
  EXPECT_EQ(fs.id_source, "auto");
  // Every flow starts at the namenode's allocateBlock and spans 4 nodes.
  for (const Flow& f : fs.flows) {
    EXPECT_EQ(set.nodes[set.records[f.records.front()].node], "namenode");
    EXPECT_EQ(f.node_count, 4u);
    EXPECT_TRUE(f.id.starts_with("blk_")) << f.id;
  }
}

TEST(Flows, IdentifiersLinkedAcrossTemplatesInAServiceLog) {
  // Request ids on the gateway and orders, order ids on orders and payments: one line
  // holding both links them.
  const SyntheticLog log = generate_log(LogStyle::service, 300, 5);
  expect_flows_exact(log, FlowOptions{}, 300);
}

// A log of unique request ids has a flow every few lines: the flows and their records
// are counted before they are allocated, so they hold no doubling's spare room.
TEST(Flows, FlowsAndTheirRecordsAllocatedAtTheirSize) {
  const SyntheticLog log = generate_log(LogStyle::service, 300, 5);
  const LogSet set = parse_logs(log.files, LogOptions{});
  const FlowSet fs = build_flows(set, FlowOptions{});
  ASSERT_EQ(fs.flows.size(), 300u);
  EXPECT_EQ(fs.flows.capacity(), fs.flows.size());
  EXPECT_EQ(fs.record_ids.capacity(), fs.record_ids.size());
}

TEST(Flows, HadoopAttemptsInferredAndSparkTasksByRegex) {
  expect_flows_exact(generate_log(LogStyle::hadoop, 200, 3), FlowOptions{}, 200);
  FlowOptions fo;
  fo.id_regex = R"(\(TID (\d+)\)|task (\d+)$)";
  // The regex's first group only: "Got assigned task N" has its id in group 2, so use a
  // regex with one group that covers both forms.
  fo.id_regex = R"((?:TID |assigned task )(\d+))";
  expect_flows_exact(generate_log(LogStyle::spark, 200, 3), fo, 200);
}

TEST(Flows, StatisticsByHand) {
  // Two requests over two nodes; times in whole seconds.
  const std::string a =
      "2024-03-01 10:00:00,000 INFO [t1] svc.A: start req-aaa111\n"
      "2024-03-01 10:00:01,000 INFO [t1] svc.A: send req-aaa111\n"
      "2024-03-01 10:00:05,000 INFO [t2] svc.A: start req-bbb222\n"
      "2024-03-01 10:00:05,500 INFO [t2] svc.A: send req-bbb222\n";
  const std::string b =
      "2024-03-01 10:00:03,000 INFO [w] svc.B: got req-aaa111\n"
      "2024-03-01 10:00:09,500 INFO [w] svc.B: got req-bbb222\n";
  const LogSet set = parse_logs({{"a.log", a}, {"b.log", b}}, LogOptions{});
  ASSERT_EQ(set.records.size(), 6u);
  const FlowSet fs = build_flows(set, FlowOptions{});
  EXPECT_EQ(fs.id_source, "auto");
  ASSERT_EQ(fs.flows.size(), 2u);
  EXPECT_EQ(fs.flows[0].id, "req-aaa111");
  EXPECT_EQ(fs.flows[0].latency(), 3'000'000'000);
  EXPECT_EQ(fs.flows[1].latency(), 4'500'000'000);
  ASSERT_EQ(fs.signatures.size(), 1u);  // both: start, send, got
  EXPECT_EQ(fs.signatures[0].count, 2u);
  ASSERT_EQ(fs.edges.size(), 2u);
  // start -> send: 1 s + 0.5 s; send -> got (cross-node): 2 s + 4 s.
  const FlowEdge& e0 = fs.edges[0].cross_node ? fs.edges[1] : fs.edges[0];
  const FlowEdge& e1 = fs.edges[0].cross_node ? fs.edges[0] : fs.edges[1];
  EXPECT_EQ(e0.total_ns, 1'500'000'000);
  EXPECT_EQ(e0.cross_node, 0u);
  EXPECT_EQ(e1.total_ns, 6'000'000'000);
  EXPECT_EQ(e1.cross_node, 2u);
  EXPECT_EQ(e1.max_ns, 4'000'000'000);

  // The importer: one processing activity per same-node step, one message per node change.
  const Trace tr = importers::logs_to_trace(set, fs, "mem");
  size_t starts = 0, sends = 0;
  for (const Event& e : tr.events) {
    starts += e.kind == EventKind::start && e.activity == ActivityType::processing;
    sends += e.kind == EventKind::send;
  }
  EXPECT_EQ(starts, 2u);
  EXPECT_EQ(sends, 2u);
  const Pag pag = build_pag(tr);
  EXPECT_EQ(pag.messages.size(), 2u);
}

TEST(Flows, ThreadFallbackWithoutIdentifiers) {
  const std::string a =
      "2024-03-01 10:00:00,000 INFO [pool-1] svc.A: begin work\n"
      "2024-03-01 10:00:01,000 INFO [pool-2] svc.A: begin work\n"
      "2024-03-01 10:00:02,000 INFO [pool-1] svc.A: end work\n"
      "2024-03-01 10:00:04,000 INFO [pool-2] svc.A: end work\n";
  const LogSet set = parse_logs({{"a.log", a}}, LogOptions{});
  const FlowSet fs = build_flows(set, FlowOptions{});
  EXPECT_EQ(fs.id_source, "thread");
  ASSERT_EQ(fs.flows.size(), 2u);
  EXPECT_EQ(fs.flows[0].id, "a/pool-1");
  EXPECT_EQ(fs.flows[0].latency(), 2'000'000'000);
  EXPECT_EQ(fs.flows[1].latency(), 3'000'000'000);
}

uint64_t diag(const LogSet& s, const std::string& k) {
  for (const auto& [key, v] : s.diagnostics)
    if (key == k) return v;
  return 0;
}

TEST(LogSet, BadInputIsCountedNeverFatal) {
  std::string junk = "2024-03-01 10:00:00,000 INFO [t] svc.A: start req-aaa111\n";
  junk += std::string("\x00\x01\x02\xff\xfe binary\x03\x04\x05", 16) + "\n";  // binary
  junk += "\tat com.example.Foo.bar(Foo.java:12)\n";                          // stack trace
  junk += "Caused by: java.io.IOException: boom\n";
  junk +=
      "2024-03-01 10:00:01,000 INFO [t] svc.A: caf\xc3\xa9 \xe9t\xe9 req-aaa111\n";  // bad UTF-8
  junk += "2024-03-01 10:00:02,000 INFO [t] svc.A: " + std::string(200000, 'x') + "\n";
  junk += "Jun 14 15:16:01 combo sshd[1]: another format entirely\n";
  junk += "2024-03-01 09:00:00,000 INFO [t] svc.A: back in time\r\n";
  junk += "2024-03-01 10:00:03,000 INFO [t] svc.A: cut at the end wi";
  LogOptions o;
  o.max_line_bytes = 4096;
  const LogSet s = parse_logs({{"junk.log", junk}}, o);
  EXPECT_EQ(s.files[0].format, "log4j-thread");
  EXPECT_EQ(diag(s, "logs.binary_lines"), 1u);
  EXPECT_EQ(diag(s, "logs.joined_lines"), 2u);
  EXPECT_EQ(diag(s, "logs.invalid_utf8_lines"), 1u);
  EXPECT_EQ(diag(s, "logs.long_lines_cut"), 1u);
  EXPECT_EQ(diag(s, "logs.other_format_lines"), 1u);
  EXPECT_GE(diag(s, "logs.time_backwards"), 1u);
  EXPECT_EQ(s.records.size(), 6u);
  EXPECT_EQ(s.records[0].extra_lines, 2u);
  EXPECT_EQ(s.content(s.records.size() - 1), "cut at the end wi");
  EXPECT_EQ(s.content(4), "back in time");  // '\r' stripped
  // No header anywhere: every line a record, times are line numbers.
  const LogSet plain = parse_logs({{"p", "hello 1\nhello 2\n\nbye\n"}}, LogOptions{});
  EXPECT_EQ(plain.files[0].format, "none");
  EXPECT_FALSE(plain.files[0].has_time);
  EXPECT_EQ(plain.records.size(), 3u);
  EXPECT_EQ(plain.drain.template_text(plain.records[0].cluster), "hello <*>");
  // Empty input.
  EXPECT_TRUE(parse_logs({{"e", ""}}, LogOptions{}).records.empty());
  // Flows over all of it do not fail either.
  (void)build_flows(s, FlowOptions{});
}

TEST(LogSet, GivenFormatKeepsLinesWhoseTimeDoesNotParse) {
  LogOptions o;
  o.format = "<Time> <Content>";
  const LogSet s = parse_logs({{"x", "12:00:00 a b\nsoon c d\n12:00:02 e f\n"}}, o);
  ASSERT_EQ(s.records.size(), 3u);
  EXPECT_EQ(s.content(1), "c d");
  EXPECT_EQ(s.records[1].ts, s.records[0].ts);
  EXPECT_EQ(diag(s, "logs.bad_timestamps"), 1u);
}

class LogsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("snailtrail_logs_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(LogsCli, TemplatesJsonlHasOneObjectPerInputLineAndAnalyzeRunsOnLogs) {
  const SyntheticLog log = generate_log(LogStyle::service, 60, 2);
  std::filesystem::create_directories(dir_ / "logs");
  for (const auto& [name, bytes] : log.files) std::ofstream(dir_ / "logs" / name) << bytes;
  const auto orders = (dir_ / "logs" / "orders.log").string();
  {
    testing::Process p({"logs", "templates", orders, "--format", "jsonl"}, dir_ / "out",
                       dir_ / "err");
    ASSERT_EQ(p.wait(), 0) << testing::slurp(dir_ / "err");
    const std::string out = testing::slurp(dir_ / "out");
    EXPECT_EQ(static_cast<size_t>(std::count(out.begin(), out.end(), '\n')),
              log.line_template[1].size());
    EXPECT_NE(out.find("{\"line\": 1, \"template_id\": 0, \"template\": \"Handling <*> for "
                       "customer <*>\", \"params\": [\"req-"),
              std::string::npos)
        << out.substr(0, 300);
  }
  {
    testing::Process p({"logs", "flows", (dir_ / "logs" / "gateway.log").string(), orders,
                        (dir_ / "logs" / "payments.log").string(), "--format", "json"},
                       dir_ / "out", dir_ / "err");
    ASSERT_EQ(p.wait(), 0) << testing::slurp(dir_ / "err");
    const std::string out = testing::slurp(dir_ / "out");
    EXPECT_NE(out.find("\"requests\": 60,"), std::string::npos) << out.substr(0, 300);
  }
  {
    testing::Process p({"analyze", (dir_ / "logs").string(), "--importer", "logs", "--window", "1h",
                        "--format", "jsonl"},
                       dir_ / "out", dir_ / "err");
    ASSERT_EQ(p.wait(), 0) << testing::slurp(dir_ / "err");
    const std::string out = testing::slurp(dir_ / "out");
    EXPECT_NE(out.find("\"operator\""), std::string::npos) << out.substr(0, 300);
  }
  {
    // The table, whose worker names ("payments/http-nio-8080-exec-4 (lane 1)") are wider
    // than its top-k column; the directory recognised without --importer.
    testing::Process p({"analyze", (dir_ / "logs").string(), "--window", "whole"}, dir_ / "out",
                       dir_ / "err");
    ASSERT_EQ(p.wait(), 0) << testing::slurp(dir_ / "err");
    const std::string out = testing::slurp(dir_ / "out");
    EXPECT_NE(out.find("TOP 10 CRITICAL ACTIVITIES"), std::string::npos);
    EXPECT_NE(out.find("OPERATOR"), std::string::npos) << out;
  }
  {
    testing::Process p({"logs", "flows", (dir_ / "nope.log").string()}, dir_ / "out", dir_ / "err");
    EXPECT_EQ(p.wait(), 1);
    EXPECT_NE(testing::slurp(dir_ / "err").find("nope.log"), std::string::npos);
  }
}

}  // namespace
}  // namespace snailtrail::logs::test_logs
