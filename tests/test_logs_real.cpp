// Plain logs in the shapes real systems write (issue 34): the loghub datasets' headers
// (OpenStack, Zookeeper, Android, Windows CBS, Proxifier, HealthApp, Apache, HDFS),
// request ids that are never addresses or times, sampled logs, --id on the whole line,
// --node-field, --mask, human durations, and the indexed Drain against a linear scan.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <unistd.h>

#include "logs/drain.hpp"
#include "logs/flows.hpp"
#include "logs/log_format.hpp"
#include "logs/log_set.hpp"
#include "output/logs_writers.hpp"
#include "process_util.hpp"

namespace snailtrail::logs::test_logs_real {
namespace {

constexpr int64_t kS = 1'000'000'000;

LogSet parse_one(const std::string& name, const std::string& bytes, LogOptions o = {}) {
  return parse_logs({{name, bytes}}, o);
}

TEST(RealLogs, LoghubHeadersAreDetectedWithTheirFields) {
  struct Case {
    const char* preset;
    std::string lines;
    const char* content;  // of the first line
  };
  const std::vector<Case> cases = {
      {"openstack",
       "nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO "
       "nova.osapi_compute.wsgi.server [req-38101a0b-2096-447d-96ea-a692162415ae "
       "113d3a99c3da401fbd62cc2caa5b96d2 54fadb412c4e40cdbaed9335e4c35a9e - - -] 10.11.10.1 "
       "\"GET /v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1\" status: 200 len: "
       "1893 time: 0.2477829\n"
       "nova-compute.log.1.2017-05-16_13:55:31 2017-05-16 00:00:04.500 2931 INFO "
       "nova.compute.manager [req-3ea4052c-895d-4b64-9e2d-04d64c4d94ab - - - - -] [instance: "
       "b9000564-fe1a-409b-b8cc-1e88b294cd1d] VM Started (Lifecycle Event)\n",
       "10.11.10.1 \"GET /v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1\" "
       "status: 200 len: 1893 time: 0.2477829"},
      {"zookeeper",
       "2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:"
       "FastLeaderElection@774] - Notification time out: 3200\n"
       "2015-07-29 19:04:12,394 - WARN  [SendWorker:188978561024:QuorumCnxManager$SendWorker@"
       "679] - Interrupted while waiting for message on queue\n",
       "Notification time out: 3200"},
      {"android",
       "03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app "
       "wtoken = AppWindowToken{9f4ef63 token=Token{a64f992}}\n"
       "03-17 16:13:38.819  1702  8671 D PowerManagerService: acquire lock=233570404, "
       "flags=0x1, tag=\"View Lock\", name=com.android.systemui, ws=null, uid=10037, pid=2227\n",
       "printFreezingDisplayLogsopening app wtoken = AppWindowToken{9f4ef63 token=Token{a64f992}}"},
      {"windows-cbs",
       "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 "
       "with Core: C:\\Windows\\winsxs\\amd64\\cbscore.dll\n"
       "2016-09-28 04:30:31, Info                  CSI    00000001@2016/9/27:20:30:31.455 "
       "WcpInitialize (wcp.dll version 0.0.0.6) called (stack @0x7fed806eb5d)\n",
       "Loaded Servicing Stack v6.1.7601.23505 with Core: C:\\Windows\\winsxs\\amd64\\cbscore.dll"},
      {"proxifier",
       "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy "
       "proxy.cse.cuhk.edu.hk:5070 HTTPS\n"
       "[10.30 16:49:07] chrome.exe - proxy.cse.cuhk.edu.hk:5070 close, 0 bytes sent, 0 bytes "
       "received, lifetime <1 sec\n",
       "proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS"},
      {"healthapp",
       "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579\n"
       "20171223-22:15:29:615|Step_LSC|30002312|onExtend:1514038530000 14 0 4\n",
       "onStandStepChanged 3579"},
      {"apache",
       "[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok "
       "/etc/httpd/conf/workers2.properties\n"
       "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6\n",
       "workerEnv.init() ok /etc/httpd/conf/workers2.properties"},
  };
  const std::map<std::string, int64_t> first_ts = {
      {"openstack", 1494892800 * kS + 8'000'000},
      {"zookeeper", 1438191704 * kS + 747'000'000},
      {"android", 6538418 * kS + 811'000'000},
      {"windows-cbs", 1475037030 * kS},
      {"proxifier", 26153346 * kS},
      {"healthapp", 1514067329 * kS + 606'000'000},
      {"apache", 1133671664 * kS},
  };
  for (const Case& c : cases) {
    const LogSet set = parse_one("node", c.lines);
    ASSERT_EQ(set.files[0].format, c.preset) << c.lines;
    ASSERT_EQ(set.records.size(), 2u) << c.preset;
    EXPECT_EQ(set.content(0), c.content) << c.preset;
    EXPECT_EQ(set.records[0].ts, first_ts.at(c.preset)) << c.preset;
  }
  // Windows CBS 2016-09-28 04:30:30 by hand: 17072 days since 1970 + 16230 s.
  EXPECT_EQ(1475037030, 17072 * 86400 + 4 * 3600 + 30 * 60 + 30);
}

TEST(RealLogs, ZookeeperThreadAndLoghubFormatWithSeveralTimeFields) {
  const LogSet set =
      parse_one("zk",
                "2015-07-29 17:41:44,747 - INFO  [NIOServerCxn.Factory:0.0.0.0/0.0.0.0:2181:"
                "NIOServerCnxnFactory@197] - Accepted socket connection from /10.10.34.11:40061\n");
  ASSERT_EQ(set.files[0].format, "zookeeper");
  EXPECT_EQ(set.threads[set.records[0].thread].second, "NIOServerCxn.Factory");
  // BGL with loghub's own format string: <Timestamp>, <Date> and <Time> are no one time
  // together; the epoch field alone is.
  LogOptions o;
  o.format =
      "<Label> <Timestamp> <Date> <Node> <Time> <NodeRepeat> <Type> <Component> <Level> <Content>";
  const LogSet bgl =
      parse_one("bgl",
                "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 "
                "R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected\n",
                o);
  ASSERT_EQ(bgl.records.size(), 1u);
  EXPECT_EQ(bgl.records[0].ts, 1117838570 * kS);
  EXPECT_EQ(bgl.nodes[bgl.records[0].node], "R02-M1-N0-C:J12-U11");
  EXPECT_TRUE(bgl.diagnostics.empty());
}

TEST(RealLogs, RequestIdsAreNeverAddressesTimesOrNumbersWithSeparators) {
  for (const char* no : {"/10.251.42.84", "10.251.42.84:50010", "/10.251.42.84:50010", "2015-08-07",
                         "17:41:44,747", "2015-08-07T10:00:00Z", "proxy.cse.cuhk.edu.hk:5070",
                         "node-7:8042", "0.2477829", "6.1.7601.23505", "12", "2015.06.03"})
    EXPECT_FALSE(id_like(no)) << no;
  for (const char* yes : {"blk_-1608999687919862906", "blk_38865049064139660",
                          "req-38101a0b-2096-447d-96ea-a692162415ae", "0x14ed93111f20027",
                          "attempt_1445144423722_0020_m_000000_0", "1234567", "-1608999687"})
    EXPECT_TRUE(id_like(yes)) << yes;
}

// HDFS as loghub samples it: 2 000 lines drawn from millions, so a block is on one line
// while the DataNodes' addresses recur on many.
std::string sampled_hdfs(int lines, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out;
  for (int i = 0; i < lines; ++i) {
    const uint64_t blk = rng() >> 4;
    const std::string dn =
        "10.251." + std::to_string(rng() % 6 + 30) + "." + std::to_string(rng() % 4 + 80);
    const std::string head = "081109 2036" + std::to_string(10 + i % 50) + " " +
                             std::to_string(100 + rng() % 900) + " INFO ";
    switch (i % 3) {
      case 0:
        out += head + "dfs.DataNode$DataXceiver: Receiving block blk_" + std::to_string(blk) +
               " src: /" + dn + ":50010 dest: /" + dn + ":50010\n";
        break;
      case 1:
        out += head +
               "dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap updated: " + dn +
               ":50010 is added to blk_" + std::to_string(blk) + " size 67108864\n";
        break;
      default:
        out += head + "dfs.DataNode$PacketResponder: Received block blk_" + std::to_string(blk) +
               " of size 67108864 from /" + dn + "\n";
    }
  }
  return out;
}

TEST(RealLogs, SampledHdfsIsSaidSoAndItsIdsAreBlocksNotAddresses) {
  const LogSet set = parse_one("hdfs", sampled_hdfs(2000, 3));
  ASSERT_EQ(set.files[0].format, "hdfs");
  const FlowSet fs = build_flows(set, {});
  EXPECT_TRUE(fs.sampled);
  EXPECT_EQ(fs.id_source, "shape");
  EXPECT_EQ(fs.id_shape, "blk_");
  EXPECT_EQ(fs.flows.size(), 2000u);
  for (const Flow& f : fs.flows) ASSERT_TRUE(f.id.starts_with("blk_")) << f.id;
  EXPECT_GT(fs.id_values, 1900u);
  EXPECT_LT(fs.id_values_repeating * 20, fs.id_values);
}

TEST(RealLogs, ZookeeperSessionsAreTheIdsNotDates) {
  // Sessions opened and expired; the content holds dates and client addresses too.
  std::string log;
  std::mt19937_64 rng(5);
  for (int s = 0; s < 120; ++s) {
    char sid[32];
    std::snprintf(sid, sizeof sid, "0x14ed93111f2%04x", s);
    const std::string client =
        "/10.10.34." + std::to_string(11 + s % 3) + ":" + std::to_string(40000 + rng() % 20000);
    const std::string t = "2015-08-07 07:" + std::to_string(10 + s % 50) + ":0" +
                          std::to_string(s % 10) + ",1" + std::to_string(s % 90 + 10);
    log += t + " - INFO  [CommitProcessor:1:ZooKeeperServer@595] - Established session " + sid +
           " with negotiated timeout 10000 for client " + client + "\n";
    log += t +
           " - INFO  [ProcessThread(sid:1 cport:-1)::PrepRequestProcessor@476] - Processed "
           "session termination for sessionid: " +
           sid + " on 2015-08-07\n";
    log += t +
           " - INFO  [NIOServerCxn.Factory:0.0.0.0/0.0.0.0:2181:NIOServerCnxn@1001] - "
           "Closed socket connection for client " +
           client + " which had sessionid " + sid + "\n";
  }
  const LogSet set = parse_one("zk", log);
  ASSERT_EQ(set.files[0].format, "zookeeper");
  const FlowSet fs = build_flows(set, {});
  EXPECT_EQ(fs.id_source, "auto");
  ASSERT_EQ(fs.flows.size(), 120u);
  for (const Flow& f : fs.flows) {
    EXPECT_TRUE(f.id.starts_with("0x14ed")) << f.id;
    EXPECT_EQ(f.records.size(), 3u) << f.id;
  }
}

TEST(RealLogs, IdRegexSearchesTheHeaderAndNodeFieldNamesNodes) {
  // OpenStack: the request id sits in the bracketed header field, not in the message.
  std::string log;
  for (int r = 0; r < 40; ++r) {
    char req[64];
    std::snprintf(req, sizeof req, "req-%08x-2096-447d-96ea-a692162415ae", 0x38100000 + r);
    const std::string ms = std::to_string(100 + r);
    log += "nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:0" + std::to_string(r % 10) + "." +
           ms + " 25746 INFO nova.osapi_compute.wsgi.server [" + req +
           " 113d3a99c3da401fbd62cc2caa5b96d2 - - -] 10.11.10.1 \"GET /v2/servers/detail "
           "HTTP/1.1\" status: 200 len: 1893 time: 0.2477829\n";
    log += "nova-compute.log.1.2017-05-16_13:55:31 2017-05-16 00:00:0" + std::to_string(r % 10) +
           "." + std::to_string(500 + r) + " 2931 INFO nova.compute.manager [" + req +
           " - - - - -] VM Started (Lifecycle Event)\n";
  }
  LogOptions o;
  o.node_field = "Component";
  const LogSet set = parse_one("openstack", log, o);
  ASSERT_EQ(set.files[0].format, "openstack");
  FlowOptions fo;
  fo.id_regex = "req-[0-9a-f-]+";
  const FlowSet fs = build_flows(set, fo);
  ASSERT_EQ(fs.flows.size(), 40u);
  for (const Flow& f : fs.flows) {
    EXPECT_EQ(f.records.size(), 2u);
    EXPECT_EQ(f.node_count, 2u);
  }
  EXPECT_EQ(set.nodes.size(), 3u);  // the file's name, unused, and the two components
  EXPECT_EQ(set.nodes[set.records[0].node], "nova.osapi_compute.wsgi.server");
  EXPECT_EQ(set.nodes[set.records[1].node], "nova.compute.manager");
}

TEST(RealLogs, DurationsInHumanUnits) {
  EXPECT_EQ(output::log_duration(134698000000000, true), "37.4 h");
  EXPECT_EQ(output::log_duration(1'200'000'000, true), "1.2 s");
  EXPECT_EQ(output::log_duration(270'000'000'000, true), "4.5 min");
  EXPECT_EQ(output::log_duration(287'842'000, true), "288 ms");
  EXPECT_EQ(output::log_duration(12'345, true), "12.3 µs");
  EXPECT_EQ(output::log_duration(850, true), "850 ns");
  EXPECT_EQ(output::log_duration(0, true), "0 ns");
  EXPECT_EQ(output::log_duration(17, false), "17 lines");
}

TEST(RealLogs, MasksBuiltInAndGiven) {
  Drain d;
  const uint32_t a = d.add("Loaded C:\\Windows\\servicing\\CbsApi.dll");
  EXPECT_EQ(d.template_text(a), "Loaded <*>");
  DrainOptions o;
  o.masks = {"^(alpha|beta)-host$", "sz[0-9a-z]+"};
  Drain m(o);
  const uint32_t b = m.add("connected to alpha-host (szk1)");
  EXPECT_EQ(m.template_text(b), "connected to <*> (<*>)");
  EXPECT_EQ(m.add("connected to beta-host (szq)"), b);
  Drain plain;
  EXPECT_EQ(plain.template_text(plain.add("connected to alpha-host (szk1)")),
            "connected to alpha-host (<*>)");
  o.masks = {"("};
  EXPECT_THROW(Drain{o}, std::invalid_argument);
}

// The reference Drain of the two tests below: the documented similarity over every
// cluster of the message's length (its leaf), as a linear scan over templates kept as one
// std::string per token. Returns the cluster the message joins (generalising it) or opens.
uint32_t reference_drain(std::vector<std::vector<std::string>>& ref,
                         std::map<size_t, std::vector<uint32_t>>& leaf,
                         const std::vector<Token>& toks) {
  int64_t best = -1;
  double best_sim = -1;
  size_t best_params = 0;
  for (uint32_t c : leaf[toks.size()]) {
    size_t equal = 0, both = 0, params = 0;
    for (size_t i = 0; i < toks.size(); ++i) {
      if (ref[c][i] == "<*>")
        ++params, both += toks[i].var;
      else if (masked(toks[i]) == ref[c][i])
        ++equal;
    }
    const size_t den = toks.size() - both;
    const double sim = den == 0 ? 1.0 : double(equal) / double(den);
    if (sim > best_sim || (sim == best_sim && params > best_params))
      best = c, best_sim = sim, best_params = params;
  }
  if (best >= 0 && best_sim >= 0.5) {
    const auto want = static_cast<uint32_t>(best);
    for (size_t i = 0; i < toks.size(); ++i)
      if (ref[want][i] != masked(toks[i])) ref[want][i] = "<*>";
    return want;
  }
  const auto want = static_cast<uint32_t>(ref.size());
  ref.emplace_back();
  for (const Token& t : toks) ref.back().push_back(masked(t));
  leaf[toks.size()].push_back(want);
  return want;
}

// The leaf index must not change a single assignment: a plain Drain on messages that all
// share their first depth-2 tokens (so one leaf per length) against the linear scan.
TEST(RealLogs, IndexedDrainEqualsLinearScanOnMostlyUniqueTokens) {
  std::mt19937_64 rng(11);
  std::vector<std::string> words = {"open", "close", "read", "write", "alpha", "beta"};
  for (int i = 0; i < 3000; ++i)
    words.push_back("w" + std::string(1, char('a' + i % 26)) +
                    std::string(1, char('a' + i / 26 % 26)) +
                    std::string(1, char('a' + i / 676 % 26)));
  std::map<size_t, std::vector<uint32_t>> leaf;  // length -> clusters
  std::vector<std::vector<std::string>> ref;
  Drain d;
  std::vector<Token> toks;
  for (int n = 0; n < 4000; ++n) {
    std::string msg = "evt x";
    const size_t len = 3 + rng() % 4;
    for (size_t k = 0; k < len; ++k) {
      const uint64_t r = rng() % 10;
      msg += " " + (r < 4   ? words[rng() % 6]
                    : r < 5 ? std::to_string(rng() % 1000)
                            : words[6 + rng() % (words.size() - 6)]);
    }
    const uint32_t got = d.add(msg);
    // Reference: the documented similarity over every cluster of the leaf.
    tokenize(msg, toks, 256);
    const uint32_t want = reference_drain(ref, leaf, toks);
    ASSERT_EQ(got, want) << "message " << n << ": " << msg;
  }
  EXPECT_GT(d.cluster_count(), 200u);  // many clusters per leaf: the index was used
}

// The miner keeps template tokens as views into one text (8 bytes a token), generalised
// in place to the shared "<*>": every template's text, token by token, must stay what a
// reference that keeps a std::string per token has, through masked tokens with kept
// punctuation ("(size=<*>),"), literal "<*>" tokens and generalisations of constants.
TEST(RealLogs, CompactTemplateTokensEqualReferenceStrings) {
  std::mt19937_64 rng(34);
  const std::vector<std::string> pieces = {"open", "close", "<*>", "(size=", "key=", "a", "bb"};
  std::vector<std::vector<std::string>> ref;  // per cluster: its tokens
  std::map<size_t, std::vector<uint32_t>> leaf;
  Drain d;
  std::vector<Token> toks;
  for (int n = 0; n < 3000; ++n) {
    std::string msg = "op x";  // the tree routes by length only, as the reference
    const size_t len = 2 + rng() % 5;
    for (size_t k = 0; k < len; ++k) {
      const uint64_t r = rng() % 8;
      const std::string& p = pieces[rng() % pieces.size()];
      msg += " " + (r < 3   ? p
                    : r < 5 ? p + std::to_string(rng() % 100) + (r == 3 ? ")," : "")
                    : r < 6 ? std::to_string(rng() % 5000)
                            : "w" + std::to_string(rng() % 40) + "x");
    }
    tokenize(msg, toks, 256);
    const uint32_t want = reference_drain(ref, leaf, toks);
    ASSERT_EQ(d.add(msg), want) << "message " << n << ": " << msg;
    ASSERT_EQ(d.token_count(want), ref[want].size());
    for (size_t i = 0; i < ref[want].size(); ++i)
      ASSERT_EQ(d.token(want, i), ref[want][i]) << "message " << n << ", token " << i;
  }
  ASSERT_EQ(d.cluster_count(), ref.size());
  size_t generalised = 0;
  for (uint32_t c = 0; c < ref.size(); ++c) {
    std::string text;
    for (const std::string& t : ref[c]) text += (text.empty() ? "" : " ") + t;
    EXPECT_EQ(d.template_text(c), text) << "cluster " << c;
    generalised += d.size(c) > 1;
  }
  EXPECT_GT(ref.size(), 50u);   // many templates
  EXPECT_GT(generalised, 20u);  // and many that absorbed other messages
}

// The miner keeps each template as one run of bytes in 1 MiB blocks (varint lengths, a
// flag bit for generalised positions) and indexes lone clusters in the table's slot:
// every assignment and every template, token by token, must stay what the reference that
// keeps a std::string per token has, through tokens of 1 to 3 length bytes (63/64 and
// 8191/8192 characters), templates larger than a block, many blocks, literal and masked
// <*>, constants shared by many clusters (lists) and unique ones (lone clusters), and adds
// after the index is released.
TEST(RealLogs, TemplateBlocksEqualReferenceStringsOnRandomTokens) {
  std::mt19937_64 rng(1334);
  const std::vector<std::string> pool = {"get", "put", "a", "bb", "ok", "<*>", "id", "zz"};
  auto word = [&](size_t n) {
    std::string w;
    for (size_t i = 0; i < n; ++i) w.push_back(char('a' + rng() % 26));
    return w;
  };
  std::vector<std::vector<std::string>> ref;  // per cluster: its tokens
  std::map<size_t, std::vector<uint32_t>> leaf;
  Drain d;
  std::vector<Token> toks;
  size_t stored = 0;  // characters of the templates as created
  for (int n = 0; n < 3000; ++n) {
    if (n == 2600) d.release_index();
    std::string msg = "op x";  // the tree routes by length only, as the reference
    const size_t len = 2 + rng() % 6;
    for (size_t k = 0; k < len; ++k) {
      const uint64_t r = rng() % 100;
      msg += " ";
      if (r < 50) {
        msg += pool[rng() % pool.size()];
      } else if (r < 75) {
        msg += word(1 + rng() % 12);
      } else if (r < 85) {
        msg += "(size=" + std::to_string(rng() % 100) + "),";
      } else if (r < 92) {
        msg += std::to_string(rng() % 5000);
      } else if (r < 96) {
        msg += word(63 + rng() % 2);
      } else if (r < 99) {
        msg += word(8191 + rng() % 2);
      } else {
        msg += n % 400 == 0 ? word((size_t{1} << 20) + 100) : word(200 + rng() % 300);
      }
    }
    if (n % 400 == 0) msg += " " + word((size_t{1} << 20) + 7);  // larger than a block
    tokenize(msg, toks, 256);
    const uint32_t want = reference_drain(ref, leaf, toks);
    ASSERT_EQ(d.add(msg), want) << "message " << n;
    if (want + 1 == ref.size())
      for (const std::string& t : ref[want]) stored += t.size();
    ASSERT_EQ(d.token_count(want), ref[want].size());
    Drain::TokenCursor cursor = d.tokens(want);  // ASSERT_TRUE: no MiB tokens dumped
    for (size_t i = 0; i < ref[want].size(); ++i)
      ASSERT_TRUE(cursor.next() == ref[want][i]) << "message " << n << ", token " << i;
  }
  ASSERT_EQ(d.cluster_count(), ref.size());
  size_t generalised = 0;
  for (uint32_t c = 0; c < ref.size(); ++c) {
    std::string text;
    for (const std::string& t : ref[c]) text += (text.empty() ? "" : " ") + t;
    ASSERT_TRUE(d.template_text(c) == text) << "cluster " << c;
    ASSERT_EQ(d.token_count(c), ref[c].size());
    for (size_t i = 0; i < ref[c].size(); ++i) ASSERT_TRUE(d.token(c, i) == ref[c][i]);
    generalised += d.size(c) > 1;
  }
  EXPECT_GT(ref.size(), 500u);         // many templates: the leaves were indexed
  EXPECT_GT(generalised, 50u);         // and many that absorbed other messages
  EXPECT_GT(stored, size_t{6} << 20);  // many blocks, and templates larger than one
}

class RealLogsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("snail_logs_real_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(RealLogsCli, FlowsTableSaysSampledAndShowsHumanDurations) {
  const auto log = (dir_ / "hdfs.log").string();
  std::ofstream(log) << sampled_hdfs(600, 9);
  testing::Process p({"logs", "flows", log}, dir_ / "out", dir_ / "err");
  ASSERT_EQ(p.wait(), 0) << testing::slurp(dir_ / "err");
  const std::string out = testing::slurp(dir_ / "out");
  EXPECT_NE(out.find("identifiers: blk_... values"), std::string::npos) << out;
  EXPECT_NE(out.find("the log looks sampled"), std::string::npos) << out;
  EXPECT_EQ(out.find(" ms "), std::string::npos) << out;  // no "0.000 ms"
  EXPECT_EQ(out.find("/10.251."), std::string::npos) << out;
}

}  // namespace
}  // namespace snailtrail::logs::test_logs_real
