// Reading logs in chunks (log_set.hpp): the records, templates, kept texts and flows of a
// file read a few bytes at a time equal an oracle built from the whole input by the test
// itself (its own line split, a Drain fed the known messages), and reading a file in one
// chunk or in many gives the same flows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "logs/drain.hpp"
#include "logs/flows.hpp"
#include "logs/log_set.hpp"
#include "logs/synthetic.hpp"

namespace snailtrail::logs::test_logs_stream {
namespace {

// A log4j-thread log written by the test: per line, what it is and (for records) the
// message the reader must find after the header.
struct Written {
  std::string bytes;
  struct Line {
    char kind;  // 'r' record, 'j' joined continuation, 'b' binary, 'e' empty
    std::string header, message;
  };
  std::vector<Line> lines;
};

Written write_log(size_t records, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const char* words[] = {"alpha", "beta", "gamma", "delta", "omega", "sigma"};
  Written w;
  for (size_t i = 0; i < records; ++i) {
    Written::Line l{'r', "", ""};
    l.header = "2015-10-18 18:01:" + std::to_string(10 + i % 50) + ",978 INFO [pool-" +
               std::to_string(pick(4)) + "] org.apache.Task: ";
    switch (pick(4)) {
      case 0:
        l.message = "Task attempt_" + std::to_string(rng()) + " done in " +
                    std::to_string(pick(900)) + " ms";
        break;
      case 1:
        l.message = "Fetching block blk_" + std::to_string(rng()) + " from /10.0.0." +
                    std::to_string(pick(250));
        break;
      case 2:
        l.message =
            std::string(words[pick(6)]) + " " + words[pick(6)] + " " + words[pick(6)] + " salad";
        break;
      default:
        l.message =
            "Registered worker " + std::string(words[pick(6)]) + "-" + std::to_string(pick(99));
        break;
    }
    w.bytes += l.header + l.message + (pick(5) == 0 ? "\r\n" : "\n");  // some CRLF lines
    w.lines.push_back(l);
    if (pick(7) == 0) {  // a stack trace line: joined to the record
      w.bytes += "\tat org.apache.Task.run(Task.java:" + std::to_string(pick(500)) + ")\n";
      w.lines.push_back({'j', "", ""});
    }
    if (pick(29) == 0) w.bytes += "\n", w.lines.push_back({'e', "", ""});
    if (pick(31) == 0)
      w.bytes += std::string("\x01\x02\x03\x04 bin\n"), w.lines.push_back({'b', "", ""});
  }
  const std::string last_header = "2015-10-18 18:02:00,000 INFO [main] org.apache.Task: ";
  w.bytes += last_header + "last line without a newline";
  w.lines.push_back({'r', last_header, "last line without a newline"});
  return w;
}

std::string temp_file(const std::string& bytes, const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("snailtrail_stream_" + std::to_string(getpid()) + "_" + name + ".log");
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

TEST(LogStream, ChunkedReadingEqualsTheWholeInputOracle) {
  const Written w = write_log(3000, 34);
  const std::string path = temp_file(w.bytes, "oracle");
  // The oracle: the records' messages in order, mined by a Drain of their own.
  Drain oracle;
  std::vector<uint32_t> want_cluster, want_line;
  std::vector<const Written::Line*> want;
  for (size_t l = 0; l < w.lines.size(); ++l)
    if (w.lines[l].kind == 'r') {
      want_cluster.push_back(oracle.add(w.lines[l].message));
      want_line.push_back(static_cast<uint32_t>(l + 1));
      want.push_back(&w.lines[l]);
    }
  ASSERT_GT(w.bytes.size(), 100000u);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    for (KeepText keep : {KeepText::whole_lines, KeepText::messages, KeepText::none}) {
      LogOptions o;
      o.read_chunk_bytes = chunk;
      o.keep = keep;
      const LogSet set = read_logs({path}, o);
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " keep " + std::to_string(int(keep)));
      ASSERT_EQ(set.files[0].format, "log4j-thread");
      ASSERT_EQ(set.records.size(), want.size());
      ASSERT_EQ(set.files[0].lines.size(), w.lines.size());
      for (size_t r = 0; r < want.size(); ++r) {
        const LogRecord& rec = set.records[r];
        ASSERT_EQ(rec.line, want_line[r]) << r;
        ASSERT_EQ(rec.cluster, want_cluster[r]) << r;
        if (keep == KeepText::none) {
          ASSERT_TRUE(set.content(r).empty());
        } else {
          ASSERT_EQ(set.content(r), want[r]->message) << r;
          const std::string whole =
              keep == KeepText::whole_lines ? want[r]->header + want[r]->message : want[r]->message;
          ASSERT_EQ(set.whole_line(r), whole) << r;
        }
      }
      for (size_t l = 0; l < w.lines.size(); ++l) {
        const LineKind k = set.files[0].lines[l].kind;
        const char c = w.lines[l].kind;
        ASSERT_EQ(k, c == 'r'   ? LineKind::record
                     : c == 'j' ? LineKind::joined
                     : c == 'b' ? LineKind::binary
                                : LineKind::empty)
            << l + 1;
      }
      ASSERT_EQ(set.drain.cluster_count(), oracle.cluster_count());
      for (uint32_t c = 0; c < oracle.cluster_count(); ++c) {
        ASSERT_EQ(set.drain.template_text(c), oracle.template_text(c));
        ASSERT_EQ(set.drain.size(c), oracle.size(c));
      }
    }
  }
  std::filesystem::remove(path);
}

// Flows of files read in 5-byte chunks equal those of the same files read whole.
TEST(LogStream, FlowsOfChunkedFilesEqualFlowsOfWholeFiles) {
  const SyntheticLog log = generate_log(LogStyle::service, 300, 5);
  std::vector<std::string> paths;
  for (const auto& [name, bytes] : log.files) paths.push_back(temp_file(bytes, name));
  LogOptions tiny;
  tiny.read_chunk_bytes = 5;
  tiny.keep = KeepText::messages;
  const LogSet a = read_logs(paths, tiny);
  const LogSet b = parse_logs(log.files, LogOptions{});
  const FlowSet fa = build_flows(a, FlowOptions{}), fb = build_flows(b, FlowOptions{});
  ASSERT_EQ(fa.flows.size(), 300u);
  ASSERT_EQ(fa.flows.size(), fb.flows.size());
  for (size_t f = 0; f < fa.flows.size(); ++f) {
    EXPECT_EQ(fa.flows[f].id, fb.flows[f].id);
    EXPECT_EQ(fa.flows[f].latency(), fb.flows[f].latency());
    ASSERT_TRUE(std::equal(fa.flows[f].records.begin(), fa.flows[f].records.end(),
                           fb.flows[f].records.begin(), fb.flows[f].records.end()));
  }
  EXPECT_EQ(a.diagnostics, b.diagnostics);
  for (const std::string& p : paths) std::filesystem::remove(p);
}

}  // namespace
}  // namespace snailtrail::logs::test_logs_stream
