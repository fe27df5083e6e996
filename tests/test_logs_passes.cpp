// `logs flows` on regular files in passes (flows.hpp build_flows_rereading, and
// stream_flows, which closes each request after its last record and keeps only sums and
// the slowest): the records keep no text and the identifier census reads the files again.
// The oracle is the one-pass path (build_flows on records that keep their messages):
// every output (table, JSON, JSONL, --by-thread) must be byte-identical, on logs written by the
// test in the shapes that stress grouping: interleaved requests over several files, ids that come
// back late, a request open across the whole file, coarse clocks (ties), sampled logs, and the
// generator's five styles.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "logs/flows.hpp"
#include "logs/log_set.hpp"
#include "logs/synthetic.hpp"
#include "output/logs_writers.hpp"
#include "sanitized.hpp"

namespace snailtrail::logs::test_logs_passes {
namespace {

namespace fs = std::filesystem;

// Files under a fresh temporary directory, removed with it.
struct TempLogs {
  fs::path dir;
  std::vector<std::string> paths;
  explicit TempLogs(const std::string& name) {
    dir =
        fs::temp_directory_path() / ("snailtrail_passes_" + std::to_string(getpid()) + "_" + name);
    fs::create_directories(dir);
  }
  ~TempLogs() { fs::remove_all(dir); }
  void add(const std::string& name, const std::string& bytes) {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    paths.push_back(p.string());
  }
};

// The outputs of `logs flows` streamed (stream_flows) as the command writes them: the
// JSONL from the visitor, the JSON and table from the sums and the `top` kept slowest.
std::string streamed_outputs(const LogSet& set, const LogOptions& read, const FlowOptions& fo,
                             FlowSet* kept_all = nullptr) {
  fmt::memory_buffer out;
  const FlowSet none = stream_flows(set, read, fo, 0, [&](const Flow& f) {
    output::write_flow_json(out, set, f, true);
    out.push_back('\n');
  });
  EXPECT_TRUE(none.flows.empty());
  const FlowSet top10 = stream_flows(set, read, fo, 10);
  EXPECT_LE(top10.flows.size(), 10u);
  FlowSet all = stream_flows(set, read, fo, 1000000);
  EXPECT_EQ(all.flows.size(), all.flow_count);
  output::FlowsView(set, top10).write_json(out, 10);
  output::FlowsView(set, all).write_json(out, 1000000);
  output::FlowsView(set, top10).write_table(out, 10, "");
  output::FlowsView(set, all).write_table(out, 1000000, "");
  if (kept_all) *kept_all = std::move(all);
  return fmt::to_string(out);
}

// The most flows open at once: a flow is open from its first to its last record (in
// record order), brute force over build_flows' flows.
uint64_t most_open_by_brute_force(const FlowSet& flows, size_t records) {
  std::vector<int64_t> delta(records + 1, 0);
  for (const Flow& f : flows.flows) {
    const auto [lo, hi] = std::minmax_element(f.records.begin(), f.records.end());
    ++delta[*lo];
    --delta[*hi + 1];
  }
  int64_t open = 0, most = 0;
  for (int64_t d : delta) most = std::max(most, open += d);
  return static_cast<uint64_t>(most);
}

// The most records held at once by a pass over records that holds each open flow's records
// seen so far: a record is held from its line to its flow's last record (in record
// order), brute force over build_flows' flows.
uint64_t most_held_by_brute_force(const FlowSet& flows, size_t records) {
  std::vector<int64_t> delta(records + 1, 0);
  for (const Flow& f : flows.flows) {
    const uint32_t last = *std::max_element(f.records.begin(), f.records.end());
    for (uint32_t r : f.records) ++delta[r], --delta[last + 1];
  }
  int64_t held = 0, most = 0;
  for (int64_t d : delta) most = std::max(most, held += d);
  return static_cast<uint64_t>(most);
}

// Read as `logs flows` reads regular files: each record's template only (the passes read
// the rest again).
LogOptions templates_only(size_t chunk) {
  LogOptions o;
  o.keep = KeepText::none;
  o.line_kinds = false;
  o.keep_records = false;
  o.keep_clusters = true;
  o.read_chunk_bytes = chunk;
  return o;
}

// Every output of `logs flows` for one flow set, concatenated.
std::string all_outputs(const LogSet& set, const FlowSet& flows, bool jsonl = true) {
  const output::FlowsView view(set, flows);
  fmt::memory_buffer out;
  for (size_t k = 0; jsonl && k < flows.flows.size(); ++k) {
    output::write_flow_json(out, set, flows.flows[k], true);
    out.push_back('\n');
  }
  view.write_json(out, 10);
  view.write_json(out, 1000000);
  view.write_table(out, 10, "");
  view.write_table(out, 1000000, "");
  return fmt::to_string(out);
}

// One streaming of `logs flows` (each pass over `set` as `read` says): the JSONL from the
// visitor, the rest from all flows kept (the first 10 of them are the 10 slowest).
std::string streamed_once(const LogSet& set, const LogOptions& read, const FlowOptions& fo,
                          FlowSet& held) {
  fmt::memory_buffer buf;
  held = stream_flows(set, read, fo, 1000000, [&](const Flow& f) {
    output::write_flow_json(buf, set, f, true);
    buf.push_back('\n');
  });
  return fmt::to_string(buf) + all_outputs(set, held, false);
}

// The records given by packed_records are the kept ones, field by field (extra_lines aside:
// a record not kept counts no joined line).
void expect_packed_equal_kept(const LogSet& packed, const LogSet& kept) {
  size_t n = 0, wrong = 0;
  packed_records(packed, [&](uint32_t r, const LogRecord& got, std::string_view message) {
    ASSERT_LT(r, kept.records.size());
    ASSERT_EQ(r, n);
    ++n;
    const LogRecord& want = kept.records[r];
    wrong += got.file != want.file || got.line != want.line || got.thread != want.thread ||
             got.node != want.node || got.cluster != want.cluster || got.ts != want.ts ||
             got.extra_lines != 0 || !message.empty();
  });
  EXPECT_EQ(n, kept.records.size());
  EXPECT_EQ(wrong, 0u);
}

// The one-pass result and the result in passes, for inferred ids and --by-thread.
void expect_passes_equal_one_pass(const std::vector<std::string>& paths, size_t chunk,
                                  size_t min_flows) {
  for (const bool by_thread : {false, true}) {
    SCOPED_TRACE(by_thread ? "--by-thread" : "inferred ids");
    FlowOptions fo;
    fo.by_thread = by_thread;
    LogOptions kept;
    kept.keep = KeepText::messages;
    kept.line_kinds = false;
    const LogSet one_set = read_logs(paths, kept);
    const FlowSet one = build_flows(one_set, fo);
    LogOptions bare = kept;
    bare.keep = KeepText::none;
    bare.read_chunk_bytes = chunk;
    const LogSet pass_set = read_logs(paths, bare);
    ASSERT_TRUE(pass_set.contents.empty());
    const FlowSet passes = build_flows_rereading(pass_set, bare, fo);
    if (!by_thread) {
      EXPECT_GE(one.flows.size(), min_flows);  // the test is not vacuous
    }
    EXPECT_EQ(passes.id_source, one.id_source);
    const std::string want = all_outputs(one_set, one), got = all_outputs(pass_set, passes);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want);
    // Streamed, from the files read again and from the kept messages.
    FlowSet streamed;
    const std::string from_files = streamed_outputs(pass_set, bare, fo, &streamed);
    const std::string from_kept = streamed_outputs(one_set, kept, fo);
    ASSERT_EQ(from_files.size(), want.size());
    EXPECT_TRUE(from_files == want);
    EXPECT_TRUE(from_kept == want);
    EXPECT_EQ(streamed.most_open, most_open_by_brute_force(one, one_set.records.size()));
    EXPECT_EQ(streamed.total_latency, one.total_latency);
    // Streamed with no record kept (the command on files, inferred ids): every pass reads
    // them again (reads of 7 bytes are tested above: 4 KiB still cut lines, faster).
    // Under the sanitizers once a log (its reads of 7 bytes have the 4 KiB reads below).
    if (by_thread || (testing::kSanitized && chunk < 4096)) continue;
    const LogOptions bare_set = templates_only(std::max<size_t>(chunk, 4096));
    const LogSet no_records = read_logs(paths, bare_set);
    ASSERT_EQ(no_records.records.capacity(), 0u);
    ASSERT_EQ(no_records.record_count, one_set.records.size());
    // One streaming (each pass reads the files again).
    FlowSet held;
    const std::string from_rereads = streamed_once(no_records, bare_set, fo, held);
    ASSERT_EQ(from_rereads.size(), want.size());
    EXPECT_TRUE(from_rereads == want);
    EXPECT_EQ(held.most_open, streamed.most_open);
    EXPECT_EQ(held.most_held, most_held_by_brute_force(one, one_set.records.size()));
    // As the command reads files: the records' header fields packed, the passes over the
    // records read from there (only the census reads the files again). The oracle: the
    // records kept, field by field, and the same outputs.
    LogOptions packing = bare_set;
    packing.pack_records = true;
    const LogSet packed = read_logs(paths, packing);
    ASSERT_EQ(packed.records.capacity(), 0u);
    ASSERT_EQ(packed.packed.size(), one_set.records.size());
    expect_packed_equal_kept(packed, one_set);
    FlowSet from_packed;
    const std::string packed_out = streamed_once(packed, packing, fo, from_packed);
    ASSERT_EQ(packed_out.size(), want.size());
    EXPECT_TRUE(packed_out == want);
    EXPECT_EQ(from_packed.most_held, held.most_held);
  }
}

// PackedRecords gives back what it was given: times of any change (nanoseconds, whole
// milliseconds, backwards, the int64 extremes), lines, threads and nodes up to 2^32 - 1,
// files that change. The oracle is the records themselves.
TEST(LogPasses, PackedRecordsGiveBackTheirRecords) {
  std::mt19937_64 rng(12);
  const int64_t times[] = {0,
                           1,
                           -1,
                           999999,
                           1000000,
                           -1000000,
                           1709290800000000000,
                           INT64_MAX,
                           INT64_MIN,
                           INT64_MAX - 1000000 + 1};
  std::vector<LogRecord> want;
  PackedRecords packed;
  uint32_t file = 0, line = 0;
  const int n = testing::random_inputs(300000, 200000);  // more than one block of 1 MiB
  for (int i = 0; i < n; ++i) {
    if (rng() % 1000 == 0) ++file, line = 0;
    LogRecord r;
    r.file = file;
    r.line = line += 1 + (rng() % 50 == 0 ? static_cast<uint32_t>(rng() % 100000) : 0);
    r.thread = rng() % 100 == 0 ? UINT32_MAX - static_cast<uint32_t>(rng() % 3)
                                : static_cast<uint32_t>(rng() % 16);
    r.node = rng() % 100 == 0 ? static_cast<uint32_t>(rng()) : file;
    const int64_t prev = want.empty() || want.back().file != file ? 0 : want.back().ts;
    // Steps from a time near the int64 extremes wrap, as the packer's differences do
    // (unsigned: a signed overflow would be undefined).
    auto step = [prev](int64_t d) {
      return static_cast<int64_t>(static_cast<uint64_t>(prev) + static_cast<uint64_t>(d));
    };
    switch (rng() % 6) {
      case 0:
        r.ts = times[rng() % std::size(times)];
        break;
      case 1:
        r.ts = step(static_cast<int64_t>(rng() % 1000) * 1000000);
        break;
      case 2:
        r.ts = step(static_cast<int64_t>(rng() % 1000000007));
        break;
      case 3:
        r.ts = step(-static_cast<int64_t>(rng() % 5000000));
        break;
      default:
        r.ts = prev;
        break;
    }
    want.push_back(r);
    packed.add(r);
  }
  ASSERT_EQ(packed.size(), want.size());
  EXPECT_GT(packed.bytes(), size_t{1} << 20);
  size_t k = 0, wrong = 0;
  packed.each([&](uint32_t r, const LogRecord& got) {
    ASSERT_EQ(r, k);
    const LogRecord& w = want[k++];
    wrong += got.file != w.file || got.line != w.line || got.thread != w.thread ||
             got.node != w.node || got.ts != w.ts || got.cluster != 0 || got.extra_lines != 0;
  });
  EXPECT_EQ(k, want.size());
  EXPECT_EQ(wrong, 0u);
  // A log with a millisecond clock, few threads and one node per file: 4 bytes a record.
  PackedRecords small;
  for (uint32_t i = 0; i < 100000; ++i) {
    LogRecord r;
    r.line = i + 1;
    r.thread = i % 16;
    r.ts = 1709290800000000000 + int64_t{i / 3} * 1000000;
    small.add(r);
  }
  EXPECT_LE(small.used(), 4u * 100000 + 16);
}

std::string hex_id(std::mt19937_64& rng) {
  return fmt::format("{:012x}", rng() >> 16);
}

// A service of three nodes (gateway, orders, payments) with `requests` requests, up to
// `open` at once, interleaved. Timestamps in whole seconds if `coarse` (many ties). Some
// requests come back late (their id reused near the end), one is open from the first to
// the last line, and noise lines (no id, stack traces, a binary line) are mixed in.
std::vector<std::string> service_logs(size_t requests, size_t open, bool coarse, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> files(3);
  int64_t ms = 0;
  auto line = [&](size_t node, const std::string& thread, const std::string& msg) {
    ms += static_cast<int64_t>(rng() % 40);
    const int64_t shown = coarse ? ms / 1000 * 1000 : ms;
    files[node] += fmt::format("2024-03-01T12:{:02}:{:02}.{:03}Z INFO [{}] c.e.Svc - {}\n",
                               shown / 60000 % 60, shown / 1000 % 60, shown % 1000, thread, msg);
  };
  struct Open {
    std::string req, order;
    int step = 0;
  };
  const std::string forever = "req-" + hex_id(rng);
  line(0, "main", "Incoming request " + forever + " GET /health from 10.0.0.1");
  std::vector<Open> live;
  std::vector<std::string> finished;
  size_t started = 0;
  while (started < requests || !live.empty()) {
    if (started < requests && (live.size() < open && rng() % 3 != 0)) {
      live.push_back({"req-" + hex_id(rng), "ORD-" + std::to_string(100000 + rng() % 900000), 0});
      ++started;
    }
    if (live.empty()) continue;
    const size_t k = rng() % live.size();
    Open& o = live[k];
    const std::string th = "exec-" + std::to_string(rng() % 6);
    switch (o.step++) {
      case 0:
        line(0, th, "Incoming request " + o.req + " GET /api/orders from 10.1.2.3");
        break;
      case 1:
        line(1, th, "Handling " + o.req + " for customer C" + std::to_string(rng() % 99999));
        break;
      case 2:
        line(1, th, "Order " + o.order + " created for request " + o.req);
        break;
      case 3:
        line(2, th, "Charging order " + o.order + " amount 12.50 EUR");
        break;
      case 4:
        line(2, th,
             "Payment for order " + o.order + " authorized in " + std::to_string(rng() % 900) +
                 " ms");
        break;
      default:
        line(0, th, "Completed " + o.req + " status 200 in " + std::to_string(rng() % 900) + " ms");
        finished.push_back(o.req);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        break;
    }
    if (rng() % 11 == 0)
      line(1, "main", "Cache stats: hits=" + std::to_string(rng() % 100) + " misses=3");
    if (rng() % 17 == 0) files[2] += "\tat com.example.Pay.run(Pay.java:42)\n";
  }
  for (size_t i = 0; i < finished.size(); i += 7)  // ids that come back late
    line(0, "exec-9", "Completed " + finished[i] + " status 500 in 1 ms");
  files[1] += std::string("\x01\x02\x03 bin\n");
  line(0, "main", "Completed " + forever + " status 200 in 1 ms");
  return files;
}

TEST(LogPasses, InterleavedRequestsOverThreeFilesEqualOnePass) {
  for (const bool coarse : {false, true}) {
    SCOPED_TRACE(coarse ? "coarse clock" : "ms clock");
    TempLogs t(coarse ? "service_coarse" : "service");
    const size_t requests = static_cast<size_t>(testing::random_inputs(1500, 500));
    const std::vector<std::string> files = service_logs(requests, 40, coarse, 34);
    t.add("gateway.log", files[0]);
    t.add("orders.log", files[1]);
    t.add("payments.log", files[2]);
    expect_passes_equal_one_pass(t.paths, size_t{1} << 20, requests);
    expect_passes_equal_one_pass(t.paths, 7, requests);  // lines cut across reads
  }
}

TEST(LogPasses, OneFileWithOneRequestOpenThroughoutEqualsOnePass) {
  TempLogs t("one_file");
  const std::vector<std::string> files = service_logs(800, 200, false, 7);
  t.add("all.log", files[0] + files[1] + files[2]);  // times go backwards between parts
  expect_passes_equal_one_pass(t.paths, 4096, 800);
}

// A sampled log: ids rarely repeat, so identifiers are chosen by their shape (blk_).
TEST(LogPasses, SampledLogEqualsOnePass) {
  TempLogs t("sampled");
  std::mt19937_64 rng(5);
  std::string bytes;
  for (int i = 0; i < 3000; ++i) {
    const std::string blk = "blk_" + std::to_string(rng() >> 2);
    bytes += fmt::format("081109 2036{:02} 148 INFO dfs.DataNode: {} {}\n", i % 60,
                         i % 2 ? "Receiving block" : "Deleting block", blk);
  }
  t.add("dn.log", bytes);
  expect_passes_equal_one_pass(t.paths, 1 << 20, 1);
}

TEST(LogPasses, GeneratedStylesEqualOnePass) {
  for (const char* style : {"hdfs", "spark", "hadoop", "syslog", "service"}) {
    SCOPED_TRACE(style);
    TempLogs t(std::string("style_") + style);
    const SyntheticLog log = generate_log(
        parse_log_style(style), static_cast<size_t>(testing::random_inputs(300, 120)), 11);
    for (const auto& [name, bytes] : log.files) t.add(name, bytes);
    expect_passes_equal_one_pass(t.paths, 1 << 20, 1);
  }
}

// Memory follows the open requests: a log of many short requests, a few open at a time
// (no id comes back late), holds a few at once, not the flows.
TEST(LogPasses, StreamedFlowsHoldOnlyTheOpenRequests) {
  std::string log;
  for (int i = 0; i < 4000; ++i) {
    // blocks of 16 lines: 4 requests of 4 lines each, interleaved
    const std::string req = fmt::format("req-{:06x}", 0xa00000 + i / 16 * 4 + i % 4);
    log += fmt::format("2024-03-01T12:00:{:02}.{:03}Z INFO [t{}] c.e.Svc - {} {} step {}\n",
                       i / 1000 % 60, i % 1000, i % 3, i % 16 < 8 ? "Handling" : "Finished", req,
                       i % 16);
  }
  LogOptions o;
  o.keep = KeepText::messages;
  const LogSet set = parse_logs({{"svc.log", log}}, o);
  const FlowSet one = build_flows(set, {});
  const FlowSet streamed = stream_flows(set, o, {}, 10);
  ASSERT_EQ(streamed.flow_count, 1000u);
  EXPECT_EQ(one.flows.size(), 1000u);
  EXPECT_EQ(streamed.most_open, most_open_by_brute_force(one, set.records.size()));
  EXPECT_LE(streamed.most_open, 4u);
  EXPECT_EQ(streamed.record_ids.size(), 40u);  // 10 slowest of 4 records
}

// The flows' outputs that do not print the census's counts (JSON prints its distinct and
// repeating values, which are estimates once the census samples): every flow's JSONL
// line, the table (unless the log is sampled: it says how many values repeat), and the
// grouping's choices.
std::string grouping_outputs(const LogSet& set, const FlowSet& flows) {
  const output::FlowsView view(set, flows);
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{} {} {} {} {}\n", flows.id_source, flows.sampled,
                 flows.id_shape, flows.multi_id_records, flows.records_without_id);
  for (const IdSlot& s : flows.id_slots)
    fmt::format_to(std::back_inserter(out), "slot {} {} {}\n", s.cluster, s.position, s.records);
  for (const Flow& f : flows.flows) {
    output::write_flow_json(out, set, f, true);
    out.push_back('\n');
  }
  if (!flows.sampled) view.write_table(out, 1000000, "");
  return fmt::to_string(out);
}

// The census holds at most FlowOptions::census_cap id-like values: beyond, a sample by
// hash. Its decisions (which slots hold identifiers, whether the log is sampled) and so
// the flows must be the exact census's on the test logs: the oracle is the same reading
// with a cap above the values' count (no sampling, today's exact census), at caps that
// keep about 1 value in 2 and 1 in 8. (At 1 in 64 the spark style's flows differ: a slot
// of few values gets none in the sample; docs/LOGS.md "Speed", seventh round.)
TEST(LogPasses, SampledCensusDecidesAsTheExactOne) {
  std::vector<std::vector<std::pair<std::string, std::string>>> logs;
  for (const bool coarse : {false, true}) {
    const std::vector<std::string> f =
        service_logs(static_cast<size_t>(testing::random_inputs(1500, 400)), 40, coarse, 34);
    logs.push_back({{"gateway.log", f[0]}, {"orders.log", f[1]}, {"payments.log", f[2]}});
  }
  std::mt19937_64 rng(5);
  std::string sampled;  // HDFS as loghub samples it: blocks rarely repeat
  for (int i = 0; i < 3000; ++i)
    sampled += fmt::format("081109 2036{:02} 148 INFO dfs.DataNode: {} {}\n", i % 60,
                           i % 2 ? "Receiving block" : "Deleting block",
                           "blk_" + std::to_string(rng() >> 2));
  logs.push_back({{"dn.log", sampled}});
  for (const char* style : {"hdfs", "spark", "hadoop", "syslog", "service"}) {
    const SyntheticLog log = generate_log(
        parse_log_style(style), static_cast<size_t>(testing::random_inputs(1000, 300)), 11);
    logs.push_back(log.files);
  }
  size_t sampling = 0;
  for (size_t i = 0; i < logs.size(); ++i) {
    SCOPED_TRACE(i);
    LogOptions o;
    o.keep = KeepText::messages;
    o.line_kinds = false;
    const LogSet set = parse_logs(logs[i], o);
    FlowOptions exact;
    exact.census_cap = size_t{1} << 30;
    const FlowSet want = build_flows(set, exact);
    EXPECT_EQ(want.census_held, want.id_values);  // every value held: exact
    const std::string want_out = grouping_outputs(set, want);
    for (const size_t cap : {want.census_held / 2, want.census_held / 8}) {
      if (cap < 16) continue;
      SCOPED_TRACE(cap);
      FlowOptions fo;
      fo.census_cap = cap;
      const FlowSet got = build_flows(set, fo);
      EXPECT_LE(got.census_held, cap);
      sampling += got.census_held < want.census_held;
      ASSERT_EQ(got.id_slots.size(), want.id_slots.size());
      const std::string got_out = grouping_outputs(set, got);
      ASSERT_EQ(got_out.size(), want_out.size());
      EXPECT_TRUE(got_out == want_out);
      // The streamed path (files' messages kept) gives the same.
      EXPECT_EQ(stream_flows(set, o, fo, 10).flow_count, want.flows.size());
    }
  }
  EXPECT_GE(sampling, 10u);  // the census did sample (the test is not vacuous)
}

// A log of 4-line requests, 4 open at once (each of 16 lines names the 4 requests
// 0xa00000 + i / 16 * 4 + i % 4), a fresh id each; each of the first 8 lines of 16 also has
// a fresh id-like token that is no identifier.
std::string four_line_requests(int lines) {
  std::string log;
  for (int i = 0; i < lines; ++i) {
    const std::string req = fmt::format("req-{:06x}", 0xa00000 + i / 16 * 4 + i % 4);
    log += fmt::format("2024-03-01T12:{:02}:{:02}.{:03}Z INFO [t{}] c.e.Svc - {}\n", i / 60000 % 60,
                       i / 1000 % 60, i % 1000, i % 3,
                       i % 16 < 8 ? fmt::format("Handling {} token tk{:08}", req, i)
                                  : fmt::format("Finished {} step {}", req, i % 16));
  }
  return log;
}

// What `logs flows` holds besides the records and templates stays bounded as lines grow
// 10 times on a log whose requests close (4 lines each, 4 open at once, a fresh id each,
// and a fresh id-like token on every line that is no identifier): the census's values (at
// most its cap) and the open requests. The outputs are the exact census's, byte for byte.
TEST(LogPasses, CensusAndOpenRequestsStayBoundedAsLinesGrow) {
  const int n = testing::random_inputs(4000, 1600);
  for (const int lines : {n, 10 * n}) {
    SCOPED_TRACE(lines);
    const std::string log = four_line_requests(lines);
    LogOptions o;
    o.keep = KeepText::messages;
    o.line_kinds = false;
    const LogSet set = parse_logs({{"svc.log", log}}, o);
    FlowOptions exact;
    exact.census_cap = size_t{1} << 30;
    const FlowSet want = build_flows(set, exact);
    ASSERT_EQ(want.flows.size(), static_cast<size_t>(lines / 4));
    EXPECT_EQ(want.census_held, static_cast<size_t>(lines / 4 + lines / 2));  // ids, tokens
    FlowOptions fo;
    fo.census_cap = 256;
    const FlowSet got = build_flows(set, fo);
    EXPECT_LE(got.census_held, 256u);
    EXPECT_TRUE(grouping_outputs(set, got) == grouping_outputs(set, want));
    const FlowSet streamed = stream_flows(set, o, fo, 10);
    EXPECT_LE(streamed.census_held, 256u);
    EXPECT_EQ(streamed.flow_count, want.flows.size());
    EXPECT_EQ(streamed.most_open, most_open_by_brute_force(want, set.records.size()));
    EXPECT_LE(streamed.most_open, 4u);
  }
}

// A hub (a value on more than 64 records, here a job id in the slots of request ids)
// whose records all come before the census starts sampling must still be a hub: the
// sampling census feeds its sketch only from then on, first with the exact counts it held
// (a sketch fed from then on only would miss the job's 200 records and join its 100
// requests into one). The oracle is the exact census: the same flows and table.
TEST(LogPasses, AHubSeenBeforeSamplingStaysAHub) {
  std::string log;
  for (int i = 0; i < 4000; ++i) {
    const int r = i / 4;
    const std::string req = fmt::format("req-{:06x}", r);
    const std::string x = r < 200 && r % 2 == 0 ? "job_000042" : req;
    const char* what[] = {"Handling {} token tk{:08}", "Step {} token tk{:08}", "Completed {}",
                          "Finished {}"};
    log += fmt::format("2024-03-01T12:{:02}:{:02}.{:03}Z INFO [t1] c.e.Svc - ", i / 60000 % 60,
                       i / 1000 % 60, i % 1000);
    log += i % 4 < 2 ? fmt::format(fmt::runtime(what[i % 4]), req, i)
                     : fmt::format(fmt::runtime(what[i % 4]), x);
    log += '\n';
  }
  LogOptions o;
  o.keep = KeepText::messages;
  o.line_kinds = false;
  const LogSet set = parse_logs({{"svc.log", log}}, o);
  FlowOptions exact;
  exact.census_cap = size_t{1} << 30;
  const FlowSet want = build_flows(set, exact);
  EXPECT_EQ(want.flows.size(), 1000u);
  EXPECT_EQ(want.records_without_id, 200u);  // the job's lines: a hub, no identifier
  FlowOptions fo;
  fo.census_cap = 1000;  // sampling from about the 330th request on
  const FlowSet got = build_flows(set, fo);
  EXPECT_LE(got.census_held, 1000u);
  EXPECT_LT(got.census_held, want.census_held);
  EXPECT_TRUE(grouping_outputs(set, got) == grouping_outputs(set, want));
}

// `logs flows` on files keeps no record: each pass reads the files again and holds the
// open requests' records only, so what is held besides the templates and the grouping (4
// bytes a record each: a record's template and its request) stays bounded as lines grow
// 10 times on a log whose requests close (4 lines each, 4 open at once). The oracle is
// build_flows on the records kept: every output byte for byte, and the records held
// against a brute force over its flows.
TEST(LogPasses, FlowsOnFilesHoldNoRecordsAsLinesGrow) {
  const int n = testing::random_inputs(4000, 1600);
  for (const int lines : {n, 10 * n}) {
    SCOPED_TRACE(lines);
    const std::string log = four_line_requests(lines);
    TempLogs t("no_records_" + std::to_string(lines));
    t.add("svc.log", log);
    LogOptions kept;
    kept.keep = KeepText::messages;
    kept.line_kinds = false;
    const LogSet one_set = read_logs(t.paths, kept);
    const FlowSet one = build_flows(one_set, {});
    ASSERT_EQ(one.flows.size(), static_cast<size_t>(lines / 4));
    const LogOptions o = templates_only(1 << 16);
    const LogSet set = read_logs(t.paths, o);
    EXPECT_EQ(set.records.capacity(), 0u);
    EXPECT_EQ(set.contents.capacity(), 0u);
    EXPECT_EQ(set.clusters.size(), static_cast<size_t>(lines));
    FlowSet all;
    EXPECT_TRUE(streamed_outputs(set, o, {}, &all) == all_outputs(one_set, one));
    const FlowSet top = stream_flows(set, o, {}, 10);
    EXPECT_EQ(top.flow_count, one.flows.size());
    EXPECT_EQ(top.most_open, most_open_by_brute_force(one, one_set.records.size()));
    EXPECT_LE(top.most_open, 4u);
    EXPECT_EQ(top.most_held, most_held_by_brute_force(one, one_set.records.size()));
    EXPECT_LE(top.most_held, 16u);    // 4 open requests of at most 4 records
    EXPECT_EQ(top.held.size(), 40u);  // the 10 slowest, 4 records each
    // As the command reads files: the header fields packed (a millisecond clock, 3
    // threads: 4 bytes a record, with the template's 4), the same outputs and holds.
    LogOptions packing = o;
    packing.pack_records = true;
    const LogSet packed = read_logs(t.paths, packing);
    EXPECT_EQ(packed.records.capacity(), 0u);
    EXPECT_LE(packed.packed.used(), 4u * static_cast<size_t>(lines) + 16);
    expect_packed_equal_kept(packed, one_set);
    EXPECT_TRUE(streamed_outputs(packed, packing, {}) == all_outputs(one_set, one));
    const FlowSet packed_top = stream_flows(packed, packing, {}, 10);
    EXPECT_EQ(packed_top.most_held, top.most_held);
    EXPECT_EQ(packed_top.most_open, top.most_open);
  }
}

// `logs templates` (the table) keeps no record: the table needs per-template counts
// only, so what is held follows templates, not lines. The oracle is the same reading
// with every record kept: byte-identical tables, at N and 10 N requests, and no record
// held at either size while the templates stay as many.
TEST(LogPasses, TemplatesTableKeepsNoRecords) {
  const size_t n = static_cast<size_t>(testing::random_inputs(300, 60));
  size_t templates_at_n = 0;
  for (const size_t requests : {n, 10 * n}) {
    SCOPED_TRACE(requests);
    TempLogs t("templates_" + std::to_string(requests));
    const std::vector<std::string> files = service_logs(requests, 20, false, 21);
    t.add("gateway.log", files[0]);
    t.add("orders.log", files[1]);
    t.add("payments.log", files[2]);
    const LogSet kept = read_logs(t.paths, {});
    LogOptions o;
    o.keep = KeepText::none;
    o.line_kinds = false;
    o.keep_records = false;
    o.read_chunk_bytes = 4096;  // lines cut across reads
    const LogSet counted = read_logs(t.paths, o);
    fmt::memory_buffer want, got;
    output::write_templates_table(want, kept);
    output::write_templates_table(got, counted);
    ASSERT_GT(kept.records.size(), requests * 6);
    EXPECT_EQ(std::string(got.data(), got.size()), std::string(want.data(), want.size()));
    EXPECT_EQ(counted.record_count, kept.records.size());
    EXPECT_EQ(counted.records.capacity(), 0u);
    EXPECT_EQ(counted.contents.capacity(), 0u);
    for (const LogFile& f : counted.files) EXPECT_EQ(f.lines.capacity(), 0u);
    if (requests == n) templates_at_n = counted.drain.cluster_count();
    EXPECT_EQ(counted.drain.cluster_count(), templates_at_n);
  }
  LogOptions bad;
  bad.keep_records = false;  // kept texts and line kinds refer to records
  EXPECT_THROW(parse_logs({{"a.log", "x\n"}}, bad), std::logic_error);
}

// -f json written in pieces: the pieces make the one-buffer document, and the buffer
// never holds the whole template list.
TEST(LogPasses, JsonWrittenInPiecesEqualsOneBuffer) {
  TempLogs t("json_pieces");
  const SyntheticLog log = generate_log(parse_log_style("service"), 3000, 4);
  for (const auto& [name, bytes] : log.files) t.add(name, bytes);
  LogOptions o;
  o.keep = KeepText::messages;
  const LogSet set = read_logs(t.paths, o);
  const FlowSet flows = build_flows(set, {});
  const output::FlowsView view(set, flows);
  fmt::memory_buffer whole, buf;
  view.write_json(whole, 1000);
  std::string pieces;
  size_t most = 0, calls = 0;
  view.write_json(buf, 1000, [&] {
    most = std::max(most, buf.size());
    ++calls;
    if (buf.size() > 4096) pieces.append(buf.data(), buf.size()), buf.clear();
  });
  pieces.append(buf.data(), buf.size());
  EXPECT_TRUE(pieces == fmt::to_string(whole));
  EXPECT_GT(whole.size(), 100000u);
  EXPECT_GT(calls, flows.edges.size() + set.drain.cluster_count());
  EXPECT_LT(most, whole.size() / 4);
}

// A file that changes between the passes never gives silently wrong flows.
TEST(LogPasses, AFileChangedBetweenPassesIsAnError) {
  TempLogs t("changed");
  const std::vector<std::string> files = service_logs(50, 5, false, 3);
  t.add("a.log", files[0]);
  LogOptions o;
  o.keep = KeepText::none;
  const LogSet set = read_logs(t.paths, o);
  std::ofstream(t.paths[0], std::ios::app) << "2024-03-01T13:00:00.000Z INFO [x] c.e.Svc - late\n";
  EXPECT_THROW(build_flows_rereading(set, o, {}), std::runtime_error);
  std::ofstream(t.paths[0], std::ios::trunc) << files[1];
  EXPECT_THROW(build_flows_rereading(set, o, {}), std::runtime_error);
  fs::remove(t.paths[0]);
  EXPECT_THROW(build_flows_rereading(set, o, {}), std::runtime_error);
  // No record kept: each file's bytes and count of records are checked.
  t.add("b.log", files[0]);
  const LogOptions bare = templates_only(1 << 20);
  const LogSet no_records = read_logs({t.paths[1]}, bare);
  EXPECT_NO_THROW(stream_flows(no_records, bare, {}, 10));
  std::string same_size = files[0];  // a record joined to the one before: one record less
  same_size[same_size.find("\n2024") + 1] = ' ';
  std::ofstream(t.paths[1], std::ios::trunc) << same_size;
  EXPECT_THROW(stream_flows(no_records, bare, {}, 10), std::runtime_error);
}

// What a shell command printed (stdout only).
std::string shell_output(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// The command takes passes on a regular file and one pass on a pipe: same output.
TEST(LogPassesCli, AFileAndThePipeOfItGiveTheSameFlows) {
  TempLogs t("cli");
  const std::vector<std::string> files = service_logs(400, 30, true, 9);
  t.add("stdin.log", files[0] + files[1] + files[2]);  // the node of /dev/stdin too
  const std::string bin = SNAILTRAIL_BINARY, path = t.paths[0];
  for (const char* format : {"table", "json", "jsonl"}) {
    SCOPED_TRACE(format);
    const std::string args = std::string(" logs flows --format ") + format;
    const std::string from_file = shell_output(bin + args + " " + path);
    std::string from_pipe = shell_output("cat " + path + " | " + bin + args + " /dev/stdin");
    for (size_t at; (at = from_pipe.find("/dev/stdin")) != std::string::npos;)
      from_pipe.replace(at, 10, path);
    ASSERT_GT(from_file.size(), 1000u);
    EXPECT_TRUE(from_file == from_pipe);
  }
}

}  // namespace
}  // namespace snailtrail::logs::test_logs_passes
